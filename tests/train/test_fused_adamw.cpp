// train.optimizer_path fused: at::_fused_adamw_ on the LibTorch AdamW's own state,
// with clipping folded in on the device. Held against today's path: the clip
// factor against clip_grad_norm_, one optimiser against torch::optim::AdamW step
// by step (weight decay on every parameter, a parameter without a gradient left
// alone, the lr changed every step), and whole runs of 50 steps (warm-up + cosine,
// clipping on) within a stated tolerance; a resumed fused run is bitwise the
// uninterrupted one.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "data/corpus.h"
#include "train/fused_adamw.h"
#include "train/op_counter.h"
#include "train/lr_schedule.h"
#include "train/trainer.h"
#include "util/error.h"
#include "word_corpus.h"

namespace fs = std::filesystem;

namespace {

const egm::Corpus& corpus() {
  static const egm::Corpus c = egm::test::word_corpus(12345);
  return c;
}

TEST(FusedAdamW, ClipDivisorIsWhatClipGradNormMultipliesBy) {
  torch::manual_seed(1);
  for (double max_norm : {0.1, 1.0, 1e3}) {
    std::vector<torch::Tensor> a = {torch::randn({7, 3}), torch::randn({5}), torch::randn({2, 2, 2})};
    std::vector<torch::Tensor> params;
    for (auto& g : a) {
      torch::Tensor p = torch::zeros_like(g).requires_grad_();
      p.mutable_grad() = g.clone();
      params.push_back(p);
    }
    torch::Tensor divisor = egm::clip_divisor(a, max_norm);
    torch::nn::utils::clip_grad_norm_(params, max_norm);
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::allclose(a[i] / divisor, params[i].grad(), 1e-6, 1e-7)) << max_norm;
    if (max_norm == 1e3) EXPECT_EQ(divisor.item<double>(), 1.0) << "below the threshold nothing is scaled";
  }
}

