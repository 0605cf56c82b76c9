// The --until loop (loop.h): launch, look, extend, and how a stop signal or
// a failed launch ends it; and the production launcher.
#include "sequential/loop.h"

#include <fmt/format.h>

#include "sequential/look.h"
#include "util/stop_signal.h"

namespace egm::sequential {

int MpirunLauncher::launch(const LaunchRequest& request) {
  launch::SweepLaunch l = base_;
  l.options.spec_path = request.spec_path;
  l.options.extend = request.extend;
  l.options.new_sweep = request.new_sweep;
  // The child's exit status; a child killed by a signal returns 128 + the signal.
  return relay_.run_child(launch::sweep_launch_command(l));
}

std::optional<db::SweepStatus> sweep_status(const std::string& db_path, const std::string& name) {
  try {
    db::ResultsDb db(db_path, db::OpenMode::read_only);
    const std::optional<db::SweepRow> sweep = db.find_sweep(name);
    if (sweep) return sweep->status;
  } catch (const std::exception&) {
    // no database (the launch never opened it): the launch's own status stands
  }
  return std::nullopt;
}

int run_until(const UntilRun& r, Launcher& launcher, std::ostream& out) {
  const std::string& name = r.spec.name;
  LaunchRequest next{r.spec_path, r.extend, r.new_sweep};
  // Where it goes on from, read again under the caller's lock: the seeds the sweep has.
  // --new-sweep starts afresh: the old sweep's seeds do not carry over.
  const std::vector<uint64_t> seeds = r.new_sweep ? r.spec.seeds : seeds_so_far(r.db_path, r.spec);
  if (seeds != r.spec.seeds) {
    next = {write_spec_with_seeds(r.spec, seeds, r.db_path), /*extend=*/true, /*new_sweep=*/false};
    out << fmt::format("egm sweep --until: sweep {} has {} seeds already; going on from there\n", name, seeds.size())
        << std::flush;
  }
  std::string added;  // the seeds the last look added ("seed 5"), empty before the first launch
  // A stop before the launch about to run: said, and recorded in the look that asked for it.
  auto stopped = [&] {
    const std::string signal = signal_name(launcher.stop_signal());
    const std::string what = added.empty() ? "the first launch" : fmt::format("the next launch ({} not run)", added);
    if (!added.empty()) amend_last_look(r.db_path, name, fmt::format("stopped by {}: {}", signal, what));
    out << fmt::format("egm sweep --until: {} arrived; stopping before {}; run the same command again to resume "
                       "(exit {})\n",
                       signal, what, kExitInterrupted)
        << std::flush;
    return kExitInterrupted;
  };
  for (;;) {
    if (launcher.stop_signal() != 0) return stopped();
    const int status = launcher.launch(next);
    // Interrupted (75) or failed for good (1): the sweep's own exit status; run
    // again to resume. After a stop signal it is read more closely:
    //  - the launch died of the signal (it came as mpirun started, before its
    //    handlers): nothing of it ran;
    //  - the database says interrupted: the coordinator checkpointed (mpirun
    //    answers SIGTERM with 1 whatever its coordinator's 75);
    //  - the database says done: the launch was ending as the signal came; the
    //    look is taken and the loop stops after it.
    if (status != 0) {
      const int signal = launcher.stop_signal();
      if (signal != 0 && status > 128) return stopped();
      const std::optional<db::SweepStatus> ended = signal != 0 ? sweep_status(r.db_path, name) : std::nullopt;
      if (ended == db::SweepStatus::interrupted) {
        out << fmt::format("egm sweep --until: stopped by {}; run the same command again to resume (exit {})\n",
                           signal_name(signal), kExitInterrupted)
            << std::flush;
        return kExitInterrupted;
      }
      if (ended != db::SweepStatus::done) return status;
    }
    // Only after a launch that ended done (or done as a signal came): a look needs every cell's result.
    const LookOutcome look = look_and_decide(r.options, r.claims, r.db_path, r.spec, out);
    if (look.stop) return 0;
    added = look.added;
    if (launcher.stop_signal() != 0) return stopped();
    next = {write_spec_with_seeds(r.spec, look.next_seeds, r.db_path), /*extend=*/true,
            /*new_sweep=*/false};  // the sweep this command started, extended
  }
}

}  // namespace egm::sequential
