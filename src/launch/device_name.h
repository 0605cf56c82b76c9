// Device names as users write them (--device, a spec's "device"): cpu, cuda or
// cuda:N. Parsed without LibTorch, so the coordinator and the front doors can
// refuse a bad one before anything starts.
#pragma once

#include <string>

namespace egm::launch {

struct DeviceName {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = -1;  // cuda:N; -1 for "cuda" (dealt out per worker) and for cpu

  bool is_cuda() const { return kind == Kind::cuda; }
  std::string str() const;  // "cpu", "cuda", "cuda:1"
};

// ConfigError for anything else ("tpu", "cuda:x", "cuda:-1", "CPU"), naming `what`
// (the flag or field; empty: not named) and the accepted forms.
DeviceName parse_device_name(const std::string& text, const std::string& what = "--device");

// True when this egm was compiled against a LibTorch with CUDA (torch_cuda).
bool built_with_cuda();

// ConfigError unless `device` can run on this build: CUDA asked of a CPU-only
// build names the LibTorch to build against instead.
void require_buildable(const DeviceName& device);

}  // namespace egm::launch
