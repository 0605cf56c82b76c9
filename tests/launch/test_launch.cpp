// The launch description (src/launch): device names, and the flags egm submit,
// egm sweep and egm-coordinator share surviving the trip from one process's
// command line to the next.
#include <gtest/gtest.h>

#include <algorithm>

#include "launch/launch_options.h"
#include "util/error.h"

namespace {

using namespace egm::launch;
using egm::DeviceName;
using egm::parse_device_name;

TEST(DeviceName, ParsesTheThreeForms) {
  EXPECT_EQ(parse_device_name("cpu").str(), "cpu");
  EXPECT_FALSE(parse_device_name("cpu").is_cuda());
  EXPECT_EQ(parse_device_name("cuda").index, -1);
  EXPECT_TRUE(parse_device_name("cuda").is_cuda());
  EXPECT_EQ(parse_device_name("cuda:7").index, 7);
  EXPECT_EQ(parse_device_name("cuda:7").str(), "cuda:7");
}

TEST(DeviceName, RefusesEverythingElseNamingTheFlag) {
  for (const char* bad : {"tpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1:2", "", "mps", "cuda:123456"}) {
    try {
      parse_device_name(bad, "--device");
      ADD_FAILURE() << bad << " accepted";
    } catch (const egm::ConfigError& e) {
      const std::string text = e.what();
      EXPECT_EQ(text.rfind("--device: unknown device", 0), 0u) << text;
      EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    }
  }
}

TEST(DeviceName, CudaOnACpuOnlyBuildIsRefused) {
  EXPECT_NO_THROW(egm::require_buildable(parse_device_name("cpu")));
  if (egm::built_with_cuda()) {
    EXPECT_NO_THROW(egm::require_buildable(parse_device_name("cuda:0")));
  } else {
    EXPECT_THROW(egm::require_buildable(parse_device_name("cuda")), egm::ConfigError);
  }
}

TEST(ResolveDevice, FlagBeatsSpecBeatsCpu) {
  const DeviceName cpu, cuda = parse_device_name("cuda"), cuda1 = parse_device_name("cuda:1");
  EXPECT_EQ(resolve_device(std::nullopt, std::nullopt), cpu);
  EXPECT_EQ(resolve_device(std::nullopt, cuda), cuda);
  EXPECT_EQ(resolve_device(cpu, cuda), cpu);
  EXPECT_EQ(resolve_device(cuda1, cpu), cuda1);
}

// Parses `args` with the launch flags as a front door would.
LaunchOptions parse(std::vector<std::string> args) {
  CLI::App app;
  LaunchOptions o;
  add_launch_flags(app, o);
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
  app.parse(args);
  return o;
}

TEST(LaunchFlags, EveryFieldSurvivesTheTripToTheNextProcess) {
  LaunchOptions o;
  o.spec_path = "experiments/tiny.json";
  o.db_path = "/tmp/x.sqlite";
  o.runs_dir = "/scratch/runs";
  o.new_sweep = true;
  o.threads_per_worker = 3;
  o.device = parse_device_name("cuda");
  o.checkpoint_interval = 25;
  o.stop_timeout_s = 7.5;
  o.grid = {"train.lr=1e-3,3e-4", "model.dropout=range(0,0.3,0.1)"};
  const LaunchOptions back = parse(launch_flags(o));
  EXPECT_EQ(back.spec_path, o.spec_path);
  EXPECT_EQ(back.db_path, o.db_path);
  EXPECT_EQ(back.runs_dir, o.runs_dir);
  EXPECT_EQ(back.new_sweep, o.new_sweep);
  EXPECT_EQ(back.threads_per_worker, o.threads_per_worker);
  EXPECT_EQ(back.device, o.device);
  EXPECT_EQ(back.checkpoint_interval, o.checkpoint_interval);
  EXPECT_EQ(back.stop_timeout_s, o.stop_timeout_s);
  EXPECT_EQ(back.grid, o.grid);  // each axis one argument, commas and parentheses intact
}

TEST(LaunchFlags, DefaultsAreNotRepeated) {
  LaunchOptions o;
  o.spec_path = "s.json";
  EXPECT_EQ(launch_flags(o), std::vector<std::string>{"s.json"});
}

TEST(LaunchFlags, ExtendSurvivesTheTripAndExcludesNewSweep) {
  LaunchOptions o;
  o.spec_path = "s.json";
  o.extend = true;
  const LaunchOptions back = parse(launch_flags(o));
  EXPECT_TRUE(back.extend);
  EXPECT_FALSE(back.new_sweep);
  EXPECT_THROW(parse({"s.json", "--extend", "--new-sweep"}), CLI::ExcludesError);
}

TEST(LaunchFlags, ABadDeviceIsAParseError) {
  EXPECT_THROW(parse({"s.json", "--device", "tpu"}), CLI::ValidationError);
}

TEST(LaunchFlags, TheDeviceIsParsedOnceIntoItsType) {
  EXPECT_FALSE(parse({"s.json"}).device);  // none: the spec's, else cpu
  const LaunchOptions o = parse({"s.json", "--device", "cuda:3"});
  ASSERT_TRUE(o.device);
  EXPECT_TRUE(o.device->is_cuda());
  EXPECT_EQ(o.device->index, 3);
}

}  // namespace
