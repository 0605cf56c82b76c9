// Data-parallel training under mpirun -np 2 (MpiCommunicator, CPU), on the
// tiny preset and TinyShakespeare ($EGM_DATA):
//  - a k=2 run equals the k=1 run with the same seed and global batch: each
//    rank draws its half of the same global batch (the counter-based
//    sampler) and the averaged gradient is the global-batch gradient, so the
//    two differ only by float rounding (the k=1 run sums 8 windows in one
//    kernel, k=2 sums 4 + 4 then adds over MPI). Dropout is 0 here: dropout
//    masks come from per-rank streams by design (a rank cannot reproduce the
//    masks the 1-rank run drew for the windows it now holds).
//  - a k=2 run killed and resumed with 2 ranks continues its trajectory
//    bitwise, dropout on;
//  - a global batch not divisible by k is a clear error.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "data/corpus.h"
#include "dist/mpi_communicator.h"
#include "train/trainer.h"
#include "util/error.h"
#include "mpi_world.h"

namespace fs = std::filesystem;

namespace {

using egm::test::world_rank;
using egm::test::world_size;

// The corpus, or null when $EGM_DATA names no file (every rank sees the same, so all skip together).
const egm::Corpus* corpus() {
  static const std::unique_ptr<egm::Corpus> c = []() -> std::unique_ptr<egm::Corpus> {
    const char* path = std::getenv("EGM_DATA");
    if (!path || !fs::is_regular_file(path)) return nullptr;
    return std::make_unique<egm::Corpus>(egm::Corpus::load(path));
  }();
  return c.get();
}

#define REQUIRE_TWO_RANKS_AND_CORPUS()                                                          \
  do {                                                                                          \
    if (world_size() != 2) GTEST_SKIP() << "written for mpirun -np 2";                          \
    if (!corpus()) GTEST_SKIP() << "no corpus at EGM_DATA (set it to TinyShakespeare)";        \
  } while (0)

egm::RunConfig tiny(int64_t steps, double dropout) {
  egm::RunConfig c = egm::preset_config("tiny");  // global batch 8, T 32, 2 layers, d 32
  c.model.variant = "ega_mope";                   // the paper's model: gates and MoPE scalars too
  c.model.dropout = dropout;
  c.train.seed = 11;
  c.train.max_steps = steps;
  c.train.eval_interval = 25;
  c.train.eval_batches = 4;
  c.train.ar_eval_windows = 4;
  return c;
}

egm::RuntimeOptions runtime(const std::string& out_dir = "") {
  egm::RuntimeOptions r;
  r.threads = 1;  // two ranks share the box; one intra-op thread each
  r.out_dir = out_dir;
  r.log_interval = 1;
  return r;
}

std::vector<double> eval_losses(const egm::MemorySink& sink) {
  std::vector<double> out;
  for (const egm::EvalRecord& r : sink.of<egm::EvalRecord>()) out.push_back(r.loss.value_or(NAN));
  return out;
}

std::vector<double> train_losses(const egm::MemorySink& sink) {
  std::vector<double> out;
  for (const egm::ProgressRecord& r : sink.of<egm::ProgressRecord>()) out.push_back(r.train_loss.value_or(NAN));
  return out;
}

torch::Tensor flat_parameters(egm::GPTImpl& model) {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : model.parameters()) pieces.push_back(p.detach().reshape({-1}));
  return torch::cat(pieces).clone();
}

double relative_difference(double a, double b) { return std::abs(a - b) / std::max(std::abs(a), std::abs(b)); }

