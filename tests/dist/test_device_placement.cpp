// GPU placement from the local rank, with fake environments: which variable
// wins, bad values, and the round-robin table with packing (computed by hand
// below from device = r % G, slot = r / G).
#include <gtest/gtest.h>

#include <set>

#include "dist/device_placement.h"
#include "launch/gpu_placement.h"
#include "util/error.h"

namespace {

using egm::local_rank_from_env;
using egm::launch::place_on_gpu;
using egm::launch::require_gpu_slots;

TEST(LocalRankFromEnv, OpenMpiWinsOverSlurm) {
  auto r = local_rank_from_env({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"SLURM_LOCALID", "1"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(LocalRankFromEnv, SlurmWhenOpenMpiIsAbsent) {
  auto r = local_rank_from_env({{"SLURM_LOCALID", "2"}, {"SLURM_PROCID", "7"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 2);
  EXPECT_EQ(r->source, "SLURM_LOCALID");
}

TEST(LocalRankFromEnv, NothingWhenNoLauncherSetIt) {
  EXPECT_FALSE(local_rank_from_env(std::map<std::string, std::string>{}).has_value());
  EXPECT_FALSE(local_rank_from_env({{"OMPI_COMM_WORLD_RANK", "1"}, {"PMI_RANK", "0"}}).has_value());
}

TEST(LocalRankFromEnv, BadValuesAreConfigErrorsNamingTheVariable) {
  for (const std::string bad : {"", "abc", "-1", "3x", "1.5", "99999999999"}) {
    try {
      local_rank_from_env({{"SLURM_LOCALID", bad}});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const egm::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_LOCALID='" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(PlaceOnGpu, RoundRobinWithPacking) {
  // 2 GPUs, 2 runs per GPU: local ranks 0..3 -> (device, slot) = (0,0) (1,0) (0,1) (1,1).
  const std::vector<std::pair<int, int>> expected{{0, 0}, {1, 0}, {0, 1}, {1, 1}};
  for (int r = 0; r < 4; ++r) {
    auto p = place_on_gpu(r, /*visible_gpus=*/2, /*runs_per_gpu=*/2);
    EXPECT_EQ(std::make_pair(p.device, p.slot), expected[static_cast<size_t>(r)]) << "local rank " << r;
  }
  // One GPU shared by three runs: all on device 0, slots 0, 1, 2.
  for (int r = 0; r < 3; ++r) {
    auto p = place_on_gpu(r, 1, 3);
    EXPECT_EQ(p.device, 0);
    EXPECT_EQ(p.slot, r);
  }
  // No packing: one worker per GPU, device = local rank.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(place_on_gpu(r, 8, 1).device, r);
}

TEST(PlaceOnGpu, ConsecutiveWorkersOfADataParallelRunGetDistinctGpus) {
  // NCCL needs one GPU per rank; a k-rank run takes k consecutive workers.
  const int gpus = 4, per_gpu = 3;
  for (int k = 2; k <= gpus; ++k)
    for (int first = 0; first + k <= gpus * per_gpu; ++first) {
      std::set<int> devices;
      for (int r = first; r < first + k; ++r) devices.insert(place_on_gpu(r, gpus, per_gpu).device);
      EXPECT_EQ(devices.size(), static_cast<size_t>(k)) << "k=" << k << " from local rank " << first;
    }
}

TEST(PlaceOnGpu, MoreWorkersThanThePackingAllowsIsAConfigError) {
  EXPECT_THROW(place_on_gpu(4, 2, 2), egm::ConfigError);
  EXPECT_THROW(place_on_gpu(1, 1, 1), egm::ConfigError);
  EXPECT_THROW(place_on_gpu(0, 0, 1), egm::ConfigError);
  EXPECT_THROW(place_on_gpu(0, 2, 0), egm::ConfigError);
  EXPECT_THROW(place_on_gpu(-1, 2, 1), egm::ConfigError);
  try {
    place_on_gpu(5, 2, 2);
    ADD_FAILURE() << "no error";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("local ranks 0..3"), std::string::npos) << e.what();
  }
}

TEST(RequireGpuSlots, CountsSlotsAsGpusTimesRunsPerGpu) {
  EXPECT_NO_THROW(require_gpu_slots(4, 1, 4, "h"));   // four runs packed on one GPU
  EXPECT_NO_THROW(require_gpu_slots(8, 4, 2, "h"));
  EXPECT_THROW(require_gpu_slots(5, 1, 4, "h"), egm::ConfigError);
  try {
    require_gpu_slots(9, 4, 2, "node7");
    ADD_FAILURE() << "no error";
  } catch (const egm::ConfigError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("9 workers on node7 need 5 GPUs at runs_per_gpu 2, but it has 4"), std::string::npos) << text;
    EXPECT_NE(text.find("--workers 8"), std::string::npos) << text;
  }
  try {
    require_gpu_slots(1, 0, 1, "login1");
    ADD_FAILURE() << "no error";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU is visible on login1"), std::string::npos) << e.what();
  }
}

}  // namespace
