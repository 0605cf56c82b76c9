// One live coordinator per sweep (schema v9, coordinator/README.md "Ownership").
// The coordinator that runs a sweep owns it: sweeps.owner_host, owner_pid,
// owner_started_at (when it claimed it), owner_slurm_job and owner_heartbeat.
// A second coordinator decides with decide_takeover whether it may claim the
// sweep, must refuse, or takes over an owner that is gone. The rule is a pure
// function of what the database says, the reader's clock and (for an owner on
// this host) whether its process still exists, so it is tested on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace egm::db {

// Who holds a sweep, as stored.
struct SweepOwner {
  std::string host;
  int64_t pid = 0;
  double started_at = 0;  // when it claimed the sweep (its clock, UNIX s)
  std::optional<std::string> slurm_job;
  std::optional<double> heartbeat;  // its last heartbeat (its clock)
};

// The coordinator that wants the sweep.
struct Claimant {
  std::string host;
  int64_t pid = 0;
  std::optional<std::string> slurm_job;  // SLURM_JOB_ID when it runs in a job
  bool takeover = false;                 // --takeover
};

enum class Takeover {
  claim,      // nobody owns the sweep
  take_over,  // the owner is gone: claim it and say so (`line`)
  refuse,     // the owner is alive (or may be): a ConfigError with `line`
};

struct TakeoverDecision {
  Takeover kind = Takeover::claim;
  std::string line;  // take_over: what is taken over and why; refuse: the owner and how to go on
};

// The default limit without a heartbeat before an owner on another host is
// stale. It must exceed the largest clock difference between the hosts that
// share a database: the heartbeat is written with the owner's clock and read
// with the reader's (coordinator/README.md, "Ownership").
inline constexpr double kOwnerStaleAfterS = 60;
// kOwnerStaleAfterS, or $EGM_STALE_AFTER_S (tests set a few seconds); a value
// that is not a positive number is a ConfigError.
double owner_stale_after_s();
// How often the owner refreshes its heartbeat: 5 s, or a third of the limit when that is less.
double owner_heartbeat_interval_s();

// The rule, in order:
//  - no owner: claim;
//  - the owner on this host and its process gone (`owner_pid_alive` false):
//    take over at once (a kill -9, a crash);
//  - the owner in the same Slurm job (an earlier allocation of a requeued job;
//    Slurm runs one allocation of a job at a time) and not a live process on
//    this host: take over at once;
//  - the owner on this host, its process alive: refuse while its heartbeat is
//    fresh; once it is older than `stale_after_s` (a stopped or hung process)
//    take over only with --takeover;
//  - the owner on another host: take over once its heartbeat is older than
//    `stale_after_s`, refuse while it is fresh (--takeover or not).
// `now` is the reader's clock; `owner_pid_alive` matters only for an owner on this host.
TakeoverDecision decide_takeover(const std::optional<SweepOwner>& owner, double now, const Claimant& me,
                                 bool owner_pid_alive, double stale_after_s);

// Whether process `pid` exists on this host and has not exited (a zombie has).
bool process_alive(int64_t pid);

}  // namespace egm::db