TEST(DataParallel, TwoRanksMatchOneRankWithTheSameSeedAndGlobalBatch) {
  REQUIRE_TWO_RANKS_AND_CORPUS();
  const egm::RunConfig config = tiny(/*steps=*/50, /*dropout=*/0.0);
  const int rank = world_rank();

  // k=1 first, on rank 0 alone (rank 1 waits at the barrier).
  egm::MemorySink one;
  egm::RunOutcome r1;
  std::unique_ptr<egm::Trainer> trainer_one;
  if (rank == 0) {
    trainer_one = std::make_unique<egm::Trainer>(config, runtime(), *corpus(), one);
    r1 = trainer_one->run();
  }
  MPI_Barrier(MPI_COMM_WORLD);

  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  egm::MemorySink two;
  egm::Trainer trainer(config, runtime(), *corpus(), two, &comm);
  egm::RunOutcome r2 = trainer.run();
  ASSERT_EQ(r2.status, egm::Outcome::done);

  // Every rank holds the same replica, bit for bit (all apply the same averaged gradient).
  torch::Tensor mine = flat_parameters(trainer.model());
  torch::Tensor rank0 = mine.clone();
  comm.broadcast(rank0, 0);
  EXPECT_TRUE(torch::equal(mine, rank0)) << "rank " << rank << " drifted from rank 0";
  if (rank != 0) {
    EXPECT_TRUE(two.records.empty()) << "only rank 0 emits records";
    return;
  }

  // The run says how it was trained.
  ASSERT_FALSE(two.records.empty());
  const auto* start = std::get_if<egm::StartRecord>(&two.records.front().body);
  ASSERT_NE(start, nullptr) << "the first record is not the run's start";
  EXPECT_EQ(start->setup.world_size, 2);
  EXPECT_EQ(start->setup.backend, egm::Backend::mpi);

  // Loss curves: the first 50 steps agree to 1e-5 relative.
  std::vector<double> l1 = train_losses(one), l2 = train_losses(two);
  ASSERT_EQ(l1.size(), 50u);
  ASSERT_EQ(l2.size(), 50u);
  double worst_loss = 0.0;
  for (size_t s = 0; s < l1.size(); ++s) {
    worst_loss = std::max(worst_loss, relative_difference(l1[s], l2[s]));
    EXPECT_LE(relative_difference(l1[s], l2[s]), 1e-5) << "step " << s + 1 << ": " << l1[s] << " vs " << l2[s];
  }
  EXPECT_LT(l1.back(), l1.front() - 0.3) << "the run should learn something, or the comparison says little";
  // The evaluations (split over the ranks in the k=2 run) agree as well.
  std::vector<double> e1 = eval_losses(one), e2 = eval_losses(two);
  ASSERT_EQ(e1.size(), e2.size());
  for (size_t i = 0; i < e1.size(); ++i) EXPECT_LE(relative_difference(e1[i], e2[i]), 1e-5) << "eval " << i;
  ASSERT_TRUE(r1.measured.full_val && r2.measured.full_val && r1.measured.ar_val && r2.measured.ar_val);
  EXPECT_LE(relative_difference(*r1.measured.full_val, *r2.measured.full_val), 1e-5);
  EXPECT_LE(relative_difference(*r1.measured.ar_val, *r2.measured.ar_val), 1e-5);

  // Parameters after 50 steps, to float tolerance. The two runs differ only in
  // float32 summation order (~1e-7 relative in each gradient); AdamW's step
  // lr * m / (sqrt(v) + eps) passes that on at ~lr * 1e-7 per step, far below
  // 1e-6 after 50 steps at lr 3e-3, while a real mismatch (another batch, a
  // missing average) moves parameters by ~lr = 3e-3 per step.
  // The exception: a parameter the loss cannot see (the energy projection's
  // bias, cancelled by the gate's z-score) has a gradient of pure rounding
  // noise, which Adam's normalisation turns into +-lr steps in both runs. Such
  // "walkers" are allowed to differ only if they are shown not to matter:
  // moving all of them by 0.5 must leave the model's logits unchanged.
  egm::GPTImpl& m1 = trainer_one->model();
  egm::GPTImpl& m2 = trainer.model();
  auto named_one = m1.named_parameters();
  auto named_two = m2.named_parameters();
  ASSERT_EQ(named_two.size(), named_one.size());
  double worst_param = 0.0;
  std::vector<std::string> walkers;
  for (const auto& item : named_one) {
    torch::Tensor p1 = item.value().detach(), p2 = named_two[item.key()].detach();
    if (torch::allclose(p1, p2, /*rtol=*/1e-5, /*atol=*/1e-6)) {
      worst_param = std::max(worst_param, (p1 - p2).abs().max().item<double>());
    } else {
      walkers.push_back(item.key());
    }
  }
  EXPECT_LT(walkers.size(), named_one.size() / 4) << "most parameters must agree";

  egm::Batch probe = egm::BatchSampler(*corpus(), config.model.block_size, /*seed=*/99).windows(egm::Split::val, 0, 8);
  torch::NoGradGuard no_grad;
  m1.eval();
  m2.eval();
  torch::Tensor logits1 = m1.forward(probe.x), logits2 = m2.forward(probe.x);
  const double logit_diff = (logits1 - logits2).abs().max().item<double>();
  EXPECT_LT(logit_diff, 1e-4 * logits1.abs().max().item<double>()) << "the two models compute different functions";
  for (const auto& name : walkers) named_two[name].add_(0.5);
  const double moved = (m2.forward(probe.x) - logits2).abs().max().item<double>();
  EXPECT_LT(moved, 1e-5 * logits2.abs().max().item<double>())
      << "a parameter that differs between k=1 and k=2 changes the model: " << fmt::format("{}", fmt::join(walkers, ", "));

  std::cout << "k=1 vs k=2 over 50 steps: max relative loss difference " << worst_loss
            << ", max |parameter difference| " << worst_param << " (loss-invariant parameters excluded: "
            << fmt::format("{}", fmt::join(walkers, ", ")) << "), max |logit difference| " << logit_diff
            << ", logits moved by the excluded parameters +0.5: " << moved << "\n";
}

