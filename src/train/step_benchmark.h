// Times training steps of one variant at one preset, side by side with the
// machine's measured matrix-product rate, so model FLOP utilisation (MFU) is
// a ratio measured in the same process on the same threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "config/run_config.h"
#include "data/corpus.h"
#include "train/memory_estimate.h"
#include "train/op_counter.h"

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
  double matmul_gflops = 0.0;          // measured matrix-product rate: sgemm on the same CPU threads;
                                       // on CUDA the dense bf16 rate of the same GPU
  double mfu = 0.0;                    // achieved / matmul
  std::string precision = "fp32";      // train.precision of the timed steps
  double peak_gpu_mb = 0.0;            // CUDA: peak bytes allocated during the timed steps (0 on CPU)
  double gpu_total_mb = 0.0;           // CUDA: the device's memory
  double peak_rss_mb = 0.0;            // VmHWM after the timed steps
  double rss_growth_mb = 0.0;          // RSS after timed steps - after warm-up
  // VmHWM after timed steps - after warm-up: what a leak would raise. The RSS difference above
  // also moves with what the allocator happens to hold at the two instants (glibc returns
  // large freed blocks to the system, or keeps them), so it can be positive without a leak.
  double peak_rss_growth_mb = 0.0;
  std::string blas_core;               // OpenBLAS kernel family ("" if not OpenBLAS)
  // The config's memory estimate (train/memory_estimate.h) for the device it ran on:
  // on the CPU with the RSS the process had before the model as its runtime
  // term, to set beside peak_rss_mb; on CUDA without, to set beside peak_gpu_mb.
  MemoryEstimate estimate;
  // count_ops: the ATen operators of one more step after the timed ones (op_counter.h),
  // with the paths the step ran on (model.attention_path, train.optimizer_path resolved).
  std::optional<OpCounts> ops;
  std::string attention_path, optimizer_path;
  // The SDPA backends the attention layers ran the timed steps on (flash, efficient, cudnn,
  // math; model.attention_path sdpa, egm's CUDA default) and those that refused the model's
  // calls at run time (egm fell back, model/sdpa_backend.h); empty on the other paths.
  std::vector<std::string> sdpa_backends, sdpa_refused;
  bool matmul_measured = true;         // false: matmul_gflops was given (egm bench --matmul-gflops)
};

// profile_path: when set, one more step after the timed ones runs under the
// autograd profiler and its per-op trace (Chrome trace JSON) is written there.
// matmul_gflops: when given, MFU is taken against this rate and the one-second
// matrix-product loop is skipped (concurrent runs on one GPU would each time the
// others' steps with it; the device check measures the rate once, alone).
StepBenchmark benchmark_steps(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus,
                              int64_t warmup_steps, int64_t timed_steps, const std::string& profile_path = {},
                              bool count_ops = false, std::optional<double> matmul_gflops = std::nullopt);

// The sgemm rate (GFLOP/s) of [n, n] x [n, n] products on the current threads.
double measure_matmul_gflops(int64_t n = 512, double seconds = 1.0);
// The dense matrix-product rate (GFLOP/s) of `device` (CUDA) in `dtype`, [n, n] x [n, n].
double measure_device_matmul_gflops(const c10::Device& device, c10::ScalarType dtype, int64_t n = 8192,
                                    double seconds = 1.0);

// Model FLOPs of one training step (forward + backward), the usual estimate:
// 6 * (non-embedding parameters) per token + 12 * layers * T * d per token for
// the attention products.
double training_flops_per_step(const RunConfig& config, int64_t parameters);

}  // namespace egm
