// Each EventKind's stored name and back; an unknown stored name is refused,
// naming the valid ones.
#include "db/event_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>
#include <string>

#include "util/enum_names.h"

namespace egm::db {
namespace {

// In enum order.
// Stored by name in the events table: a name may be added but never renamed, or old files stop parsing.
constexpr const char* kNames[] = {
    "sweep_created",       "sweep_loaded",        "sweep_superseded",   "sweep_extended",
    "sweep_merged",        "recovered",           "coordinator_started", "runs_dir_moved",     "sweep_done",
    "sweep_failed",        "interrupted_sigusr2", "interrupted_sigterm", "interrupted_sigint",
    "interrupted_sigusr1", "interrupted_sighup",  "interrupted_signal", "attempt_started",
    "attempt_done",        "attempt_failed",      "attempt_interrupted", "checkpoint",
    "resumed",             "checkpoint_skipped",  "restart_from_scratch", "unknown_record",
    "sweep_taken_over", "run_reused"};
static_assert(std::size(kNames) == static_cast<std::size_t>(EventKind::run_reused) + 1,
              "one name per EventKind, in enum order");

}  // namespace

const char* to_string(EventKind kind) { return kNames[static_cast<std::size_t>(kind)]; }

// DbError, not ConfigError: the names are read from a database, not typed by a user.
EventKind parse_event_kind(std::string_view name) { return parse_enum<EventKind, DbError>(name, kNames, "event kind"); }

}  // namespace egm::db
