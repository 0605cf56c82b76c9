// The memory estimate (train/memory_estimate.h): its terms by hand at the
// paper preset, and against the peak RSS `egm bench` measures at two presets
// (within 25%, the bound issue 15 sets).
#include <gtest/gtest.h>

#include "config/run_config.h"
#include "model/kernels/flash_attention_kernels.h"
#include "train/memory_estimate.h"
#include "train/step_benchmark.h"
#include "util/error.h"
#include "word_corpus.h"

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(MemoryEstimate, TermsAtThePaperPresetByHand) {
  egm::RunConfig c = egm::preset_config("paper");  // B 64, T 256, d 256, H 8, L 6, V 65
  c.model.variant = "base";
  // The flash kernels (the CPU default) form no [B, H, T, T] tensor; the older panel kernels' terms follow.
  EXPECT_DOUBLE_EQ(egm::estimate_training_memory(c, 4816640, /*cuda=*/false, 100).attention_mb, 0.0);
  egm::set_flash_attention(false);
  const egm::MemoryEstimate cpu = egm::estimate_training_memory(c, 4816640, /*cuda=*/false, 100);
  const double btd = 64.0 * 256 * 256 * 4 / kMiB;      // 16 MiB
  const double bhtt = 64.0 * 8 * 256 * 256 * 4 / kMiB;  // 128 MiB
  EXPECT_DOUBLE_EQ(cpu.weights_mb, 16.0 * 4816640 / kMiB);
  EXPECT_DOUBLE_EQ(cpu.activations_mb, (6 * 20.5 + 4) * btd);
  EXPECT_DOUBLE_EQ(cpu.attention_mb, (6 * 1.0 + 2) * bhtt);  // the CPU kernels keep P alone
  EXPECT_DOUBLE_EQ(cpu.logits_mb, 3.0 * 64 * 256 * 65 * 4 / kMiB);
  EXPECT_DOUBLE_EQ(cpu.runtime_mb, 100);
  EXPECT_DOUBLE_EQ(cpu.total_mb(), cpu.weights_mb + cpu.activations_mb + cpu.attention_mb + cpu.logits_mb + 100);
  // LibTorch's generic ops on CUDA keep more matrices; causal EGA's gate most.
  const egm::MemoryEstimate gpu = egm::estimate_training_memory(c, 4816640, /*cuda=*/true);
  EXPECT_DOUBLE_EQ(gpu.attention_mb, (6 * 2.25 + 2) * bhtt);
  c.model.variant = "ega_causal";
  EXPECT_GT(egm::estimate_training_memory(c, 4816640, true).attention_mb, gpu.attention_mb);
  // Quadratic in T, linear in B.
  c.model.variant = "base";
  egm::RunConfig twice = c;
  twice.train.batch_size *= 2;
  EXPECT_NEAR(egm::estimate_training_memory(twice, 4816640, false).attention_mb, 2 * cpu.attention_mb, 1e-9);
  egm::set_flash_attention(true);
}

TEST(MemoryEstimate, SummaryItemisesTheTerms) {
  egm::RunConfig c = egm::preset_config("tiny");
  const std::string text = egm::estimate_training_memory(c, false).summary();
  for (const char* term : {"weights", "activations", "attention", "logits", "runtime"})
    EXPECT_NE(text.find(term), std::string::npos) << text;
}

// Measured: the peak RSS of a few training steps against the estimate whose
// runtime term is the RSS before the model was built.
void expect_within_quarter(const std::string& preset, const std::string& variant) {
  static const egm::Corpus corpus = egm::test::word_corpus(12345);
  egm::RunConfig c = egm::preset_config(preset);
  c.model.variant = variant;
  c.model.vocab_size = corpus.vocab_size();
  egm::RuntimeOptions rt;
  rt.threads = 1;
  const egm::StepBenchmark b = egm::benchmark_steps(c, rt, corpus, /*warmup=*/1, /*timed=*/1);
  const double estimate = b.estimate.total_mb();
  EXPECT_NEAR(estimate, b.peak_rss_mb, 0.25 * b.peak_rss_mb)
      << preset << "/" << variant << ": estimate " << b.estimate.summary() << ", measured peak " << b.peak_rss_mb
      << " MB";
  ::testing::Test::RecordProperty(preset + "_" + variant + "_estimate_mb", static_cast<int>(estimate));
  ::testing::Test::RecordProperty(preset + "_" + variant + "_peak_mb", static_cast<int>(b.peak_rss_mb));
}

TEST(MemoryEstimate, WithinAQuarterOfTheMeasuredPeakAtTheSmallPreset) { expect_within_quarter("small", "ega_mope"); }

TEST(MemoryEstimate, WithinAQuarterOfTheMeasuredPeakAtThePaperPreset) { expect_within_quarter("paper", "base"); }

// No timed step is refused before any work (its median was a read past an empty
// vector: egm bench --timed-steps 0 ended in SIGSEGV), and so is a negative warm-up.
TEST(StepBenchmark, RefusesNoTimedStepsAndANegativeWarmUp) {
  const egm::Corpus corpus = egm::test::word_corpus(12345);
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.vocab_size = corpus.vocab_size();
  egm::RuntimeOptions rt;
  rt.threads = 1;
  EXPECT_THROW(egm::benchmark_steps(c, rt, corpus, /*warmup=*/1, /*timed=*/0), egm::ConfigError);
  EXPECT_THROW(egm::benchmark_steps(c, rt, corpus, /*warmup=*/-1, /*timed=*/2), egm::ConfigError);
  EXPECT_EQ(egm::benchmark_steps(c, rt, corpus, /*warmup=*/0, /*timed=*/1).steps, 1);
}

}  // namespace
