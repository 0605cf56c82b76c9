// The model and the trainer on CUDA against the CPU: logits and gradients of
// every main variant (fp32, and bf16 autocast; CUDA runs SDPA and the fused
// AdamW by default, the CPU its kernels and LibTorch's AdamW), a checkpoint
// written on CUDA resumed on the CPU and back, and the CUDA-graph step against
// the eager one. Every test skips itself where no GPU is
// visible; scripts/device_check.sh runs them on the lent GPU machine.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "config/run_config.h"
#include "model/gpt.h"
#include "train/metrics_sink.h"
#include "train/trainer.h"
#include "util/torch_compat.h"
#include "word_corpus.h"
#include "../model/model_configs.h"
#include "../model/pass_compare.h"

namespace fs = std::filesystem;

namespace {

#define EGM_REQUIRE_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible"

using egm::test::Pass;  // its grads on the CPU, in float64
using egm::test::tiny_model;

Pass run(egm::GPT& model, const torch::Device& device, bool bf16) {
  const egm::ModelConfig& c = model->config();
  const torch::Tensor x = torch::randint(c.vocab_size, {4, c.block_size}, egm::compat::make_cpu_generator(1), torch::kLong);
  const torch::Tensor y = torch::randint(c.vocab_size, {4, c.block_size}, egm::compat::make_cpu_generator(2), torch::kLong);
  model->to(device);
  model->zero_grad();
  Pass p;
  {
    egm::compat::AutocastGuard autocast(bf16, device.type(), at::kBFloat16);
    p.logits = model->forward(x.to(device));
    p.loss = egm::GPTImpl::loss(p.logits, y.to(device));
  }
  p.loss.backward();
  p.logits = p.logits.to(torch::kCPU, torch::kFloat32);
  p.loss = p.loss.to(torch::kCPU, torch::kFloat64);
  for (const auto& param : model->parameters()) p.grads.push_back(param.grad().to(torch::kCPU, torch::kFloat64));
  return p;
}

// fp32: cuBLAS without TF32 (LibTorch's default) against the CPU's sgemm.
constexpr egm::test::Tolerance kFp32{1e-5, 1e-4, 0.99999, 1e-3};
// bf16 autocast on CUDA against fp32 on the CPU: the CPU bf16 test's bounds.
using egm::test::kBf16;
using egm::test::expect_close;

class OnCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(OnCuda, Fp32LogitsAndGradientsMatchTheCpu) {
  EGM_REQUIRE_GPU();
  egm::GPT model = egm::build_model(tiny_model(GetParam()), egm::test::kCompareSeed);
  const Pass cpu = run(model, torch::kCPU, false);
  const Pass gpu = run(model, torch::Device(torch::kCUDA, 0), false);
  expect_close(cpu, gpu, kFp32, model);
}

TEST_P(OnCuda, Bf16AutocastMatchesTheFp32CpuWithinBf16Tolerance) {
  EGM_REQUIRE_GPU();
  egm::GPT model = egm::build_model(tiny_model(GetParam()), egm::test::kCompareSeed);
  const Pass cpu = run(model, torch::kCPU, false);
  const Pass gpu = run(model, torch::Device(torch::kCUDA, 0), true);
  expect_close(cpu, gpu, kBf16, model);
}

INSTANTIATE_TEST_SUITE_P(MainVariants, OnCuda, ::testing::Values("base", "ega", "ega_causal", "mope", "ega_mope"));

// The training losses a run records, by step.
std::map<int64_t, double> losses(const egm::MemorySink& sink) {
  std::map<int64_t, double> out;
  for (const egm::ProgressRecord& r : sink.of<egm::ProgressRecord>()) out[r.step] = r.train_loss.value_or(NAN);
  return out;
}

TEST(CudaCheckpoint, WrittenOnCudaResumesOnTheCpuAndBack) {
  EGM_REQUIRE_GPU();
  static const egm::Corpus corpus = egm::test::word_corpus(12345);
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = "ega_mope";
  c.model.dropout = 0.0;
  c.model.vocab_size = corpus.vocab_size();
  c.train.eval_interval = 3;
  c.train.eval_batches = 1;
  c.train.ar_eval_windows = 1;
  const fs::path dir = fs::temp_directory_path() / ("egm_gpu_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto runtime = [&](const std::string& device, const std::string& out) {
    egm::RuntimeOptions r;
    r.threads = 1;
    r.device = egm::parse_device_name(device);
    r.out_dir = out;
    r.log_interval = 1;
    return r;
  };
  // Reference: 9 steps on the CPU alone.
  c.train.max_steps = 9;
  egm::MemorySink reference;
  egm::Trainer(c, runtime("cpu", (dir / "reference").string()), corpus, reference).run();
  // The same run in three legs in one folder: CUDA stopped after step 3 (the stop
  // checkpoints), the CPU stopped after step 6, CUDA to the end.
  egm::MemorySink legs;
  const std::string out = (dir / "legs").string();
  std::optional<int64_t> expect_resume;
  for (const auto& [device, stop_after] : std::vector<std::pair<std::string, int>>{{"cuda", 3}, {"cpu", 3}, {"cuda", 99}}) {
    int polls = 0;
    const int limit = stop_after;
    const egm::RunOutcome r = egm::Trainer(c, runtime(device, out), corpus, legs).run([&] { return ++polls > limit; });
    EXPECT_EQ(r.resumed_from_step, expect_resume) << device;
    EXPECT_EQ(r.status, limit == 99 ? egm::Outcome::done : egm::Outcome::interrupted) << device;
    expect_resume = r.step;
  }
  EXPECT_EQ(expect_resume, std::optional<int64_t>(9));
  const auto want = losses(reference), got = losses(legs);
  ASSERT_EQ(want.size(), 9u);
  for (const auto& [step, loss] : want) {
    ASSERT_TRUE(got.count(step)) << "no loss at step " << step;
    EXPECT_NEAR(got.at(step), loss, 1e-4 * loss) << "step " << step;
  }
  fs::remove_all(dir);
}

// train.cuda_graphs: three eager warm-up steps, the capture, then replays must give
// the eager step's losses (dropout 0: the same function, within 1e-3 since SDPA's
// backward is not bitwise repeatable; with dropout the replay draws from the reseeded
// generator, checked finite and close in trend only).
TEST(CudaGraphs, TheCapturedStepMatchesTheEagerStep) {
  EGM_REQUIRE_GPU();
  static const egm::Corpus corpus = egm::test::word_corpus(12345);
  for (double dropout : {0.0, 0.1}) {
    egm::RunConfig c = egm::preset_config("tiny");
    c.model.variant = "ega_mope";
    c.model.dropout = dropout;
    c.model.vocab_size = corpus.vocab_size();
    c.train.max_steps = 12;
    c.train.eval_interval = 12;
    c.train.eval_batches = 1;
    c.train.ar_eval_windows = 0;
    c.train.full_val_eval = false;
    egm::RuntimeOptions r;
    r.threads = 1;
    r.device = egm::parse_device_name("cuda");
    r.log_interval = 1;
    egm::MemorySink eager, graphed;
    EXPECT_EQ(egm::Trainer(c, r, corpus, eager).run().status, egm::Outcome::done);
    c.train.cuda_graphs = true;
    EXPECT_EQ(egm::Trainer(c, r, corpus, graphed).run().status, egm::Outcome::done);
    const auto want = losses(eager), got = losses(graphed);
    ASSERT_EQ(want.size(), 12u);
    for (const auto& [step, loss] : want) {
      ASSERT_TRUE(got.count(step)) << "no loss at step " << step;
      ASSERT_TRUE(std::isfinite(got.at(step))) << "step " << step;
      if (dropout == 0.0) EXPECT_NEAR(got.at(step), loss, 1e-3 * loss) << "step " << step;
    }
    if (dropout > 0.0) EXPECT_NEAR(got.rbegin()->second, want.rbegin()->second, 0.05 * want.rbegin()->second);
  }
}

}  // namespace
