// The launch flags added to a CLI11 app once, written back as flags for the
// next process, and a sweep's device resolved (--device, else the spec's, else cpu).
#include "launch/launch_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "run/device.h"

namespace egm::launch {
namespace {
// --stop-timeout at most: a week.
constexpr double kMaxStopTimeoutS = 7 * 24 * 3600;

// A whole number of at least `least` (positive_count, non_negative_count).
CLI::Validator count_at_least(int64_t least, const std::string& type_note) {
  return CLI::Validator(
      [least](std::string& value) {
        int64_t n = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n, 10);
        if (error != std::errc() || end != value.data() + value.size())
          return fmt::format("'{}' is not a whole number", value);
        return n >= least ? std::string() : fmt::format("'{}' must be at least {}", value, least);
      },
      type_note);
}
}  // namespace

CLI::Option* add_device_option(CLI::App& app, std::function<void(const DeviceName&)> set, const std::string& help) {
  // Parsed here, once: everything after the command line holds a DeviceName.
  return app
      .add_option_function<std::string>(
          "--device", [set = std::move(set)](const std::string& value) { set(parse_device_name(value, "")); }, help)
      ->check([](const std::string& value) {
        try {
          parse_device_name(value, "");
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());  // CLI11 puts the flag's name before it
        }
      });
}

CLI::Validator positive_count() { return count_at_least(1, "POSITIVE"); }
CLI::Validator non_negative_count() { return count_at_least(0, ""); }

CLI::Option* add_checkpoint_every_option(CLI::App& app, int64_t& interval) {
  return app.add_option("--checkpoint-every", interval, "also checkpoint every N steps (default, or 0: at each eval)")
      ->check(non_negative_count());
}

void add_launch_flags(CLI::App& app, LaunchOptions& o) {
  app.add_option("spec", o.spec_path, "experiment spec (JSON; experiments/README.md)")->required();
  app.add_option("--db", o.db_path, "results database (default: $EGM_DB, else runs/egm.sqlite)");
  app.add_option("--runs-dir", o.runs_dir, "run folders: RUNS_DIR/<sweep>/<cell>-<config hash>")
      ->capture_default_str();
  CLI::Option* new_sweep =
      app.add_flag("--new-sweep", o.new_sweep, "the spec changed: keep the old sweep as NAME@ID and start a new one");
  app.add_flag("--extend", o.extend,
               "the spec only adds cells (more seeds, variants or grid values): the sweep takes it and keeps the "
               "cells it has; refused if a cell would change or go")
      ->excludes(new_sweep);
  app.add_flag("--takeover", o.takeover,
               "take the sweep from its owner on this host whose process is alive but has stopped writing its "
               "heartbeat (a stopped or hung coordinator); refused while the heartbeat is fresh, and when nobody "
               "owns the sweep (coordinator/README.md, \"Ownership\")")
      ->excludes(new_sweep);
  CLI::Option* reuse_from =
      app.add_option("--reuse-from", o.reuse_from,
                     "another egm database (read-only): a cell whose identity matches a finished run there takes "
                     "it, its rows copied in as egm merge copies them; repeatable")
          ->type_name("DB")
          ->allow_extra_args(false);
  app.add_flag("--no-reuse", o.no_reuse,
               "train every cell, even one whose identity (run config, corpus, device kind, world size, numerics "
               "version) matches a finished run elsewhere in the database; by default such a cell takes that run's "
               "results (as the spec's \"reuse\": false)")
      ->excludes(reuse_from);
  app.add_option("--threads-per-worker", o.threads_per_worker, "intra-op threads per worker")
      ->capture_default_str()
      ->check(positive_count());
  add_device_option(app, [&o](const DeviceName& d) { o.device = d; },
                    "cpu, cuda (GPUs dealt out to the workers, runs_per_gpu per GPU) or cuda:N (default: the spec's "
                    "\"device\", else cpu)");
  add_checkpoint_every_option(app, o.checkpoint_interval);
  app.add_option("--stop-timeout", o.stop_timeout_s, "seconds to wait for checkpoints after a stop signal")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& value) {
            // A finite decimal by now (cli/number_flags.h); the coordinator turns it into milliseconds.
            const double seconds = std::strtod(value.c_str(), nullptr);
            return seconds >= 0 && seconds <= kMaxStopTimeoutS
                       ? std::string()
                       : fmt::format("'{}' must be from 0 to {} seconds (a week)", value, kMaxStopTimeoutS);
          },
          ""));
  // Checked where the spec is read (spec/grid.h), before anything is written.
  app.add_option("--grid", o.grid,
                 "a grid axis over a run-config field, PATH=V1,V2,... or PATH=range(a,b[,step]) (stop excluded), "
                 "e.g. train.lr=1e-3,3e-4; repeatable; replaces the spec's axis of that path")
      ->allow_extra_args(false)
      ->type_name("PATH=VALUES");
}

// Only the flags that differ from the defaults: the printed command stays short, and the defaults of the egm that runs it apply.
std::vector<std::string> launch_flags(const LaunchOptions& o) {
  const LaunchOptions d;
  std::vector<std::string> args{o.spec_path};
  if (!o.db_path.empty()) args.insert(args.end(), {"--db", o.db_path});
  if (o.runs_dir != d.runs_dir) args.insert(args.end(), {"--runs-dir", o.runs_dir});
  if (o.new_sweep) args.push_back("--new-sweep");
  if (o.extend) args.push_back("--extend");
  if (o.takeover) args.push_back("--takeover");
  if (o.no_reuse) args.push_back("--no-reuse");
  for (const auto& path : o.reuse_from) args.insert(args.end(), {"--reuse-from", path});
  if (o.threads_per_worker != d.threads_per_worker)
    args.insert(args.end(), {"--threads-per-worker", std::to_string(o.threads_per_worker)});
  if (o.device) args.insert(args.end(), {"--device", o.device->str()});
  if (o.checkpoint_interval != d.checkpoint_interval)
    args.insert(args.end(), {"--checkpoint-every", std::to_string(o.checkpoint_interval)});
  if (o.stop_timeout_s != d.stop_timeout_s) args.insert(args.end(), {"--stop-timeout", fmt::format("{}", o.stop_timeout_s)});
  for (const auto& axis : o.grid) args.insert(args.end(), {"--grid", axis});
  return args;
}

// The flag beats the spec's "device", which beats the CPU default.
DeviceName resolve_device(const std::optional<DeviceName>& flag, const std::optional<DeviceName>& spec_device) {
  if (flag) return *flag;
  if (spec_device) return *spec_device;
  return DeviceName{};
}

}  // namespace egm::launch
