// The ranks that train one run together (data parallelism). The model stays
// single-device; the trainer only calls this small interface after backward,
// so which backend does the work (none, MPI on CPU, NCCL on GPU) is invisible
// to it. Implementations: LocalCommunicator (1 rank, here), MPI and NCCL ones
// (see mpi_communicator.h / nccl_communicator.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "run/device.h"

namespace egm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Backend backend() const = 0;

  // Replaces each tensor by its mean over the ranks (in place).
  virtual void allreduce_mean(std::vector<at::Tensor>& tensors) = 0;
  // Copies root's tensor into every rank's (in place).
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;
};

// One rank: every collective is the identity.
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Backend backend() const override { return Backend::none; }
  void allreduce_mean(std::vector<at::Tensor>&) override {}
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
};

}  // namespace egm
