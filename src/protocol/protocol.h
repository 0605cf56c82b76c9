// The sweep protocol: the messages egm-coordinator (rank 0) and egm-worker
// (ranks 1..N) exchange over MPI, their encoding, and the rules of the
// conversation. Both executables are built from this one header, so a
// coordinator and a worker from different egm builds notice at the first
// message (a version mismatch names both versions).
//
// ---- Wire format -----------------------------------------------------------
// One message = one MPI_Send of bytes (MPI_BYTE, tag kProtocolTag) on the
// protocol's own duplicated communicator:
//
//   offset  size  field
//   0       4     magic "EGMP"
//   4       2     protocol version (uint16, little-endian)     = kProtocolVersion
//   6       2     kind (uint16, little-endian)                 see Kind below
//   8       4     body length in bytes (uint32, little-endian)
//   12      4     reserved, 0
//   16      n     body: one JSON object (UTF-8); NaN/inf are written as null
//
// decode() checks, in order: length >= 16, magic, version (a mismatch is a
// ProtocolError naming both versions), kind, body length, JSON, and the
// fields of the kind (a missing or mistyped field names the field).
//
// ---- Messages ----------------------------------------------------------------
// worker -> coordinator
//   HELLO    {protocol_version, host, pid, local_rank, cores,
//             torch_version, git_commit, corpus_path, corpus_sha256, error, nccl}
//            first message of every worker. A non-empty `error` means the
//            worker cannot work (e.g. no corpus); the coordinator stops the sweep.
//            `nccl` (optional, default false): the worker's build has the NCCL
//            backend, so a CUDA run of several ranks averages over NCCL.
//            `gpus` (optional, default 0): CUDA devices the worker sees; with
//            --device cuda the coordinator deals them out (ASSIGN's device).
//            `gpu_names` (optional, default []): their names by index
//            ("NVIDIA H200"), which the compute statement reports.
//            `source_diff_sha256` (optional, default empty): the sha256 of the
//            source modification the worker was built from (util/source_state.h);
//            each run's row records its leader's.
//   RECORDS  {cell_id, run_id, records: [record, ...]}
//            the trainer's records (run/records.h: their JSON, with "time", the
//            UNIX s the worker saw them); batched: sent every ~0.5 s and at
//            once for status, checkpoint, final_eval and event records. Decoded
//            into typed Records: an unknown kind or a bad field is a
//            ProtocolError (a new record kind needs a protocol version).
//   RESULT   {cell_id, run_id, result: RunOutcome, signal}
//            the run ended: done, diverged, or interrupted (checkpointed);
//            `result` is run/outcome.h's JSON, null for a value not measured.
//            `signal` != 0: the worker itself received that signal (mpirun and
//            srun forward SIGUSR2/SIGTERM to every rank).
//   FAILED   {cell_id, run_id, error, where, step, retriable, detail}
//            the run threw; `error` is one line (the exception's own message,
//            e.g. c10::Error::what_without_backtrace(), first line only: it is
//            what the live view, `egm status` and cells.last_error show);
//            `where` is egm::Error::where() ("file:line on host (rank r)") when
//            known, `step` the last step reported or -1.
//            `retriable` (optional, default true): false when the same attempt
//            would fail the same way again, so the coordinator fails the cell
//            for good at once instead of spending its retries. The worker says
//            false for a ConfigError and for running out of memory (CPU or GPU)
//            before the attempt's first step completed; an OOM later on, and
//            anything else, is retriable (workers/failure_report.h).
//            `detail` (optional, default empty = `error`): the full text, C++
//            stack trace included; the coordinator stores it in the
//            attempt_failed event (the worker also appends it to errors.log in
//            the run folder). A coordinator that predates these fields ignores
//            them; a worker that predates them is treated as retriable, and its
//            multi-line `error` is cut to its first line for display.
//   BYE      {error}
//            the answer to SHUTDOWN (nothing left in flight), or a worker
//            leaving on its own because of `error`.
// coordinator -> worker
//   ASSIGN   {cell_id, run_id, attempt, cell_key, variant, seed, config,
//             runtime: {out_dir, threads, device, fail_at_step, fail_kind,
//             checkpoint_interval, log_interval}, group}
//            train one cell. `config` is the full RunConfig JSON object (the
//            coordinator splices the database's text in as it is; the worker
//            reads the decoded object straight into a RunConfig); out_dir is
//            derived from the cell (sweep/run_dirs.h), so a retry or a resume
//            finds its checkpoint there. `group` lists the world ranks that
//            train this run together (data parallelism): [the receiving
//            worker] for one rank; for k ranks the same ASSIGN (same run_id)
//            goes to each of the k, they form a communicator of exactly those
//            ranks (MPI_Comm_create_group, rank i of it = group[i]) and train
//            one run; group[0] leads: only it sends RECORDS and writes
//            checkpoints. `fail_at_step`/`fail_kind` (optional): test-only
//            failure injection (EGM_TEST_FAIL): throw at that step an error of
//            that kind (error, config, oom).
//   STOP     {reason, signal}
//            checkpoint the current run now and answer RESULT "interrupted";
//            ignored by an idle worker.
//   SHUTDOWN {reason}
//            leave: finish what is in flight (a busy worker treats it as STOP
//            first), answer BYE, MPI_Finalize, exit 0.
//
// ---- Conversation --------------------------------------------------------------
//   worker: HELLO, then for each ASSIGN: RECORDS* then exactly one RESULT or
//   FAILED; then, after SHUTDOWN, BYE. In a group every member answers its
//   ASSIGN with its own RESULT or FAILED (so the coordinator knows when each is
//   free again); the attempt ends when all have answered, with the leader's
//   outcome unless some member FAILED. A STOP goes to every member; the
//   members agree every step (one MPI_Allreduce over the group) on whether any
//   of them was told to stop, so all checkpoint at the same step. MPI keeps the order of messages between
//   two ranks, so a run's records always arrive before its RESULT.
//   coordinator: ASSIGN only to a worker that said HELLO and is idle (it has
//   answered its last ASSIGN); the database attempt is started before ASSIGN
//   and ended when RESULT/FAILED arrives. The coordinator is the only writer
//   of the database.
//
// ---- Shutdown ------------------------------------------------------------------
//   normal: every cell is done or out of retries -> SHUTDOWN to all, wait for
//     every BYE, MPI_Finalize, exit 0 (1 when a cell failed for good). Every
//     rank leaves through MPI_Finalize; `egm sweep` runs mpirun with -q, so a
//     non-zero status reaches the caller without Open MPI's "process returned
//     a non-zero exit code" banner (the coordinator prints its own summary).
//   signal (SIGUSR2: Slurm's time-limit warning; SIGTERM; SIGINT) on the
//     coordinator, or a RESULT carrying a signal: STOP to every busy worker,
//     wait (bounded) for their RESULTs so the checkpoints are on disk, mark
//     those attempts interrupted (no retry budget used), SHUTDOWN, wait for
//     BYEs, exit 75 (EX_TEMPFAIL: "requeue me", slurm/README.md).
//   fatal error on the coordinator (bad spec, database error, protocol
//     mismatch): STOP to busy workers, SHUTDOWN to all, exit 2.
#pragma once

