// Times training steps of one variant at one preset, side by side with the
// machine's measured matrix-product rate, so model FLOP utilisation (MFU) is
// a ratio measured in the same process on the same threads.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"
#include "data/corpus.h"

namespace egm {

struct StepBenchmark {
  std::string variant, preset;
  int threads = 1;
  int64_t steps = 0;
  double ms_per_step = 0.0;
  double ms_per_step_min = 0.0;
  double tokens_per_s = 0.0;
  int64_t parameters = 0;
  double model_flops_per_step = 0.0;   // 6 N + attention (forward + backward)
  double achieved_gflops = 0.0;
  double matmul_gflops = 0.0;          // measured sgemm rate, same threads
  double mfu = 0.0;                    // achieved / matmul
  double peak_rss_mb = 0.0;            // VmHWM after the timed steps
  double rss_growth_mb = 0.0;          // RSS after timed steps - after warm-up
  // VmHWM after timed steps - after warm-up: what a leak would raise. The RSS difference above
  // also moves with what the allocator happens to hold at the two instants (glibc returns
  // large freed blocks to the system, or keeps them), so it can be positive without a leak.
  double peak_rss_growth_mb = 0.0;
  std::string blas_core;               // OpenBLAS kernel family ("" if not OpenBLAS)
};

// profile_path: when set, one more step after the timed ones runs under the
// autograd profiler and its per-op trace (Chrome trace JSON) is written there.
StepBenchmark benchmark_steps(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus,
                              int64_t warmup_steps, int64_t timed_steps, const std::string& profile_path = {});

// The sgemm rate (GFLOP/s) of [n, n] x [n, n] products on the current threads.
double measure_matmul_gflops(int64_t n = 512, double seconds = 1.0);

// Model FLOPs of one training step (forward + backward), the usual estimate:
// 6 * (non-embedding parameters) per token + 12 * layers * T * d per token for
// the attention products.
double training_flops_per_step(const RunConfig& config, int64_t parameters);

}  // namespace egm
