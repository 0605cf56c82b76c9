// `egm bench`'s measurement: timed steps after a warm-up, the sgemm rate on the
// same threads, the FLOPs a step needs, MFU and peak memory from /proc.
#include "train/step_benchmark.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>

#include <torch/csrc/autograd/profiler_kineto.h>

#include "model/kernels/cpu_blas.h"
#include "train/cuda_memory.h"
#include "train/metrics_sink.h"
#include "train/trainer.h"
#include "util/error.h"

namespace egm {
namespace {

using Clock = std::chrono::steady_clock;

double proc_status_mb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::string(field).size())) / 1024.0;  // kB
  }
  return 0.0;
}

}  // namespace

double measure_matmul_gflops(int64_t n, double seconds) {
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n}), c = torch::empty({n, n});
  // mm_out into a preallocated c: the timing measures the multiply, not allocation.
  torch::mm_out(c, a, b);  // warm-up
  int64_t reps = 0;
  const auto t0 = Clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    torch::mm_out(c, a, b);
    ++reps;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return 2.0 * static_cast<double>(n * n * n) * static_cast<double>(reps) / elapsed / 1e9;
}

double measure_device_matmul_gflops(const torch::Device& device, torch::ScalarType dtype, int64_t n,
                                    double seconds) {
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  torch::Tensor a = torch::randn({n, n}, options), b = torch::randn({n, n}, options), c = torch::empty({n, n}, options);
  for (int i = 0; i < 3; ++i) torch::mm_out(c, a, b);  // warm-up (clocks up, cuBLAS heuristics)
  c.sum().item<double>();                                 // waits for the GPU
  int64_t reps = 0;
  const auto t0 = Clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    // Ten launches per host sync: the sync's latency is spread over them.
    for (int i = 0; i < 10; ++i) torch::mm_out(c, a, b);
    reps += 10;
    c.sum().item<double>();
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return 2.0 * static_cast<double>(n * n * n) * static_cast<double>(reps) / elapsed / 1e9;
}

double training_flops_per_step(const RunConfig& c, int64_t parameters) {
  const double d = static_cast<double>(c.model.d_model), T = static_cast<double>(c.model.block_size);
  const double L = static_cast<double>(c.model.n_layer), V = static_cast<double>(c.model.vocab_size);
  const double tokens = static_cast<double>(c.train.batch_size) * T;
  // Non-embedding parameters, plus the tied LM head's V*d product that does run.
  const double dense = static_cast<double>(parameters) - V * d - T * d + V * d;
  // 6 FLOPs per parameter and token (2 forward, 4 backward), plus the attention scores and their
  // backward, 12 L T d per token (the usual transformer estimate, as in the PaLM paper's MFU).
  return tokens * (6.0 * dense + 12.0 * L * T * d);
}

