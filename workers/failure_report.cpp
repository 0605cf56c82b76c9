// A thrown run turned into a FAILED message: the one-line headline, the full
// text for errors.log, and whether a retry could help (not for a config error or an OOM before a step).
#include "workers/failure_report.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <new>

#include "protocol/protocol.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::worker {
namespace {

// By its text: allocators and BLAS libraries report running out of memory in many exception types.
bool mentions_oom(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text.find("out of memory") != std::string::npos || text.find("not enough memory") != std::string::npos;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

FailureReport describe_failure(std::exception_ptr error, bool step_completed, const std::string& fallback_where) {
  FailureReport r;
  r.where = fallback_where;
  r.kind = "error";
  bool oom = false;
  std::string full;
  try {
    std::rethrow_exception(error);
  } catch (const ConfigError& e) {
    // ConfigError before Error (its base): a bad config fails every attempt the same way.
    r.kind = "config error";
    full = e.what();
    if (!e.where().empty()) r.where = e.where();
  } catch (const Error& e) {
    full = e.what();
    oom = mentions_oom(full);
    if (!e.where().empty()) r.where = e.where();
  } catch (const c10::Error& e) {
    // what() = the message + "Exception raised from ..." + the frames.
    full = e.what();
    r.message = protocol::failure_headline(e.what_without_backtrace());
    oom = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr || mentions_oom(r.message);
  } catch (const std::bad_alloc& e) {
    // The host allocator: std::bad_alloc's own what() says only "std::bad_alloc".
    full = std::string("out of memory (std::bad_alloc: ") + e.what() + ")";
    oom = true;
  } catch (const std::exception& e) {
    full = e.what();
    oom = mentions_oom(full);
  } catch (...) {
    full = "unknown exception";
  }
  if (r.message.empty()) r.message = protocol::failure_headline(full);
  if (r.message.empty()) r.message = "(an exception without a message)";
  if (oom) r.kind = "out of memory";
  // An OOM before the first step would recur on every retry; after one, memory was enough and a retry may pass.
  r.retriable = !(r.kind == "config error" || (oom && !step_completed));
  r.detail = full;
  if (!r.where.empty()) r.detail += fmt::format("\n[at {}]", r.where);
  return r;
}

void append_failure_log(const std::string& out_dir, const std::string& cell_key, int attempt, int rank,
                        int64_t step, const FailureReport& report) {
  if (out_dir.empty()) return;
  const std::string path = (std::filesystem::path(out_dir) / "errors.log").string();
  try {
    make_dirs(out_dir);
    // Appended: each attempt's failure is kept, so the log shows the whole history of a flaky cell.
    std::ofstream out(path, std::ios::app);
    out << fmt::format("=== {} {} attempt {} failed on rank {}{}: {}, {}\n", utc_now(), cell_key, attempt, rank,
                       step >= 0 ? fmt::format(" after step {}", step) : "", report.kind,
                       report.retriable ? "retriable" : "not retriable (it would fail the same way again)")
        << report.detail << "\n\n";
    out.flush();
    if (!out) std::fprintf(stderr, "egm-worker: warning: cannot write %s\n", path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "egm-worker: warning: cannot write %s: %s\n", path.c_str(), e.what());
  }
}

void throw_injected(const std::string& kind, const std::string& message) {
  if (kind == "config") EGM_THROW(ConfigError, "{} (injected as a config error)", message);
  // A real c10::OutOfMemoryError, so the test exercises the same catch as a GPU running out.
  if (kind == "oom") TORCH_CHECK_WITH(OutOfMemoryError, false, message, " (injected as out of memory)");
  EGM_THROW(Error, "{}", message);
}

}  // namespace egm::worker
