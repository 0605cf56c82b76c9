// Counts the ATen operators dispatched while it is alive, through LibTorch's
// RecordFunction callbacks (what the profiler itself hooks): on the CPU a proxy,
// this machine can measure, for the kernels a CUDA step launches. One counter at
// a time per process.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace egm {

struct OpCounts {
  int64_t dispatched = 0;  // every aten:: call the dispatcher recorded, nested ones included
  int64_t top_level = 0;   // calls made by egm or autograd, not from inside another op
  // Calls that do work and call no op that does (views, allocations and metadata such as
  // view, permute, empty, detach do none): the ones a GPU runs as kernels (or copies).
  int64_t kernels = 0;
  std::map<std::string, int64_t> kernels_by_name;
  std::map<std::string, int64_t> dispatched_by_name;
  // The `n` most frequent kernel ops, "name count" each.
  std::vector<std::string> top_kernels(size_t n) const;
};

class OpCounter {
 public:
  OpCounter();   // starts counting (throws if another counter is alive)
  ~OpCounter();  // stops
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  OpCounts counts() const;  // what was counted so far
};

}  // namespace egm
