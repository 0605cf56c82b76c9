// The launch line (src/launch/launch_command.h) that egm sweep runs and egm
// submit writes into the batch script: its shape, the launcher chosen for one
// host (no ssh needed) against a Slurm job or named hosts, and its refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "launch/launch_command.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;
using namespace egm::launch;

// A folder holding stand-ins for egm-coordinator and egm-worker (only their existence is checked).
class LaunchCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = fs::temp_directory_path() / ("egm_launch_command_" + std::to_string(::getpid()));
    fs::create_directories(bin_);
    std::ofstream(bin_ / "egm-coordinator") << "";
    std::ofstream(bin_ / "egm-worker") << "";
  }
  void TearDown() override { fs::remove_all(bin_); }

  SweepLaunch launch() const {
    SweepLaunch l;
    l.options.spec_path = "experiments/tiny.json";
    l.options.db_path = "runs/egm.sqlite";
    l.options.threads_per_worker = 2;
    l.options.device = egm::parse_device_name("cuda");
    l.workers = 3;
    l.data = "/data/input.txt";
    l.bin_dir = bin_;
    return l;
  }
  fs::path bin_;
};

// The index of the first occurrence of `words` as a contiguous run in `cmd`, or -1.
long find_run(const std::vector<std::string>& cmd, const std::vector<std::string>& words) {
  const auto it = std::search(cmd.begin(), cmd.end(), words.begin(), words.end());
  return it == cmd.end() ? -1 : static_cast<long>(it - cmd.begin());
}

TEST_F(LaunchCommandTest, OneHostStartsItsRanksWithoutARemoteAgent) {
  const std::vector<std::string> cmd = sweep_launch_command(launch());
  const std::string cwd = fs::current_path().string();
  const std::vector<std::string> expected{
      "mpirun", "-q", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=2", "-x",
      "OPENBLAS_NUM_THREADS=2", "--mca", "plm", "isolated", "-np", "1", (bin_ / "egm-coordinator").string(),
      cwd + "/experiments/tiny.json", "--db", cwd + "/runs/egm.sqlite", "--runs-dir", cwd + "/runs",
      "--threads-per-worker", "2", "--device", "cuda", "--view", "plain", ":", "-np", "3",
      (bin_ / "egm-worker").string(), "--data", "/data/input.txt"};
  EXPECT_EQ(cmd, expected);
}

TEST_F(LaunchCommandTest, ASlurmJobKeepsMpirunsOwnLauncher) {
  SweepLaunch l = launch();
  l.hosts = RankHosts::slurm_job;
  const std::vector<std::string> cmd = sweep_launch_command(l);
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "isolated"), 0);
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "plm"), 0);
  // Otherwise the same line.
  std::vector<std::string> one_host = sweep_launch_command(launch());
  one_host.erase(one_host.begin() + find_run(one_host, {"--mca", "plm", "isolated"}),
                 one_host.begin() + find_run(one_host, {"--mca", "plm", "isolated"}) + 3);
  EXPECT_EQ(cmd, one_host);
}

TEST_F(LaunchCommandTest, NamedHostsOrTheUsersOwnLauncherChoiceWin) {
  for (const std::string args : {"--host a,b", "-H a", "--hostfile hosts.txt", "--machinefile m"}) {
    SweepLaunch l = launch();
    l.mpirun_args = args;
    const std::vector<std::string> cmd = sweep_launch_command(l);
    EXPECT_EQ(find_run(cmd, {"plm", "isolated"}), -1) << args;
  }
  SweepLaunch l = launch();
  l.mpirun_args = "--mca plm rsh --mca plm_rsh_agent '/opt/my agent.sh'";
  const std::vector<std::string> cmd = sweep_launch_command(l);
  EXPECT_EQ(find_run(cmd, {"plm", "isolated"}), -1);
  EXPECT_GE(find_run(cmd, {"--mca", "plm", "rsh", "--mca", "plm_rsh_agent", "/opt/my agent.sh", "-np", "1"}), 0);
  // Other launcher arguments leave the choice to egm, placed before the ranks.
  l.mpirun_args = "--mca btl self,tcp";
  const std::vector<std::string> with_btl = sweep_launch_command(l);
  EXPECT_GE(find_run(with_btl, {"--mca", "plm", "isolated", "--mca", "btl", "self,tcp", "-np", "1"}), 0);
}

