// How a worker reports a run that threw (the FAILED message of
// src/protocol/protocol.h): one line for people, the full text for the logs, and
// whether trying again could help.
//
// Not retriable (the coordinator fails the cell for good at once), because the
// same attempt would fail the same way again:
//   - egm::ConfigError: the run's config or device cannot work;
//   - out of memory (std::bad_alloc, c10::OutOfMemoryError, a LibTorch
//     allocator's "not enough memory" / "out of memory") before the attempt
//     completed its first training step: the model and batch do not fit.
// Retriable: an out-of-memory after steps completed (fragmentation, a
// neighbour on the same GPU), and everything else (I/O, NCCL, an injected
// test failure, ...). A diverged run is not an exception; the coordinator
// decides about it (coordinator/README.md).
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace egm::worker {

struct FailureReport {
  std::string message;    // one line: the exception's own message (no C++ stack trace)
  std::string detail;     // the full text: what(), LibTorch's stack trace included, and where
  std::string where;      // egm::Error::where(), else `fallback_where`
  std::string kind;       // "config error", "out of memory", "error"
  bool retriable = true;
};

// `error`: the exception a run threw (std::current_exception()); `step_completed`:
// whether this attempt finished at least one training step.
FailureReport describe_failure(std::exception_ptr error, bool step_completed, const std::string& fallback_where);

// Appends the report to OUT_DIR/errors.log (the run folder's own record of its
// failures, one block per failed attempt). Never throws: a log that cannot be
// written must not hide the failure itself (the warning goes to stderr).
void append_failure_log(const std::string& out_dir, const std::string& cell_key, int attempt, int rank,
                        int64_t step, const FailureReport& report);

// Test-only (EGM_TEST_FAIL's KIND, sweep protocol's fail_kind): rethrows the
// trainer's injected failure `message` as a failure of that kind: "config" (a
// ConfigError), "oom" (a LibTorch c10::OutOfMemoryError with its stack trace).
[[noreturn]] void throw_injected(const std::string& kind, const std::string& message);

}  // namespace egm::worker