#include <nlohmann/json.hpp>

#include "run/device.h"
#include "run/outcome.h"
#include "run/records.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace egm::protocol {

inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr char kProtocolMagic[4] = {'E', 'G', 'M', 'P'};
inline constexpr std::size_t kHeaderSize = 16;
inline constexpr int kProtocolTag = 7;  // one MPI tag; the kind is in the header
inline constexpr int kCoordinatorRank = 0;

enum class Kind : uint16_t {
  hello = 1,
  records = 2,
  result = 3,
  failed = 4,
  bye = 5,
  assign = 16,
  stop = 17,
  shutdown = 18,
};
const char* kind_name(Kind kind);

// ---- message bodies --------------------------------------------------------------

struct Hello {
  int protocol_version = kProtocolVersion;
  std::string host;
  int64_t pid = 0;
  int local_rank = -1;
  int cores = 1;     // hardware threads on its node
  std::string torch_version;
  std::string git_commit;
  std::string corpus_path;
  std::string corpus_sha256;
  std::string error;  // non-empty: this worker cannot train (the sweep stops)
  bool nccl = false;  // built with the NCCL backend (optional field)
  int gpus = 0;       // CUDA devices visible to it (optional field)
  std::string source_diff_sha256;  // its build's source modification; empty: a clean tree (optional field)
  std::vector<std::string> gpu_names;  // their names, by device index (optional field)
};

