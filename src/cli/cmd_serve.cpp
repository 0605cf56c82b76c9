// egm serve: the results database in a browser (src/serve/README.md). Read-only:
// the database is opened SQLITE_OPEN_READONLY per request, so it is safe while
// a coordinator writes; a file that does not exist yet is waited for (egm
// serve may start before the sweep), and nothing is ever created. Binds 127.0.0.1 unless --host says otherwise; on a cluster,
// reach it through an SSH tunnel (README, "Browse"; src/serve/README.md).
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "db/results_db.h"
#include "serve/server.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::cli {
namespace {

struct ServeCliOptions {
  std::string db;
  std::string host = "127.0.0.1";
  int port = 8080;
  int refresh = 5;
};

// Started before the sweep created its database: says so, and waits until the
// file is there and opens as an egm database (the coordinator creates and
// migrates it within moments; after kSettle the server's own check decides).
// False when SIGINT/SIGTERM (blocked, in `signals`) came first.
bool wait_for_database(const std::string& path, const sigset_t& signals) {
  if (file_exists(path)) return true;
  fmt::print("egm serve: waiting for {} to appear (egm sweep creates it when it starts); Ctrl-C stops\n", path);
  std::fflush(stdout);
  // 200 ms: the wait notices the file (and a Ctrl-C) quickly without a busy loop.
  constexpr timespec kTick{0, 200'000'000};
  constexpr int kSettle = 50;  // ticks (10 s) from the file's appearance
  int since_seen = -1;
  for (;;) {
    // The signals are blocked, so they are taken here synchronously instead of killing the process mid-wait.
    if (sigtimedwait(&signals, nullptr, &kTick) > 0) return false;
    if (since_seen < 0 && !file_exists(path)) continue;
    try {
      db::ResultsDb check(path, db::OpenMode::read_only);
      return true;
    } catch (const std::exception&) {
      // Not yet an egm database (being created, or locked by the migration): wait, up to kSettle ticks.
      if (++since_seen >= kSettle) return true;
    }
  }
}

void run_serve(const ServeCliOptions& o) {
  if (o.refresh < 0) EGM_THROW(ConfigError, "--refresh {}: give seconds >= 0 (0: pages never reload)", o.refresh);
  serve::ServeOptions options;
  options.site.db_path = o.db.empty() ? db::default_db_path() : o.db;
  options.site.refresh_s = o.refresh;
  options.host = o.host;
  options.port = o.port;
  // SIGINT/SIGTERM stop the server cleanly: a thread waits for them (blocked
  // here, before the server's threads start, so they inherit the mask), as
  // they stop the wait for a database not there yet.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (!wait_for_database(options.site.db_path, signals)) return;
  serve::Server server(options);
  // sigwait in a thread of its own: no async signal handler, so stopping the server may take locks.
  std::thread waiter([&server, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop();
  });
  fmt::print("egm serve: {} (database {}, read-only); Ctrl-C stops\n", server.url(), options.site.db_path);
  std::fflush(stdout);
  server.run();
  // Stopped by a signal: the waiter has returned. Stopped otherwise: wake it.
  // Harmless when the waiter has already ended: pthread_kill then only fails, and join still succeeds.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
}

}  // namespace

void register_serve_command(CLI::App& app) {
  auto opts = std::make_shared<ServeCliOptions>();
  auto* cmd = app.add_subcommand("serve", "browse the results database: sweeps, tables, plots, SQL (read-only HTTP)");
  add_db_flag(cmd, opts->db);
  cmd->add_option("--port", opts->port, "TCP port (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--host", opts->host,
                  "address to bind; the default serves this machine only (use an SSH tunnel from elsewhere)")
      ->capture_default_str();
  cmd->add_option("--refresh", opts->refresh, "seconds between reloads of a running sweep's pages (0: never)")
      ->capture_default_str();
  cmd->footer("Pages: / (sweeps), /sweep/NAME, /sweep/NAME/cell/KEY, /query; every table as .csv and .json.");
  cmd->callback([opts] { run_serve(*opts); });
}

}  // namespace egm::cli
