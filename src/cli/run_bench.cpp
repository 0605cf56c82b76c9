// egm bench's work (egm-torch): ms/step and tokens/s of a variant at a preset
// (a benchmark, not a test). Its flags: cmd_bench.cpp.
#include <algorithm>
#include <cstdio>

#include <fmt/ranges.h>

#include "cli/torch_verbs.h"
#include "data/corpus.h"
#include "train/step_benchmark.h"
#include "train/trainer.h"
#include "util/files.h"
#include "util/log.h"

namespace egm::cli {

void run_bench(const BenchArgs& a) {
  RunConfigFlags f = a.flags;
  if (f.variant.empty()) f.variant = "base";
  f.steps = -1;
  RunConfig config = resolve_run_config(f);
  RuntimeOptions runtime = resolve_runtime(f);
  // Timing does not depend on the text: without the corpus, use random characters.
  Corpus corpus = file_exists(runtime.data_path) ? Corpus::load(runtime.data_path) : [] {
    log::warn("no corpus found; timing on random characters");
    std::string text(1 << 20, ' ');
    uint64_t x = 1;
    // A fixed LCG (Knuth's MMIX multiplier): its top 5 bits pick one of 32 characters from 'A', the same text every run.
    for (char& ch : text) ch = static_cast<char>('A' + ((x = x * 6364136223846793005ULL + 1) >> 59));
    return Corpus::from_text(text);
  }();
  config.model.vocab_size = corpus.vocab_size();
  config.train.max_steps = std::max<int64_t>(config.train.max_steps, a.warmup + a.timed + 1);
  StepBenchmark b = benchmark_steps(config, runtime, corpus, a.warmup, a.timed, a.profile, a.count_ops,
                                    a.matmul_gflops > 0 ? std::optional<double>(a.matmul_gflops) : std::nullopt);
  if (a.json) {
    nlohmann::json j = {{"variant", b.variant}, {"preset", b.preset}, {"threads", b.threads},
                        {"ms_per_step", b.ms_per_step}, {"ms_per_step_min", b.ms_per_step_min},
                        {"tokens_per_s", b.tokens_per_s}, {"parameters", b.parameters},
                        {"achieved_gflops", b.achieved_gflops}, {"matmul_gflops", b.matmul_gflops},
                        {"mfu", b.mfu}, {"peak_rss_mb", b.peak_rss_mb}, {"rss_growth_mb", b.rss_growth_mb},
                        {"peak_rss_growth_mb", b.peak_rss_growth_mb},
                        {"device", runtime.device.str()}, {"steps", b.steps}, {"blas_core", b.blas_core},
                        {"precision", b.precision}, {"peak_gpu_mb", b.peak_gpu_mb},
                        {"gpu_total_mb", b.gpu_total_mb}, {"estimate_mb", b.estimate.total_mb()},
                        {"attention_path", b.attention_path}, {"optimizer_path", b.optimizer_path},
                        {"matmul_measured", b.matmul_measured}};
    // The backend(s) SDPA ran the model's attention on (null off the sdpa path).
    j["sdpa_backend"] = b.sdpa_backends.empty() ? nlohmann::json(nullptr) : nlohmann::json(fmt::format("{}", fmt::join(b.sdpa_backends, ",")));
    j["sdpa_refused"] = b.sdpa_refused;
    if (b.ops)
      j["ops"] = {{"dispatched", b.ops->dispatched}, {"top_level", b.ops->top_level}, {"kernels", b.ops->kernels},
                  {"kernels_by_name", b.ops->kernels_by_name}, {"dispatched_by_name", b.ops->dispatched_by_name}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("%s @ %s on %s (%s), %d thread(s), %lld parameters\n", b.variant.c_str(), b.preset.c_str(),
              runtime.device.str().c_str(), b.precision.c_str(), b.threads, static_cast<long long>(b.parameters));
  std::printf("attention %s, optimizer %s\n", b.attention_path.c_str(), b.optimizer_path.c_str());
  if (!b.sdpa_backends.empty()) {
    std::string line = fmt::format("SDPA backend {}", fmt::join(b.sdpa_backends, ", "));
    if (!b.sdpa_refused.empty()) line += fmt::format(" ({} refused the model's calls)", fmt::join(b.sdpa_refused, ", "));
    std::printf("%s\n", line.c_str());
  }
  std::printf("%.2f ms/step (median of %lld, min %.2f)\n", b.ms_per_step, static_cast<long long>(b.steps),
              b.ms_per_step_min);
  std::printf("%.0f tokens/s\n", b.tokens_per_s);
  if (b.matmul_gflops > 0)
    std::printf("%.2f GFLOP/s model, %.2f GFLOP/s %s: MFU %.1f%%\n", b.achieved_gflops, b.matmul_gflops,
                b.peak_gpu_mb > 0 ? "dense bf16 matmul" : "sgemm", 100.0 * b.mfu);
  if (b.peak_gpu_mb > 0)
    std::printf("peak GPU memory %.0f MB of %.0f MB; estimated %s\n", b.peak_gpu_mb, b.gpu_total_mb,
                b.estimate.summary().c_str());
  else
    std::printf("memory estimate %s\n", b.estimate.summary().c_str());
  if (b.ops) {
    std::printf("ATen ops per step: %lld dispatched, %lld top-level, %lld kernels (ops doing work themselves)\n",
                static_cast<long long>(b.ops->dispatched), static_cast<long long>(b.ops->top_level),
                static_cast<long long>(b.ops->kernels));
    std::string top;
    for (const std::string& k : b.ops->top_kernels(8)) top += (top.empty() ? "" : ", ") + k;
    std::printf("most frequent kernels: %s\n", top.c_str());
  }
  if (!b.blas_core.empty()) std::printf("OpenBLAS kernels: %s\n", b.blas_core.c_str());
  std::printf("peak RSS %.0f MB; over the timed steps: peak %+.1f MB, RSS %+.1f MB\n", b.peak_rss_mb,
              b.peak_rss_growth_mb, b.rss_growth_mb);
}

}  // namespace egm::cli
