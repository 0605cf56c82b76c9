// The log: one line per message on stderr, "[HH:MM:SS host:rank] level: text",
// behind a mutex so threads do not interleave lines.
#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "util/process_info.h"

namespace egm::log {
namespace {
// Atomic: set_level may run while other threads log; the mutex guards only the writing.
std::atomic<int> g_level{static_cast<int>(Level::info)};
std::mutex g_mutex;
const char* name(Level l) {
  switch (l) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warning";
    case Level::error: return "error";
  }
  return "?";
}
}  // namespace

void set_level(Level l) { g_level = static_cast<int>(l); }
Level level() { return static_cast<Level>(g_level.load()); }

void write(Level l, const std::string& message) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  // localtime_r, not localtime: the latter's static buffer is shared between threads.
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
  const ProcessInfo& info = process_info();
  std::string who = info.rank >= 0 ? fmt::format("{}:{}", info.host, info.rank) : info.host;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "[%s %s] %s: %s\n", stamp, who.c_str(), name(l), message.c_str());
  // Flushed per line: a rank that crashes next still has its last message out.
  std::fflush(stderr);
}

}  // namespace egm::log
