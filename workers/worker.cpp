// The worker's loop: HELLO, then each ASSIGN trained (joining its group when it
// has several ranks) and answered with RESULT or FAILED, until SHUTDOWN.
#include "workers/worker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <thread>

#include "config/run_config.h"
#include "data/corpus_source.h"
#include "dist/make_communicator.h"
#include "train/cuda_memory.h"
#include "egm/version_info.h"
#include "util/error.h"
#include "util/files.h"
#include "util/log.h"
#include "util/process_info.h"
#include "util/source_state.h"
#include "util/stop_signal.h"
#include "util/torch_compat.h"
#include "workers/failure_report.h"
#include "workers/forwarding_sink.h"

namespace egm::worker {

Worker::Worker(WorkerOptions options, protocol::Transport& transport, RunGroupFactory make_group)
    : options_(std::move(options)), transport_(transport), make_group_(std::move(make_group)) {}

void Worker::send(const protocol::Message& message) {
  protocol::send_message(transport_, protocol::kCoordinatorRank, message);
}

protocol::Hello Worker::hello() {
  protocol::Hello h;
  const ProcessInfo& info = process_info();
  h.host = info.host;
  h.pid = static_cast<int64_t>(getpid());
  h.local_rank = info.local_rank;
  h.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  h.torch_version = compat::torch_version();
  h.git_commit = EGM_GIT_COMMIT;
  h.source_diff_sha256 = std::string(source_state().diff_sha256);
  h.nccl = have_nccl();
  h.gpus = static_cast<int>(torch::cuda::device_count());
  // Every visible GPU's name: the coordinator picks the one for the device it deals this worker.
  for (int i = 0; i < h.gpus; ++i) h.gpu_names.push_back(cuda_device_name(i).value_or(""));
  try {
    // Loaded once; every run of this worker reads the same tokens.
    const std::string path = std::filesystem::absolute(locate_corpus(options_.data_path)).string();
    h.corpus_path = path;
    corpus_ = Corpus::load(path);
    h.corpus_sha256 = corpus_->sha256();
  } catch (const std::exception& e) {
    // Reported in HELLO rather than thrown: the coordinator stops the sweep with this worker's reason.
    h.error = corpus_error_ = e.what();
  }
  return h;
}

int Worker::run() {
  try {
    send(hello());
    while (true) {
      // Waits in slices, so the loop stays responsive; the worker holds no timeout of its own.
      std::optional<protocol::Received> r = protocol::wait_message(transport_, std::chrono::milliseconds(200));
      if (!r) continue;
      EGM_REQUIRE(r->source == protocol::kCoordinatorRank, ProtocolError, "message from rank {}; workers only talk to the "
                  "coordinator (rank 0)", r->source);
      if (const auto* a = std::get_if<protocol::Assign>(&r->message)) {
        train(*a);
        if (shutdown_) {
          send(protocol::Bye{});
          return 0;
        }
      } else if (std::holds_alternative<protocol::Stop>(r->message)) {
        // A STOP that crossed this worker's RESULT: nothing is running.
      } else if (std::holds_alternative<protocol::Shutdown>(r->message)) {
        send(protocol::Bye{});
        return 0;
      } else {
        EGM_THROW(ProtocolError, "the coordinator sent {}, which only workers send",
                  protocol::kind_name(protocol::kind_of(r->message)));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "egm-worker rank %d: error: %s\n", transport_.rank(), e.what());
    try {
      send(protocol::Bye{e.what()});
    } catch (const std::exception&) {
      // The coordinator may be unreachable; the launcher ends the job.
    }
    return 2;
  }
}

bool Worker::should_stop(RunGroup* group) {
  // A group member must call agree_max on every poll, even when it has nothing to say: it is a collective.
  ++polls_;  // once before every step: 2 polls = the attempt's first step is done
  const bool mine = told_to_stop();
  if (!group) return mine;
  return group->agree_max(mine ? 1 : 0) != 0;
}

bool Worker::told_to_stop() {
  if (stop_requested()) {
    signal_ = stop_signal();
    return true;
  }
  while (std::optional<protocol::Received> r = protocol::try_receive_message(transport_)) {
    if (std::holds_alternative<protocol::Stop>(r->message)) {
      stop_ = true;
    } else if (std::holds_alternative<protocol::Shutdown>(r->message)) {
      shutdown_ = true;
    } else {
      EGM_THROW(ProtocolError, "the coordinator sent {} while this worker was training",
                protocol::kind_name(protocol::kind_of(r->message)));
    }
  }
  return stop_ || shutdown_;
}

void Worker::train(const protocol::Assign& a) {
  stop_ = false;
  signal_ = 0;
  polls_ = 0;
  const int me = transport_.rank();
  EGM_REQUIRE(std::find(a.group.begin(), a.group.end(), me) != a.group.end(), ProtocolError,
              "ASSIGN of run {} is for ranks {}, not for this worker (rank {})", a.run_id, fmt::join(a.group, ","), me);
  // The leader (the group's first rank) is the trainer's rank 0, the one that records and writes files.
  const bool leader = a.group.front() == me;
  ForwardingSink sink(transport_, a.cell_id, a.run_id);
  std::unique_ptr<RunGroup> group;
  try {
    if (a.group.size() > 1) {
      EGM_REQUIRE(static_cast<bool>(make_group_), ConfigError,
                  "data-parallel runs ({} ranks) need MPI: this worker cannot form a group", a.group.size());
      group = make_group_(a.group, torch_device(a.runtime.device));
    }
    // A signal already stopped this worker (or a partner): take no new work.
    // Agreed over the group, so that either every member trains or none does.
    const int signalled = stop_requested() ? stop_signal() : 0;
    if ((group ? group->agree_max(signalled) : signalled) != 0) {
      protocol::Result result{a.cell_id, a.run_id, {}, signalled};
      result.result.status = Outcome::interrupted;
      result.result.message = "the worker had been signalled to stop before the run started";
      send(result);
      return;
    }
    EGM_REQUIRE(corpus_.has_value(), IoError, "no corpus: {}", corpus_error_);
    // The config object as ASSIGN decoded it (within the protocol's JSON limits), checked field by field.
    RunConfig config = run_config_from_json(a.config);
    RuntimeOptions runtime;
    runtime.threads = a.runtime.threads;
    runtime.device = a.runtime.device;
    runtime.data_path = corpus_->path();
    runtime.out_dir = a.runtime.out_dir;
    runtime.checkpoint_interval = a.runtime.checkpoint_interval;
    runtime.log_interval = a.runtime.log_interval;
    runtime.fail_at_step = a.runtime.fail_at_step;

    // The leader writes the run folder's files; the trainer records on its
    // rank 0 only, so the other members' sinks stay empty.
    std::optional<JsonLinesSink> jsonl;
    FanoutSink sinks;
    sinks.add(&sink);
    if (leader) {
      make_dirs(runtime.out_dir);
      check_run_corpus(runtime.out_dir, *corpus_);  // the folder's corpus record (data/corpus.h)
      atomic_write_file((std::filesystem::path(runtime.out_dir) / "config.json").string(),
                        to_json(config).dump(2) + "\n");
      // The run folder keeps its own record too (appended on resume), as `egm train` writes it.
      jsonl.emplace((std::filesystem::path(runtime.out_dir) / "metrics.jsonl").string());
      sinks.add(&*jsonl);
    }

    Trainer trainer(config, runtime, *corpus_, sinks, group ? &group->communicator() : nullptr);
    RunOutcome outcome;
    try {
      outcome = trainer.run([this, g = group.get()] { return should_stop(g); });
    } catch (const Error& e) {
      // Test-only: EGM_TEST_FAIL's KIND turns the trainer's injected failure into that kind.
      if (runtime.fail_at_step >= 0 && a.runtime.fail_kind != "error" &&
          std::string_view(e.what()).rfind("injected failure", 0) == 0)
        throw_injected(a.runtime.fail_kind, e.what());
      throw;
    }
    // Every record before RESULT: the coordinator closes the attempt when RESULT arrives.
    sink.flush();
    const int signal = outcome.status == Outcome::interrupted ? signal_ : 0;
    send(protocol::Result{a.cell_id, a.run_id, std::move(outcome), signal});
  } catch (const ProtocolError&) {
    throw;  // the conversation itself is broken
  } catch (...) {
    // One line for the coordinator's view and the database, the full text (a
    // LibTorch stack trace included) for the run folder's errors.log and the
    // attempt_failed event; not retriable when it would recur identically.
    const FailureReport report = describe_failure(
        std::current_exception(), /*step_completed=*/polls_ >= 2,
        fmt::format("on {} (rank {})", process_info().host, transport_.rank()));
    sink.flush();
    append_failure_log(a.runtime.out_dir, a.cell_key, a.attempt, me, sink.last_step(), report);
    send(protocol::Failed{a.cell_id, a.run_id, report.message, report.where, sink.last_step(), report.retriable,
                       report.detail});
  }
}

}  // namespace egm::worker