TEST_F(LaunchCommandTest, TheLineQuotesWhatAShellWouldSplit) {
  SweepLaunch l = launch();
  l.data = "/my data/it's.txt";
  const std::string line = shell_command_line(sweep_launch_command(l));
  EXPECT_EQ(line.rfind("mpirun -q --oversubscribe --bind-to none -x OMP_NUM_THREADS=2", 0), 0u) << line;
  EXPECT_NE(line.find("--mca plm isolated -np 1 "), std::string::npos) << line;
  EXPECT_NE(line.find(" --data '/my data/it'\\''s.txt'"), std::string::npos) << line;
}

// A sequential sweep's job runs egm sweep itself, with the launch flags it
// would pass the coordinator, the workers and corpus it would give mpirun,
// and the extra arguments (--until ...) last.
TEST_F(LaunchCommandTest, TheSweepVerbLineCarriesTheLaunchAndTheExtraArguments) {
  std::ofstream(bin_ / "egm") << "";
  SweepLaunch l = launch();
  l.mpirun_args = "--mca btl self,vader";
  const std::vector<std::string> cmd = sweep_verb_command(l, {"--until", "ega", "--max-seeds", "6"});
  const std::string cwd = fs::current_path().string();
  const std::vector<std::string> expected{
      (bin_ / "egm").string(), "sweep", cwd + "/experiments/tiny.json", "--db", cwd + "/runs/egm.sqlite",
      "--runs-dir", cwd + "/runs", "--threads-per-worker", "2", "--device", "cuda", "--workers", "3", "--data",
      "/data/input.txt", "--view", "plain", "--mpirun-args", "--mca btl self,vader", "--until", "ega",
      "--max-seeds", "6"};
  EXPECT_EQ(cmd, expected);
  fs::remove(bin_ / "egm");
  EXPECT_THROW(sweep_verb_command(launch(), {}), egm::IoError);
}

TEST_F(LaunchCommandTest, FewerWorkersThanACellNeedsIsRefused) {
  SweepLaunch l = launch();
  l.workers = 1;
  l.largest_cell_ranks = 2;
  try {
    sweep_launch_command(l);
    FAIL() << "no throw";
  } catch (const egm::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "experiments/tiny.json: some cells need 2 workers (data_parallel) but --workers is 1; pass "
                 "--workers 2 or more");
  }
}

TEST_F(LaunchCommandTest, MissingBinariesAndBadQuotesAreRefused) {
  SweepLaunch l = launch();
  l.mpirun_args = "-x 'A=b";
  EXPECT_THROW(sweep_launch_command(l), egm::ConfigError);
  fs::remove(bin_ / "egm-worker");
  try {
    sweep_launch_command(launch());
    FAIL() << "no throw";
  } catch (const egm::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("egm-worker not found"), std::string::npos) << e.what();
  }
}

TEST(LauncherArgs, SplitLikeAShellAndFindHosts) {
  EXPECT_EQ(split_launcher_args("--mca btl self,vader -x 'A=b c' \"d e\""),
            (std::vector<std::string>{"--mca", "btl", "self,vader", "-x", "A=b c", "d e"}));
  EXPECT_TRUE(split_launcher_args("").empty());
  EXPECT_TRUE(names_hosts(split_launcher_args("--oversubscribe --host n1:4")));
  EXPECT_FALSE(names_hosts(split_launcher_args("--oversubscribe -x HOST=n1")));
}

}  // namespace
