// The sequential sweep's loop (egm sweep --until): launch the sweep's seeds,
// look (look.h), and either stop or launch again with the next batch of
// seeds (the spec extended, --extend), until every claim is settled or the
// budget is spent. Looking after every batch is what the sequence is valid
// for: the decision holds at level alpha however many looks were taken. A run
// of the same command resumes from the seeds the sweep already has.
//
// The loop drives its launches through a Launcher: a child mpirun in
// production (MpirunLauncher, with the stop-signal relay), a fake that writes
// the cells' results itself in tests (tests/sequential). A stop signal
// (Ctrl-C, SIGTERM, Slurm's SIGUSR2) stops it before it trains more seeds,
// recorded in the look that asked for them.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "launch/launch_command.h"
#include "sequential/signal_relay.h"
#include "sequential/until_options.h"
#include "spec/experiment_spec.h"

namespace egm::sequential {

// One launch: the spec file to run, and how the sweep takes it.
struct LaunchRequest {
  std::string spec_path;
  bool extend = false;     // --extend: the sweep grows to this spec (more seeds)
  bool new_sweep = false;  // --new-sweep: the sweep starts anew (the first launch only)
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Runs one launch to its end: its exit status (0 every cell done, 1 a cell
  // failed for good, 2 an error, 75 interrupted; mpirun answers a relayed
  // SIGINT or SIGTERM with 1), or 128 + N when signal N ended it.
  virtual int launch(const LaunchRequest& request) = 0;
  // The stop signal that arrived (0 none); one during a launch was passed on to it.
  virtual int stop_signal() const = 0;
};

// Production: mpirun ... egm-coordinator ... : ... egm-worker as a child
// (launch/launch_command.h), with the stop-signal relay installed while it lives.
class MpirunLauncher : public Launcher {
 public:
  explicit MpirunLauncher(launch::SweepLaunch base) : base_(std::move(base)) {}
  int launch(const LaunchRequest& request) override;
  int stop_signal() const override { return StopRelay::signal(); }

 private:
  launch::SweepLaunch base_;
  StopRelay relay_;
};

// What the loop is given: the checked options and claims (check_until), the
// spec as loaded (its seeds the first batch), and the launch flags as given.
struct UntilRun {
  UntilOptions options;
  std::vector<std::string> claims;
  spec::ExperimentSpec spec;
  std::string spec_path;
  std::string db_path;
  bool extend = false;
  bool new_sweep = false;
};

// The loop, to its end; what it says goes to `out`. Its exit status: 0 (every
// claim settled, or the budget spent), kExitInterrupted (a stop signal: the
// same command resumes), or a failed launch's own (1 a cell failed for good,
// 2 an error). The caller holds the SequenceLock.
int run_until(const UntilRun& run, Launcher& launcher, std::ostream& out);

// The sweep's status in the database after a launch, if it can be read.
std::optional<db::SweepStatus> sweep_status(const std::string& db_path, const std::string& name);

}  // namespace egm::sequential
