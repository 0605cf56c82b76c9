// One CUDA graph of a training step (train.cuda_graphs): run eagerly on a side
// stream while warming up, captured once there (the capture launches nothing),
// then replayed, each replay one launch for the whole step. Needs a CUDA
// LibTorch (built with c10_cuda); elsewhere every call throws.
#pragma once

#include <functional>
#include <memory>

namespace egm {

// Whether this build can capture CUDA graphs.
bool cuda_graphs_built();

class CudaGraphStep {
 public:
  CudaGraphStep();
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  // Runs `body` eagerly on the side stream the graph is captured on (so what it
  // sets up on first use, cuBLAS workspaces, autograd's streams, exists before
  // the capture), then waits for it.
  void run_on_side_stream(const std::function<void()>& body);
  // Captures `body` on the side stream (nothing runs), then replays it once.
  void capture(const std::function<void()>& body);
  void replay();
  bool captured() const { return captured_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool captured_ = false;
};

}  // namespace egm
