// The coordinator at scale, by simulation (a benchmark; its tiny version is
// the ctest `coordinator_scale_tiny`, which checks correctness, not speed).
//
// The real Coordinator (its loop, its scheduling, its SQLite writer) runs in
// one thread over the in-process transport; one simulator thread plays W
// workers. Every simulated second each busy worker sends one RECORDS message
// with what the trainer would have emitted in that second (a progress record
// every --log-every steps, evals with the learned parameters of the paper
// preset's shape every --eval-every steps and at the end, a checkpoint after
// each eval; --params none leaves the parameters out), and a run ends after a random number of steps (uniform in
// [--min-steps, --max-steps], drawn from the cell id and --seed) with the
// final evaluations and RESULT. The simulator starts the next simulated
// second only when the coordinator's mailbox holds fewer than W messages, so
// the coordinator is kept saturated without an unbounded backlog: simulated
// time runs as fast as the coordinator can take it.
//
//   bench_coordinator_scale [--workers 1000] [--cells 100000] [--min-steps 20] [--max-steps 200]
//                           [--steps-per-s 10] [--log-every 10] [--eval-every 500] [--seed 1]
//                           [--params paper|none] [--dir DIR] [--egm PATH/egm] [--keep]
//
// It prints the cell completions per second, database commits per second,
// the coordinator thread's CPU time (all of it, and its loop's alone: first
// ASSIGN to SHUTDOWN, without the setup and the closing summary), the process's peak RSS, the database's
// size (per table when SQLite has dbstat), and with --egm the wall time of
// `egm status`, `egm runs` and `egm analyze` on the result. It then checks
// the database: every cell done exactly once with the final loss its worker
// reported, one attempt each, nothing left running; exit 1 when not, 2 on a
// bad flag.
#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/coordinator.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "protocol/in_process_transport.h"
#include "util/log.h"

namespace fs = std::filesystem;
namespace es = egm::protocol;
using json = nlohmann::json;

namespace {

struct Options {
  int workers = 1000;
  int64_t cells = 100000;
  int64_t min_steps = 20;
  int64_t max_steps = 200;
  int64_t steps_per_s = 10;
  int64_t log_every = 10;
  int64_t eval_every = 500;
  uint64_t seed = 1;
  bool params = true;  // --params paper|none: the learned parameters at each eval, or none
  std::string dir;
  std::string egm;
  bool keep = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_coordinator_scale: %s (see the comment at the top of tests/sweep/bench_coordinator_scale.cpp)\n",
               message.c_str());
  std::exit(2);
}

int64_t positive(const std::string& flag, const std::string& value) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  usage_error(fmt::format("{} wants a positive integer, got '{}'", flag, value));
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--keep") {
      o.keep = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", flag));
    const std::string v = argv[++i];
    if (flag == "--workers") o.workers = static_cast<int>(positive(flag, v));
    else if (flag == "--cells") o.cells = positive(flag, v);
    else if (flag == "--min-steps") o.min_steps = positive(flag, v);
    else if (flag == "--max-steps") o.max_steps = positive(flag, v);
    else if (flag == "--steps-per-s") o.steps_per_s = positive(flag, v);
    else if (flag == "--log-every") o.log_every = positive(flag, v);
    else if (flag == "--eval-every") o.eval_every = positive(flag, v);
    else if (flag == "--seed") o.seed = static_cast<uint64_t>(positive(flag, v));
    else if (flag == "--dir") o.dir = v;
    else if (flag == "--params" && (v == "paper" || v == "none")) o.params = v == "paper";
    else if (flag == "--params") usage_error(fmt::format("--params wants paper or none, got '{}'", v));
    else if (flag == "--egm") o.egm = v;
    else usage_error(fmt::format("unknown flag '{}'", flag));
  }
  if (o.min_steps > o.max_steps) usage_error("--min-steps is above --max-steps");
  if (o.cells % 4 != 0) usage_error(fmt::format("--cells {} is not a multiple of 4 (the 2x2's four variants)", o.cells));
  return o;
}