// How a run is trained (RuntimeOptions minus what the worker knows itself).
struct RunSettings {
  std::string out_dir;
  int threads = 1;
  DeviceName device;  // parsed when decoded: a bad name is a ProtocolError
  int64_t fail_at_step = -1;  // test-only failure injection (EGM_TEST_FAIL)
  std::string fail_kind = "error";  // what is thrown there: error, config, oom (test-only)
  int64_t checkpoint_interval = 0;
  int64_t log_interval = 10;
};

struct Assign {
  int64_t cell_id = 0;
  int64_t run_id = 0;
  int attempt = 1;
  std::string cell_key;
  std::string variant;
  uint64_t seed = 0;
  // The RunConfig. The coordinator fills `config_json` with the cell's
  // cells.config_json and encode() splices that text in as it is, instead of
  // parsing it into a tree per ASSIGN and writing it out again
  // (results/BENCHMARKS.md, issue 16); it must hold one JSON object. decode()
  // fills `config` with the decoded object (and leaves config_json empty), so
  // the worker reads it into a RunConfig without writing it out and parsing it
  // again. encode() of a message with an empty config_json writes `config`.
  std::string config_json;
  nlohmann::json config = nlohmann::json::object();
  RunSettings runtime;
  std::vector<int> group;  // world ranks training this run; group[0] leads (records, checkpoints)
};

struct Records {
  int64_t cell_id = 0;
  int64_t run_id = 0;
  std::vector<Record> records;
};

struct Result {
  int64_t cell_id = 0;
  int64_t run_id = 0;
  RunOutcome result;
  int signal = 0;  // the worker received this signal itself (0: none)
};

struct Failed {
  Failed() = default;
  // The optional fields last, so Failed{cell, run, error, where, step} stays valid.
  Failed(int64_t cell_id, int64_t run_id, std::string error, std::string where, int64_t step, bool retriable = true,
         std::string detail = {})
      : cell_id(cell_id), run_id(run_id), error(std::move(error)), where(std::move(where)), step(step),
        retriable(retriable), detail(std::move(detail)) {}

  int64_t cell_id = 0;
  int64_t run_id = 0;
  std::string error;  // one line, no stack trace
  std::string where;
  int64_t step = -1;
  bool retriable = true;  // false: it would fail the same way again (optional field)
  std::string detail;     // the full text, stack trace included; empty: same as error (optional field)
};

// An error text on one line (its lines joined), without a C++ stack trace
// ("Exception raised from ..." and the frames after it), at most 300
// characters: what a FAILED
// message's `error` carries, and how the coordinator shows the `error` of a
// worker that predates the rule.
std::string failure_headline(std::string_view text);

struct Bye {
  std::string error;  // empty: an orderly answer to SHUTDOWN
};

struct Stop {
  std::string reason;
  int signal = 0;
};

struct Shutdown {
  std::string reason;
};

using Message = std::variant<Hello, Records, Result, Failed, Bye, Assign, Stop, Shutdown>;

Kind kind_of(const Message& message);

// ---- encoding ------------------------------------------------------------------

// Header + JSON body, ready for MPI_Send.
std::string encode(const Message& message);
// The inverse. Throws ProtocolError naming `from` (e.g. "rank 3") and what is
// wrong: too short, bad magic, another protocol version (both versions named),
// unknown kind, body length, invalid JSON, a missing or mistyped field.
Message decode(std::string_view bytes, const std::string& from);

// For tests of the error paths: a frame with any version, kind and body.
std::string encode_frame(uint16_t version, uint16_t kind, const std::string& body);

// JSON form of a body (the body of the frame; ASSIGN's config as encode() writes it).
nlohmann::json to_json(const Message& message);

}  // namespace egm::protocol