TEST(FusedAdamW, StepsLikeLibTorchsAdamW) {
  torch::manual_seed(2);
  std::vector<torch::Tensor> ref = {torch::randn({16, 8}), torch::randn({8}), torch::randn({3})};
  std::vector<torch::Tensor> fus;
  for (auto& p : ref) {
    p.requires_grad_();
    fus.push_back(p.detach().clone().requires_grad_());
  }
  auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
  torch::optim::AdamW a(ref, options), b(fus, options);
  egm::FusedAdamW fused(b);
  for (int step = 0; step < 50; ++step) {
    const double lr = 1e-2 * (1.0 + std::cos(step * 0.1)) / 2.0;
    for (size_t i = 0; i < 2; ++i) {  // the third parameter never gets a gradient
      torch::Tensor g = torch::randn_like(ref[i]);
      ref[i].mutable_grad() = g.clone();
      fus[i].mutable_grad() = g.clone();
    }
    for (auto& group : a.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    torch::nn::utils::clip_grad_norm_(ref, 2.0);
    a.step();
    fused.step(lr, 2.0);
  }
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(torch::allclose(ref[i], fus[i], 1e-5, 1e-6)) << i << ": " << (ref[i] - fus[i]).abs().max();
  EXPECT_TRUE(torch::equal(ref[2], fus[2])) << "no gradient, no step (no decay either)";
  EXPECT_EQ(b.state().count(fus[2].unsafeGetTensorImpl()), 0u);
  auto& s = static_cast<torch::optim::AdamWParamState&>(*b.state().at(fus[0].unsafeGetTensorImpl()));
  EXPECT_EQ(s.step(), 50) << "the host step count the checkpoint saves";
}

egm::RunConfig tiny(const std::string& variant, const std::string& optimizer_path, double clip) {
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = variant;
  c.model.vocab_size = corpus().vocab_size();
  c.train.seed = 3;
  c.train.max_steps = 50;
  c.train.eval_interval = 25;
  c.train.eval_batches = 2;
  c.train.ar_eval_windows = 0;
  c.train.full_val_eval = false;
  c.train.grad_clip = clip;
  c.train.optimizer_path = optimizer_path;
  return c;
}

egm::RuntimeOptions adamw_runtime(const std::string& dir = "") {
  egm::RuntimeOptions r;
  r.threads = 1;
  r.log_interval = 1;
  r.out_dir = dir;
  return r;
}

// 50 steps through warm-up (10) and the cosine, weight decay 0.1 on every parameter;
// clip 0.05 keeps the clip active on every step, 1.0 only on some.
TEST(FusedAdamW, FiftyTrainingStepsFollowTodaysTrajectory) {
  for (const std::string variant : {"base", "ega_mope"})
    for (double clip : {0.05, 1.0, 0.0}) {
      egm::MemorySink sa, sb;
      egm::Trainer a(tiny(variant, "libtorch", clip), adamw_runtime(), corpus(), sa);
      egm::Trainer b(tiny(variant, "fused", clip), adamw_runtime(), corpus(), sb);
      double worst = 0.0;
      for (int step = 0; step < 50; ++step) {
        const double la = a.train_step().item<double>(), lb = b.train_step().item<double>();
        worst = std::max(worst, std::abs(la - lb));
      }
      // Stated tolerance: fp32 rounding of the fused kernel (one pass, another order of
      // operations) grows over 50 steps to ~1e-5 in the loss; 1e-4 is the bound.
      EXPECT_LT(worst, 1e-4) << variant << " clip " << clip;
      auto pa = a.model().named_parameters(), pb = b.model().named_parameters();
      for (const auto& kv : pa) {
        // EGA's energy bias cancels in the z-score: its exact gradient is 0, the computed one
        // rounding noise, which Adam normalises into lr-sized steps of either sign on either
        // path. Only the loss (above) and the parameters with a real gradient can agree.
        if (kv.key().find("energy.bias") != std::string::npos) continue;
        EXPECT_TRUE(torch::allclose(kv.value(), pb[kv.key()], 1e-3, 1e-4))
            << variant << " clip " << clip << " " << kv.key() << ": "
            << (kv.value() - pb[kv.key()]).abs().max().item<double>();
      }
    }
}

TEST(FusedAdamW, AutoIsFusedOnCudaOnly) {
  egm::TrainConfig t;
  EXPECT_EQ(egm::resolved_optimizer_path(t, /*cuda=*/true), "fused");
  EXPECT_EQ(egm::resolved_optimizer_path(t, /*cuda=*/false), "libtorch");
  t.optimizer_path = "fused";
  EXPECT_EQ(egm::resolved_optimizer_path(t, false), "fused");
}

TEST(FusedAdamW, ResumeIsBitwiseIdenticalToAnUninterruptedRun) {
  egm::RunConfig c = tiny("base", "fused", 1.0);
  c.train.max_steps = 30;
  c.train.eval_interval = 10;
  auto losses = [](const egm::MemorySink& s) {
    std::vector<double> out;
    for (const auto& r : s.of<egm::ProgressRecord>()) out.push_back(r.train_loss.value_or(NAN));
    return out;
  };
  egm::MemorySink straight, first, second;
  egm::Trainer(c, adamw_runtime(), corpus(), straight).run();
  const std::string dir = (fs::temp_directory_path() / ("egm_fused_resume_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  int polls = 0;
  ASSERT_EQ(egm::Trainer(c, adamw_runtime(dir), corpus(), first).run([&] { return ++polls > 17; }).status,
            egm::Outcome::interrupted);
  egm::Trainer(c, adamw_runtime(dir), corpus(), second).run();
  std::vector<double> got = losses(first), rest = losses(second);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, losses(straight));
  fs::remove_all(dir);
}

}  // namespace

namespace {

// train.cuda_graphs captures GPU kernels: a CPU run refuses it in one line naming the field.
TEST(CudaGraphs, RefusedOnTheCpuWithAClearLine) {
  egm::RunConfig c = tiny("base", "auto", 1.0);
  c.train.cuda_graphs = true;
  egm::MemorySink sink;
  try {
    egm::Trainer trainer(c, adamw_runtime(), corpus(), sink);
    FAIL() << "a CPU run accepted train.cuda_graphs";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train.cuda_graphs needs a CUDA device (this run is on cpu)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// egm bench --count-ops: a linear counts once (as its addmm), views and allocations not
// at all, a foreach op once however many tensors it loops over on the CPU.
TEST(OpCounter, CountsWhatAGpuWouldLaunch) {
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({4, 8}), w = torch::randn({3, 8}), b = torch::randn({3});
  std::vector<torch::Tensor> many = {torch::randn({5}), torch::randn({6}), torch::randn({7})};
  egm::OpCounts c;
  {
    egm::OpCounter counter;
    torch::Tensor y = torch::linear(x, w, b);
    torch::Tensor v = y.view({12}).unsqueeze(0).transpose(0, 1);
    (void)v;
    at::_foreach_mul_(many, 2.0);
    c = counter.counts();
  }
  EXPECT_EQ(c.kernels, 2) << "addmm and _foreach_mul_; got " << c.kernels;
  EXPECT_EQ(c.kernels_by_name.count("aten::view"), 0u);
  EXPECT_EQ(c.kernels_by_name.count("aten::_foreach_mul_"), 1u);
  EXPECT_EQ(c.top_level, 5) << "linear, view, unsqueeze, transpose, _foreach_mul_";
  EXPECT_GE(c.dispatched, c.top_level);
  egm::OpCounter again;  // the first one is gone: a second may start
  EXPECT_EQ(again.counts().dispatched, 0);
}

}  // namespace