// The learned parameters one eval reports at the paper preset (L6 H8 d256):
// EGA tau, alpha and gate_open_share per layer and head; MoPE omega and sigma
// per pair (d/2 = 128 pairs). Floats, as the models report them (float32
// tensors read as doubles). The values at step 0 are the same in every cell,
// as the models' initialisation is; later MoPE values carry a jitter of up to
// 5% drawn from (cell, pair, name), so that no two runs' learned pairs are
// the same and `egm analyze` has to cluster each run's own.
double jitter(int64_t cell_id, int pair, int name) {
  std::mt19937_64 rng(static_cast<uint64_t>(cell_id) * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(pair * 2 + name));
  return 1.0 + 0.05 * (2.0 * std::uniform_real_distribution<double>(0.0, 1.0)(rng) - 1.0);
}

egm::LearnedParams learned_params(const std::string& variant, int64_t step, int64_t cell_id) {
  egm::LearnedParams out;
  if (variant == "ega" || variant == "ega_mope")
    for (int layer = 0; layer < 6; ++layer)
      for (int head = 0; head < 8; ++head)
        for (const char* name : {"tau", "alpha", "gate_open_share"})
          out.push_back({"ega", layer, head, name, static_cast<float>(0.5 + 1e-4 * static_cast<double>(step + head))});
  if (variant == "mope" || variant == "ega_mope")
    for (int pair = 0; pair < 128; ++pair)
      for (int name = 0; name < 2; ++name)
        out.push_back({"mope", -1, pair, name == 0 ? "omega" : "sigma",
                       static_cast<float>((1.0 + 1e-3 * static_cast<double>(pair) + 1e-6 * static_cast<double>(step)) *
                                          (step == 0 ? 1.0 : jitter(cell_id, pair, name)))});
  return out;
}

// A record as a worker forwards it, stamped with the (simulated) time.
egm::Record at(egm::RecordBody body, double time) {
  egm::Record r;
  r.body = std::move(body);
  r.time = time;
  return r;
}

double final_loss(int64_t cell_id) { return 1.3 + static_cast<double>(cell_id % 1000) / 4000.0; }

// W workers in one thread, in simulated seconds.
class Simulator {
 public:
  Simulator(const Options& o, es::InProcessHub& hub) : o_(o), hub_(hub) {
    for (int r = 1; r <= o.workers; ++r) {
      Worker w;
      w.transport = hub.endpoint(r);
      workers_.push_back(std::move(w));
    }
  }

