// libFuzzer target: `egm query`'s gate (db/read_only_query.h). Every input is
// one SQL text against a real results database opened read-only. Findings:
// a crash; a statement the gate let through that then tried to write (only the
// read-only file stopped it); any change to the database.
#include <sqlite3.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "db/read_only_query.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "util/error.h"

namespace {

// A fresh results database (current schema, empty), made once per process and
// removed at exit (the path is never destroyed, so the exit handler can read it).
const std::string& database() {
  static const std::string* const path = [] {
    auto* p = new std::string(
        (std::filesystem::temp_directory_path() / ("egm_fuzz_query_gate_" + std::to_string(::getpid()) + ".sqlite"))
            .string());
    std::filesystem::remove(*p);
    { egm::db::ResultsDb db(*p, egm::db::OpenMode::read_write_create); }
    std::atexit([] {
      std::error_code ignored;
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(database() + suffix, ignored);
    });
    return p;
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view sql(reinterpret_cast<const char*>(data), size);
  egm::db::Connection connection(database(), egm::db::OpenMode::read_only, /*busy_timeout_ms=*/0);
  // A recursive CTE may never end: interrupt after ~1e6 virtual machine steps.
  int ticks = 0;
  sqlite3_progress_handler(connection.handle(), 1000, [](void* t) { return ++*static_cast<int*>(t) > 1000 ? 1 : 0; },
                           &ticks);
  bool passed = false;
  try {
    egm::db::Statement statement = egm::db::prepare_read_only_query(connection, sql);
    passed = true;
    for (int rows = 0; rows < 100 && statement.step(); ++rows)
      for (int c = 0; c < statement.column_count(); ++c) statement.value(c);
  } catch (const egm::DbError&) {
    // Refused at prepare (SQLite's own error) or failed while reading: fine,
    // unless it was an attempt to write that the gate let through (the error
    // code, not the text: the message may quote the SQL).
    if (passed && (sqlite3_errcode(connection.handle()) & 0xff) == SQLITE_READONLY) std::abort();
  } catch (const egm::ConfigError&) {
    // The gate's refusal.
  }
  if (sqlite3_total_changes64(connection.handle()) != 0) std::abort();
  return 0;
}
