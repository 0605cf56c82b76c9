// The kinds of the events table (events.kind), defined once: every writer
// names one of these, and a reader parses the stored text back. The stored
// strings are the ones egm has always written, so an older database reads
// unchanged; text that is not one of them is a DbError naming it, not a guess.
#pragma once

#include <string_view>

namespace egm::db {

enum class EventKind {
  // the sweep (ResultsDb, the coordinator)
  sweep_created,        // a new sweep
  sweep_loaded,         // an existing sweep opened to resume
  sweep_superseded,     // renamed aside by --new-sweep
  sweep_extended,       // its spec grew with --extend
  sweep_merged,         // written by egm merge from several databases (src/db/merge.h)
  recovered,            // attempts a previous coordinator left running, marked interrupted
  coordinator_started,  // a coordinator took the sweep (workers, ranks)
  runs_dir_moved,       // the run folders are under another directory than before
  sweep_done,           // every cell done
  sweep_failed,         // the sweep ended with cells failed for good
  // the coordinator stopped on a signal (Slurm's warning, preemption, Ctrl-C)
  interrupted_sigusr2,
  interrupted_sigterm,
  interrupted_sigint,
  interrupted_sigusr1,
  interrupted_sighup,
  interrupted_signal,  // any other signal
  // an attempt at a cell (ResultsDb::start_attempt / finish_attempt)
  attempt_started,
  attempt_done,
  attempt_failed,
  attempt_interrupted,
  // what a run reported (coordinator/record_mapping.h)
  checkpoint,            // a checkpoint is on disk (step: its step)
  resumed,               // loaded a checkpoint (step: the step it resumed from)
  checkpoint_skipped,    // a checkpoint was unusable
  restart_from_scratch,  // no usable checkpoint although there were some
  unknown_record,        // a record of a kind this coordinator does not know (its JSON as the message)
  // ownership (schema v9, db/ownership.h)
  sweep_taken_over,      // a coordinator took the sweep from a stale owner (the message says whose and why)
  // reuse (schema v11, db/reuse.h)
  run_reused,            // a cell took a finished run of the same identity instead of training (the message says which)
};

const char* to_string(EventKind kind);
// The inverse; throws DbError naming the text and the valid kinds.
EventKind parse_event_kind(std::string_view name);

}  // namespace egm::db
