// Whether a coordinator may take a sweep over: the owner's heartbeat age against
// the staleness limit, and on this host whether its pid is still alive (not a zombie).
#include "db/ownership.h"

#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "util/error.h"

namespace egm::db {
namespace {

std::string describe(const SweepOwner& o) {
  std::string s = fmt::format("pid {} on {}", o.pid, o.host);
  if (o.slurm_job) s += fmt::format(" (Slurm job {})", *o.slurm_job);
  return s;
}

std::string heartbeat_age(const SweepOwner& o, double now) {
  if (!o.heartbeat) return "no heartbeat yet";
  if (*o.heartbeat > now) return fmt::format("last heartbeat {:.0f} s in the future", *o.heartbeat - now);
  return fmt::format("last heartbeat {:.0f} s ago", now - *o.heartbeat);
}

// The largest pid this host can give a process (/proc/sys/kernel/pid_max;
// Linux allows at most 2^22): a stored pid above it names no process here.
int64_t pid_max() {
  std::ifstream in("/proc/sys/kernel/pid_max");
  int64_t v = 0;
  if (in >> v && v > 0) return v;
  return int64_t{1} << 22;
}

}  // namespace

// EGM_STALE_AFTER_S overrides the limit (tests shorten it); a malformed value is refused rather than ignored.
double owner_stale_after_s() {
  const char* env = std::getenv("EGM_STALE_AFTER_S");
  if (env == nullptr || *env == '\0') return kOwnerStaleAfterS;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  EGM_REQUIRE(end != env && *end == '\0' && std::isfinite(v) && v > 0, ConfigError,
              "EGM_STALE_AFTER_S='{}': expected a positive number of seconds", env);
  return v;
}

// At least three heartbeats within the staleness limit, so one late write never makes a live owner look stale.
double owner_heartbeat_interval_s() { return std::min(5.0, owner_stale_after_s() / 3); }

TakeoverDecision decide_takeover(const std::optional<SweepOwner>& owner, double now, const Claimant& me,
                                 bool owner_pid_alive, double stale_after_s) {
  if (!owner) return {Takeover::claim, ""};
  const SweepOwner& o = *owner;
  const bool here = o.host == me.host;
  // An owner that has not written a heartbeat yet is judged by the time it started.
  const double age = o.heartbeat ? now - *o.heartbeat : now - o.started_at;
  // A heartbeat from the future by more than the limit is no sign of life: no
  // clock between the hosts differs that much (the limit must exceed their
  // skew), so it is a forged row or a broken clock, and counts as stale.
  const bool fresh = age <= stale_after_s && age >= -stale_after_s;
  // On this host the pid is proof: a dead owner is taken over at once, however fresh its heartbeat.
  if (here && !owner_pid_alive)
    return {Takeover::take_over, fmt::format("taking over from the coordinator {}: that process is gone ({})",
                                             describe(o), heartbeat_age(o, now))};
  // A requeued Slurm job may restart on another node; its earlier allocation (same job id) is gone by then.
  if (!here && me.slurm_job && o.slurm_job && *me.slurm_job == *o.slurm_job)
    return {Takeover::take_over,
            fmt::format("taking over from the coordinator {}: an earlier allocation of this Slurm job ({})",
                        describe(o), heartbeat_age(o, now))};
  if (here) {
    if (!fresh && me.takeover)
      return {Takeover::take_over, fmt::format("taking over from the coordinator {} (--takeover): its process is alive "
                                               "but has not written a heartbeat for {:.0f} s",
                                               describe(o), age)};
    // On another host the pid cannot be checked: only the heartbeat's age can say the owner is gone.
    if (!fresh)
      return {Takeover::refuse,
              fmt::format("the coordinator {} owns it; its process is alive but its {} (stopped or hung?): end it, "
                          "or pass --takeover to take the sweep from it",
                          describe(o), heartbeat_age(o, now))};
    return {Takeover::refuse,
            fmt::format("the coordinator {} owns it ({}); wait for it to finish, or stop it first (kill -TERM {}); "
                        "should it hang, --takeover takes the sweep once its heartbeat is {:g} s old",
                        describe(o), heartbeat_age(o, now), o.pid, stale_after_s)};
  }
  if (!fresh)
    return {Takeover::take_over, fmt::format("taking over from the coordinator {}: {}, over the {:g} s limit",
                                             describe(o), heartbeat_age(o, now), stale_after_s)};
  return {Takeover::refuse,
          fmt::format("the coordinator {} owns it ({}); it is stale only after {:g} s without one, and then egm takes "
                      "the sweep over by itself (run the same command again then; --takeover cannot take a sweep "
                      "whose owner on another host is alive)",
                      describe(o), heartbeat_age(o, now), stale_after_s)};
}

bool process_alive(int64_t pid) {
  // kill() takes a pid_t: 2^32 + 1 would be truncated to 1 (init, always alive).
  if (pid <= 0 || pid > pid_max()) return false;
  // Signal 0 checks existence only; EPERM (another user's process) still means it exists.
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  // A process killed but not reaped yet (a zombie) has exited: its state is Z.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: kill() said it exists
  // The state follows the command name in parentheses, which may itself hold spaces or ')': search from the end.
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  const char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace egm::db