  void run() {
    for (Worker& w : workers_) {
      es::Hello h;
      h.host = fmt::format("sim{:03d}", (w.transport->rank() - 1) / 8);  // 8 workers to a simulated host
      h.cores = 1;
      h.torch_version = "sim";
      h.git_commit = "sim";
      h.corpus_sha256 = "sim";
      es::send_message(*w.transport, 0, h);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(2);
    while (left_ < o_.workers && std::chrono::steady_clock::now() < deadline) {
      for (Worker& w : workers_) receive(w);
      for (Worker& w : workers_)
        if (w.busy) advance(w);
      sim_time_ += 1.0;
      // Flow control: the next simulated second when the coordinator has caught up.
      while (hub_.queued(0) > static_cast<size_t>(o_.workers) && left_ < o_.workers)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (busy_ == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  double first_assign_s() const { return first_assign_s_; }
  // The coordinator thread's CPU clock: read at its first ASSIGN and at its
  // first SHUTDOWN, it gives the CPU time of the loop alone, without the
  // setup (the spec's cells inserted) and the closing summary.
  void watch_coordinator(clockid_t clock) { coordinator_clock_ = clock; }
  double loop_cpu_s() const { return cpu_at_shutdown_ - cpu_at_first_assign_; }
  double sim_seconds() const { return sim_time_ - kStart; }
  const std::map<int64_t, double>& reported() const { return reported_; }
  int64_t messages() const { return messages_; }

 private:
  static constexpr double kStart = 1.8e9;  // simulated UNIX time of the first second
  struct Worker {
    std::unique_ptr<es::Transport> transport;
    bool busy = false;
    bool gone = false;
    es::Assign assign;
    int64_t step = 0;
    int64_t end = 0;
  };

  void receive(Worker& w) {
    while (!w.gone) {
      std::optional<es::Received> r = es::try_receive_message(*w.transport);
      if (!r) return;
      if (auto* a = std::get_if<es::Assign>(&r->message)) {
        if (first_assign_s_ < 0) {
          first_assign_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
          cpu_at_first_assign_ = coordinator_cpu();
        }
        w.busy = true;
        ++busy_;
        w.assign = *a;
        w.step = 0;
        std::mt19937_64 rng(o_.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(a->cell_id));
        w.end = std::uniform_int_distribution<int64_t>(o_.min_steps, o_.max_steps)(rng);
        std::vector<egm::Record> records;
        records.push_back(at(egm::StartRecord{0, {}}, sim_time_));
        eval(w, records);
        send_records(w, std::move(records));
      } else if (std::holds_alternative<es::Stop>(r->message)) {
        if (!w.busy) continue;
        es::Result res{w.assign.cell_id, w.assign.run_id, {}, 0};
        res.result.status = egm::Outcome::interrupted;
        res.result.step = w.step;
        send(w, res);
        w.busy = false;
        --busy_;
      } else if (std::holds_alternative<es::Shutdown>(r->message)) {
        if (cpu_at_shutdown_ < 0) cpu_at_shutdown_ = coordinator_cpu();
        send(w, es::Bye{});
        w.gone = true;
        ++left_;
      }
    }
  }

  void eval(const Worker& w, std::vector<egm::Record>& records) const {
    const double t = sim_time_;
    records.push_back(at(egm::EvalRecord{w.step, egm::MetricSplit::eval_train, 2.0, std::nullopt}, t));
    records.push_back(at(egm::EvalRecord{w.step, egm::MetricSplit::eval_val, 2.1, std::nullopt}, t));
    egm::LearnedParams list;
    if (o_.params) list = learned_params(w.assign.variant, w.step, w.assign.cell_id);
    if (!list.empty()) records.push_back(at(egm::ParamsRecord{w.step, std::move(list)}, t));
  }

  // One simulated second of a busy worker.
  void advance(Worker& w) {
    std::vector<egm::Record> records;
    const int64_t to = std::min(w.end, w.step + o_.steps_per_s);
    const double t = sim_time_;
    for (int64_t s = w.step + 1; s <= to; ++s) {
      w.step = s;
      const bool at_eval = s % o_.eval_every == 0 || s == w.end;
      if (s % o_.log_every == 0 || at_eval)
        records.push_back(at(egm::ProgressRecord{s, 3.0 - 1e-4 * static_cast<double>(s), 1e-3, 50000.0, 1.0}, t));
      if (at_eval) {
        eval(w, records);
        if (s != w.end) records.push_back(at(egm::CheckpointRecord{s}, t));
      }
    }
    if (w.step < w.end) {
      if (!records.empty()) send_records(w, std::move(records));
      return;
    }
    const double loss = final_loss(w.assign.cell_id);
    for (egm::MetricSplit split : {egm::MetricSplit::val_full, egm::MetricSplit::val_ar, egm::MetricSplit::val_ar_ref})
      records.push_back(at(egm::FinalEvalRecord{split, loss, 64}, t));
    records.push_back(at(egm::CheckpointRecord{w.step}, t));
    es::Result res{w.assign.cell_id, w.assign.run_id, {}, 0};
    res.result.status = egm::Outcome::done;
    res.result.step = w.step;
    res.result.measured.final_val = loss;
    res.result.measured.best_val = loss;
    res.result.measured.full_val = loss;
    res.result.measured.ar_val = loss + 0.01;
    res.result.measured.ar_ref_val = loss;
    records.push_back(at(egm::EndRecord{res.result}, t));
    send_records(w, std::move(records));
    send(w, res);
    reported_[w.assign.cell_id] = loss;
    w.busy = false;
    --busy_;
  }

  void send_records(Worker& w, std::vector<egm::Record> records) {
    send(w, es::Records{w.assign.cell_id, w.assign.run_id, std::move(records)});
  }
  void send(Worker& w, const es::Message& m) {
    es::send_message(*w.transport, 0, m);
    ++messages_;
  }

  const Options& o_;
  es::InProcessHub& hub_;
  std::vector<Worker> workers_;
  double sim_time_ = kStart;
  int busy_ = 0;
  int left_ = 0;
  int64_t messages_ = 0;
  double coordinator_cpu() const {
    timespec ts{};
    if (!coordinator_clock_ || clock_gettime(*coordinator_clock_, &ts) != 0) return -1;
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }

  double first_assign_s_ = -1;
  std::optional<clockid_t> coordinator_clock_;
  double cpu_at_first_assign_ = -1;
  double cpu_at_shutdown_ = -1;
  std::map<int64_t, double> reported_;
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Wall seconds of one egm command (its output to /dev/null); -1 when it failed.
double time_command(const std::string& command) {
  const double t0 = now_s();
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  const double t = now_s() - t0;
  if (rc != 0) {
    std::printf("  FAILED (status %d): %s\n", rc, command.c_str());
    return -1;
  }
  return t;
}

int64_t scalar(egm::db::Connection& c, const std::string& sql) {
  egm::db::Statement s = c.prepare(sql);
  return s.step() && !s.is_null(0) ? s.int64(0) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fs::path dir = o.dir.empty() ? fs::temp_directory_path() / fmt::format("egm_bench_scale_{}", ::getpid())
                                     : fs::path(o.dir);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db_path = (dir / "scale.sqlite").string();
  {
    json spec = {{"name", "scale"},     {"preset", "paper"},
                 {"variants", {"base", "ega", "mope", "ega_mope"}},
                 {"steps", o.max_steps}, {"retries", 0}, {"baseline", "base"},
                 {"factors", {{"a", "ega"}, {"b", "mope"}, {"ab", "ega_mope"}, {"base", "base"}}}};
    json seeds = json::array();
    for (int64_t s = 0; s < o.cells / 4; ++s) seeds.push_back(s);
    spec["seeds"] = seeds;
    std::ofstream(dir / "spec.json") << spec.dump();
  }

  egm::coordinator::CoordinatorOptions co;
  co.spec_path = (dir / "spec.json").string();
  co.db_path = db_path;
  co.runs_dir = (dir / "runs").string();
  // Its view and summary go to /dev/null, its log lines only from warnings up:
  // what is measured is the loop and the writer, not a terminal.
  co.view = egm::coordinator::ViewMode::plain;
  egm::log::set_level(egm::log::Level::warn);
  co.log_interval = o.log_every;

  es::InProcessHub hub(o.workers + 1);
  Simulator sim(o, hub);
  std::printf("bench_coordinator_scale: %d workers, %lld cells of %lld..%lld steps, %lld steps per simulated second, "
              "progress every %lld steps, evals every %lld, learned parameters %s; %s\n",
              o.workers, static_cast<long long>(o.cells), static_cast<long long>(o.min_steps),
              static_cast<long long>(o.max_steps), static_cast<long long>(o.steps_per_s),
              static_cast<long long>(o.log_every), static_cast<long long>(o.eval_every),
              o.params ? "of the paper preset's shape" : "none", db_path.c_str());
  std::fflush(stdout);

  int code = 0;
  double coordinator_cpu = 0, t_end = 0;
  int64_t commits = 0;
  const double t_start = now_s();
  std::thread coordinator([&] {
    const double cpu0 = thread_cpu_s();
    auto transport = hub.endpoint(0);
    std::FILE* devnull = std::fopen("/dev/null", "w");
    egm::coordinator::Coordinator c(co, *transport, devnull);
    code = c.run();
    t_end = now_s();
    commits = c.database_commits();
    coordinator_cpu = thread_cpu_s() - cpu0;
    std::fclose(devnull);
  });
  clockid_t coordinator_clock{};
  if (pthread_getcpuclockid(coordinator.native_handle(), &coordinator_clock) == 0)
    sim.watch_coordinator(coordinator_clock);
  sim.run();
  coordinator.join();

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double wall = t_end - sim.first_assign_s();
  std::printf("coordinator exit %d; setup (spec, %lld cells into the database) %.1f s\n", code,
              static_cast<long long>(o.cells), sim.first_assign_s() - t_start);
  std::printf("first ASSIGN -> end: %.1f s for %.0f simulated seconds, %lld messages to the coordinator\n", wall,
              sim.sim_seconds(), static_cast<long long>(sim.messages()));
  std::printf("cell completions:   %.0f /s\n", static_cast<double>(o.cells) / wall);
  std::printf("messages handled:   %.0f /s\n", static_cast<double>(sim.messages()) / wall);
  std::printf("database commits:   %.0f /s (%lld in all, setup included)\n", static_cast<double>(commits) / wall,
              static_cast<long long>(commits));
  std::printf("coordinator CPU:    %.1f s (its thread; %.0f%% of the wall time)\n", coordinator_cpu,
              100.0 * coordinator_cpu / (t_end - t_start));
  std::printf("coordinator loop:   %.1f s CPU from its first ASSIGN to its SHUTDOWN: %.0f completions per CPU-s "
              "(the whole thread: %.0f)\n",
              sim.loop_cpu_s(), static_cast<double>(o.cells) / sim.loop_cpu_s(),
              static_cast<double>(o.cells) / coordinator_cpu);
  std::printf("peak RSS:           %.0f MB (the whole process: coordinator, simulator, mailboxes)\n",
              static_cast<double>(usage.ru_maxrss) / 1024.0);

  int problems = 0;
  {
    egm::db::ResultsDb db(db_path, egm::db::OpenMode::read_write);
    egm::db::Connection& c = db.connection();
    c.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const double bytes = static_cast<double>(fs::file_size(db_path));
    std::printf("database:           %.1f MB, %.0f bytes per cell\n", bytes / 1e6, bytes / static_cast<double>(o.cells));
    try {
      egm::db::Statement s = c.prepare(
          "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC LIMIT 8");
      while (s.step())
        std::printf("  %-28s %8.1f MB  %6.0f bytes per cell\n", s.text(0).c_str(), static_cast<double>(s.int64(1)) / 1e6,
                    static_cast<double>(s.int64(1)) / static_cast<double>(o.cells));
    } catch (const std::exception&) {
      std::printf("  (no per-table sizes: this SQLite has no dbstat)\n");
    }
    std::printf("rows: metrics %lld (train %lld), params %lld, events %lld\n",
                static_cast<long long>(scalar(c, "SELECT count(*) FROM metrics")),
                static_cast<long long>(scalar(c, "SELECT count(*) FROM metrics WHERE split = 'train'")),
                static_cast<long long>(scalar(c, "SELECT count(*) FROM params")),
                static_cast<long long>(scalar(c, "SELECT count(*) FROM events")));

    // Correctness: every cell done exactly once, with the loss its worker reported.
    const int64_t cells = scalar(c, "SELECT count(*) FROM cells");
    const int64_t done = scalar(c, "SELECT count(*) FROM cells WHERE status = 'done'");
    const int64_t done_runs = scalar(c, "SELECT count(*) FROM runs WHERE status = 'done'");
    const int64_t twice = scalar(c, "SELECT count(*) FROM (SELECT cell_id FROM runs WHERE status = 'done' "
                                    "GROUP BY cell_id HAVING count(*) > 1)");
    const int64_t not_once = scalar(c, "SELECT count(*) FROM cells WHERE attempts <> 1");
    const int64_t running = scalar(c, "SELECT count(*) FROM runs WHERE status = 'running'");
    auto expect = [&](bool ok, const std::string& what) {
      if (ok) return;
      std::printf("CHECK FAILED: %s\n", what.c_str());
      ++problems;
    };
    expect(code == 0, fmt::format("coordinator exit {}", code));
    expect(cells == o.cells, fmt::format("{} cells in the database, expected {}", cells, o.cells));
    expect(done == o.cells, fmt::format("{} cells done of {}", done, o.cells));
    expect(done_runs == o.cells, fmt::format("{} done attempts for {} cells", done_runs, o.cells));
    expect(twice == 0, fmt::format("{} cells completed more than once", twice));
    expect(not_once == 0, fmt::format("{} cells with other than one attempt", not_once));
    expect(running == 0, fmt::format("{} attempts left running", running));
    expect(static_cast<int64_t>(sim.reported().size()) == o.cells,
           fmt::format("the simulated workers finished {} cells, expected {}", sim.reported().size(), o.cells));
    int64_t wrong = 0;
    egm::db::Statement s = c.prepare("SELECT id, final_val FROM cells");
    while (s.step()) {
      auto it = sim.reported().find(s.int64(0));
      if (it == sim.reported().end() || s.is_null(1) || s.real(1) != it->second) ++wrong;
    }
    expect(wrong == 0, fmt::format("{} cells whose final_val is not what their worker reported", wrong));
    std::printf("check: %lld cells, each done once with its worker's final loss: %s\n",
                static_cast<long long>(cells), problems == 0 ? "ok" : "FAILED");
  }

  if (!o.egm.empty()) {
    const std::string db = " --db " + db_path;
    std::printf("egm status:         %.2f s\n", time_command(o.egm + " status" + db));
    std::printf("egm runs:           %.2f s (every cell)\n", time_command(o.egm + " runs --sweep scale" + db));
    std::printf("egm analyze:        %.2f s\n", time_command(o.egm + " analyze scale" + db));
  }
  if (!o.keep) fs::remove_all(dir);
  return problems == 0 ? 0 : 1;
}