// A run directory both ranks agree on (rank 0 picks it from its pid).
std::string shared_temp_dir(const std::string& name) {
  char path[512] = {0};
  if (world_rank() == 0) {
    fs::path p = fs::temp_directory_path() / ("egm_dist_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(p);
    std::snprintf(path, sizeof(path), "%s", p.c_str());
  }
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

TEST(DataParallel, KilledAndResumedTwoRankRunContinuesItsTrajectory) {
  REQUIRE_TWO_RANKS_AND_CORPUS();
  // Dropout on: each rank's masks must continue where they were, not restart
  // from rank 0's stream (the checkpoint is written by rank 0 alone).
  egm::RunConfig config = tiny(/*steps=*/30, /*dropout=*/0.1);
  config.train.eval_interval = 10;

  egm::MemorySink straight;
  egm::RunOutcome full;
  {
    egm::MpiCommunicator comm(MPI_COMM_WORLD);
    full = egm::Trainer(config, runtime(), *corpus(), straight, &comm).run();
  }

  const std::string dir = shared_temp_dir("resume");
  egm::MemorySink first, second;
  egm::RunOutcome stopped, resumed;
  {
    // Both ranks are told to stop at the same step (the worker relays the coordinator's stop).
    egm::MpiCommunicator comm(MPI_COMM_WORLD);
    int polls = 0;
    stopped = egm::Trainer(config, runtime(dir), *corpus(), first, &comm).run([&] { return ++polls > 17; });
  }
  ASSERT_EQ(stopped.status, egm::Outcome::interrupted);
  ASSERT_EQ(stopped.step, 17);  // off an eval boundary: the stop itself checkpoints
  {
    // A fresh communicator and trainer, as restarted processes would have.
    egm::MpiCommunicator comm(MPI_COMM_WORLD);
    resumed = egm::Trainer(config, runtime(dir), *corpus(), second, &comm).run();
  }
  EXPECT_EQ(resumed.status, egm::Outcome::done);
  EXPECT_EQ(resumed.resumed_from_step, std::optional<int64_t>(17));  // on every rank: all read rank 0's checkpoint
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    std::vector<double> expected = train_losses(straight);
    std::vector<double> got = train_losses(first);
    std::vector<double> rest = train_losses(second);
    got.insert(got.end(), rest.begin(), rest.end());
    ASSERT_EQ(expected.size(), 30u);
    EXPECT_EQ(got, expected);  // bitwise, not approximately
    ASSERT_TRUE(full.measured.final_val && full.measured.full_val);
    EXPECT_EQ(resumed.measured.final_val, full.measured.final_val);
    EXPECT_EQ(resumed.measured.full_val, full.measured.full_val);
    fs::remove_all(dir);
  }
}

TEST(DataParallel, GlobalBatchNotDivisibleByTheRanksIsAClearError) {
  REQUIRE_TWO_RANKS_AND_CORPUS();
  egm::RunConfig config = tiny(10, 0.0);
  config.train.batch_size = 7;
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  egm::MemorySink sink;
  try {
    egm::Trainer trainer(config, runtime(), *corpus(), sink, &comm);
    ADD_FAILURE() << "a global batch of 7 over 2 ranks was accepted";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train.batch_size 7 is not divisible by the data-parallel degree 2"),
              std::string::npos)
        << e.what();
  }
  comm.barrier();  // neither rank is left waiting in a collective
}

}  // namespace
