// CudaGraphStep: the warm-up runs on a side stream, one capture there, then
// one replay per training step.
#include "train/cuda_graph.h"

#ifdef EGM_TORCH_HAS_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "util/error.h"

namespace egm {

#ifdef EGM_TORCH_HAS_CUDA
struct CudaGraphStep::Impl {
  at::cuda::CUDAGraph graph;
  // A side stream: capture is not allowed on the legacy default stream.
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
};

bool cuda_graphs_built() { return true; }

CudaGraphStep::CudaGraphStep() : impl_(std::make_unique<Impl>()) {}
CudaGraphStep::~CudaGraphStep() = default;

void CudaGraphStep::run_on_side_stream(const std::function<void()>& body) {
  c10::cuda::device_synchronize();  // the side stream sees what the current stream wrote (the batch)
  {
    c10::cuda::CUDAStreamGuard guard(impl_->side);
    body();
  }
  c10::cuda::device_synchronize();
}

void CudaGraphStep::capture(const std::function<void()>& body) {
  c10::cuda::device_synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(impl_->side);
    // Autocast's cache of cast weights would be freed at the end of the autocast
    // region, under the graph's feet: off while capturing.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    // From here until capture_end no kernel runs: they are recorded, with their memory from the graph's private pool.
    impl_->graph.capture_begin();
    body();
    impl_->graph.capture_end();
    at::autocast::set_autocast_cache_enabled(cache);
  }
  c10::cuda::device_synchronize();
  captured_ = true;
  impl_->graph.replay();  // the captured step's own kernels
}

// Replays the recorded kernels on the same addresses: inputs must be copied into the captured tensors first.
void CudaGraphStep::replay() { impl_->graph.replay(); }
#else
struct CudaGraphStep::Impl {};

bool cuda_graphs_built() { return false; }

// A CPU-only build refuses at construction, so no training run starts with a flag it cannot honour.
CudaGraphStep::CudaGraphStep() {
  EGM_THROW(ConfigError, "train.cuda_graphs: this egm is built against a LibTorch without CUDA");
}
CudaGraphStep::~CudaGraphStep() = default;
void CudaGraphStep::run_on_side_stream(const std::function<void()>&) {}
void CudaGraphStep::capture(const std::function<void()>&) {}
void CudaGraphStep::replay() {}
#endif

}  // namespace egm
