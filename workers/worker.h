// The sweep worker (ranks 1..N): says HELLO, then trains each cell the
// coordinator assigns and reports how it ended, until SHUTDOWN. The protocol
// is written down in src/protocol/protocol.h.
//
// A run stops early, checkpointed, when the coordinator sends STOP or
// SHUTDOWN, or when this process receives SIGUSR2/SIGTERM/SIGINT (the flag of
// util/stop_signal.h, which main() installs): the worker never dies of the
// signal; it reports RESULT "interrupted" (with the signal) and waits for
// SHUTDOWN. Every exception of a run becomes a FAILED message with its text
// (one line), where it was raised, the full text and whether a retry could
// help (failure_report.h); the full text is also appended to the run folder's
// errors.log. The worker then takes the next cell.
//
// An ASSIGN whose group lists k > 1 ranks goes to each of them: they form a
// RunGroup (run_group.h) and train the run together; group[0] sends the
// records and writes checkpoints (the trainer records on its rank 0 only),
// and every member answers RESULT or FAILED. Stopping is agreed every step
// over the group, so a STOP or signal seen by any member stops them all at
// the same step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/corpus.h"
#include "protocol/protocol.h"
#include "protocol/transport.h"
#include "train/trainer.h"
#include "workers/run_group.h"

namespace egm::worker {

struct WorkerOptions {
  std::string data_path;  // --data; empty: $EGM_DATA, else the default cache
};

class Worker {
 public:
  // `make_group` forms the group of a k-rank run (mpi_run_groups() in the
  // binary); without one, an ASSIGN for more than one rank fails.
  Worker(WorkerOptions options, protocol::Transport& transport, RunGroupFactory make_group = {});
  // Until SHUTDOWN: 0. A protocol breakdown (e.g. another protocol version):
  // an error on stderr and 2.
  int run();

 private:
  protocol::Hello hello();
  void train(const protocol::Assign& assign);
  // The trainer's should_stop: a local signal, or STOP/SHUTDOWN from the
  // coordinator; in a group, whether any member has one (collective).
  bool should_stop(RunGroup* group);
  bool told_to_stop();
  void send(const protocol::Message& message);

  WorkerOptions options_;
  protocol::Transport& transport_;
  RunGroupFactory make_group_;
  std::optional<Corpus> corpus_;
  std::string corpus_error_;
  bool stop_ = false;      // STOP for the current run
  bool shutdown_ = false;  // SHUTDOWN arrived (while training)
  int signal_ = 0;         // the local signal that stopped the current run
  int64_t polls_ = 0;      // should_stop calls of the current run (one before each step)
};

}  // namespace egm::worker