StepBenchmark benchmark_steps(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus,
                              int64_t warmup_steps, int64_t timed_steps, const std::string& profile_path,
                              bool count_ops, std::optional<double> matmul_gflops) {
  // The median of no timed step was a read past an empty vector (egm bench --timed-steps 0: SIGSEGV).
  EGM_REQUIRE(timed_steps >= 1 && warmup_steps >= 0, ConfigError,
              "a benchmark needs at least 1 timed step and no negative warm-up (got {} timed, {} warm-up)", timed_steps,
              warmup_steps);
  MemorySink sink;
  RuntimeOptions rt = runtime;
  rt.out_dir.clear();  // benchmarks never checkpoint
  // The peak-RSS counter starts again here (Linux: "5" > /proc/self/clear_refs), so
  // peak_rss_mb is this benchmark's, not an earlier one's in the same process.
  std::ofstream("/proc/self/clear_refs") << "5";
  const double rss_before_model = proc_status_mb("VmRSS:");
  Trainer trainer(config, rt, corpus, sink);
  // The warm-up takes the first steps' one-time costs (allocations, thread pools, cuBLAS plans) out of the timing.
  for (int64_t i = 0; i < warmup_steps; ++i) trainer.train_step().item<double>();
  const int gpu = trainer.device().is_cuda() ? std::max<int>(0, trainer.device().index()) : -1;
  if (gpu >= 0) reset_peak_cuda_memory(gpu);
  const double rss_after_warmup = proc_status_mb("VmRSS:"), peak_after_warmup = proc_status_mb("VmHWM:");

  std::vector<double> ms;
  for (int64_t i = 0; i < timed_steps; ++i) {
    const auto t0 = Clock::now();
    trainer.train_step().item<double>();  // .item() waits for the step (CUDA too)
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  StepBenchmark b;
  b.variant = config.model.variant;
  b.preset = config.preset;
  b.threads = torch::get_num_threads();
  b.steps = timed_steps;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  b.ms_per_step = sorted[sorted.size() / 2];  // median: robust to a noisy machine
  b.ms_per_step_min = sorted.front();
  const double tokens = static_cast<double>(config.train.batch_size * config.model.block_size);
  b.tokens_per_s = tokens / (b.ms_per_step / 1e3);
  b.parameters = trainer.model().num_parameters();
  b.model_flops_per_step = training_flops_per_step(config, b.parameters);
  b.achieved_gflops = b.model_flops_per_step / (b.ms_per_step / 1e3) / 1e9;
  b.peak_rss_mb = proc_status_mb("VmHWM:");
  b.rss_growth_mb = proc_status_mb("VmRSS:") - rss_after_warmup;
  b.peak_rss_growth_mb = b.peak_rss_mb - peak_after_warmup;
  b.blas_core = blas_core_name();
  // After the measurements, so the profiler's own memory and time stay out of them.
  // Kineto (the profiler torch.profiler uses): the CPU ops and, on CUDA, every
  // kernel with its GPU time, so the trace gives kernels per step and how busy
  // the GPU was (tests/bench/profile_summary.py).
  if (!profile_path.empty()) {
    using torch::profiler::impl::ActivityType;
    std::set<ActivityType> activities{ActivityType::CPU};
    if (gpu >= 0) activities.insert(ActivityType::CUDA);
    const torch::profiler::impl::ProfilerConfig profiler(torch::profiler::impl::ProfilerState::KINETO);
    torch::autograd::profiler::prepareProfiler(profiler, activities);
    torch::autograd::profiler::enableProfiler(profiler, activities);
    trainer.train_step().item<double>();
    torch::autograd::profiler::disableProfiler()->save(profile_path);
  }
  if (count_ops) {
    OpCounter counter;
    trainer.train_step().item<double>();
    b.ops = counter.counts();
  }
  b.attention_path = resolved_attention_path(config.model, gpu >= 0);
  b.optimizer_path = resolved_optimizer_path(config.train, gpu >= 0);
  b.precision = config.train.precision;
  const GPTImpl::SdpaUse sdpa = trainer.model().sdpa_use();
  b.sdpa_backends = sdpa.backends;
  b.sdpa_refused = sdpa.refused;
  b.estimate = estimate_training_memory(config, b.parameters, /*cuda=*/gpu >= 0, gpu >= 0 ? 0.0 : rss_before_model);
  if (gpu >= 0) {
    b.peak_gpu_mb = peak_cuda_memory_mb(gpu).value_or(0.0);
    b.gpu_total_mb = cuda_device_memory_mb(gpu).value_or(0.0);
  }
  b.matmul_measured = !matmul_gflops.has_value();
  if (matmul_gflops) {
    b.matmul_gflops = *matmul_gflops;
  } else if (gpu >= 0) {
    // MFU against the dense bf16 rate, the GPU's usable peak, whatever the run's precision.
    b.matmul_gflops = measure_device_matmul_gflops(trainer.device(), torch::kBFloat16);
  } else {
    b.matmul_gflops = measure_matmul_gflops();
  }
  b.mfu = b.achieved_gflops / b.matmul_gflops;
  return b;
}

}  // namespace egm
