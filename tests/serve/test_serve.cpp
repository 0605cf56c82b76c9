// egm serve: every route and refusal through handle_request, then the real
// server over loopback (200 concurrent requests), on the analysis fixture
// (tests/analysis/fixture.h: sweep "fixture", 4 variants x 3 seeds, done;
// "one_seed"), plus sweeps whose coordinator is alive or gone. After every
// test the database file's bytes and mtime are what they were before.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <regex>
#include <thread>

#include "analysis/figures.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "fixture.h"
#include "serve/html.h"
#include "serve/server.h"
#include "serve/site.h"
#include "serve/svg.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using egm::serve::handle_request;
using egm::serve::Response;
using egm::testing::FileSnapshot;
using egm::testing::ScratchDir;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Serve : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = scratch_.file("results.sqlite");
    egm::db::ResultsDb db(path_, egm::db::OpenMode::read_write_create);
    ids_ = egm::testing::write_fixture(db);
    egm::testing::FixtureOptions one;
    one.name = "one_seed";
    one.seeds = {0};
    egm::testing::write_fixture(db, one);
    db.connection().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  void TearDown() override {
    // Nothing a request did changed the file.
    if (!before_.exists) return;
    EXPECT_TRUE(FileSnapshot::of(path_).same_as(before_)) << "the database file changed";
  }
  void snapshot() { before_ = FileSnapshot::of(path_); }
  Response get(const std::string& target) { return handle_request(options(), "GET", target); }
  egm::serve::SiteOptions options() const {
    egm::serve::SiteOptions o;
    o.db_path = path_;
    o.refresh_s = 3;
    return o;
  }
  // A sweep "live" (or "gone") with one cell running and a heartbeat at `heartbeat`.
  void add_running_sweep(const std::string& name, double heartbeat) {
    egm::db::ResultsDb db(path_, egm::db::OpenMode::read_write);
    egm::testing::FixtureOptions o;
    o.name = name;
    o.replace_keys = {"ega_mope-s2"};
    egm::testing::FixtureCell running;
    running.variant = "ega_mope";
    running.seed = 2;
    running.outcome = egm::testing::Outcome::running;
    o.extra_cells.push_back(running);
    egm::testing::write_fixture(db, o);
    db.set_clock([heartbeat] { return heartbeat; });
    db.set_sweep_status(db.find_sweep(name)->id, egm::db::SweepStatus::running);
  }

  ScratchDir scratch_;
  std::string path_;
  std::map<std::string, int64_t> ids_;
  FileSnapshot before_;
};

bool has(const std::string& body, const std::string& needle) { return body.find(needle) != std::string::npos; }

TEST_F(Serve, SweepsPageListsEverySweepWithItsProgress) {
  snapshot();
  const Response r = get("/");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_TRUE(has(r.body, "<table id=\"sweeps\">"));
  EXPECT_TRUE(has(r.body, "<a href=\"/sweep/fixture\">fixture</a>"));
  EXPECT_TRUE(has(r.body, "<a href=\"/sweep/one_seed\">one_seed</a>"));
  EXPECT_TRUE(has(r.body, "data-progress=\"1.000000\"")) << "every cell of the fixture is done";
  EXPECT_FALSE(has(r.body, "http-equiv=\"refresh\"")) << "nothing runs: no reload";
  const Response csv = get("/sweeps.csv");
  ASSERT_EQ(csv.status, 200);
  EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(csv.filename, "sweeps.csv");
  EXPECT_EQ(csv.body.substr(0, csv.body.find('\n')),
            "sweep,status,cells,done,running,pending,failed,interrupted,steps_done,steps_to_run,progress,eta_s,"
            "created_utc,updated_utc,heartbeat_utc,slurm_job_id");
  const auto json = nlohmann::json::parse(get("/sweeps.json").body);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["sweep"], "fixture");
  EXPECT_EQ(json[0]["cells"], 12);
  EXPECT_EQ(json[0]["done"], 12);
  EXPECT_EQ(json[1]["cells"], 4);
}

TEST_F(Serve, SweepPageHasThePaperTableVerdictPlotsAndCells) {
  snapshot();
  const Response r = get("/sweep/fixture");
  ASSERT_EQ(r.status, 200) << r.body;
  // The headline as egm analyze prints it: means with intervals, deltas, I, verdict, published.
  // The paper's table is a table, its numbers as the Markdown report writes them, the published column beside ours.
  EXPECT_TRUE(has(r.body, "<table id=\"main-table\">"));
  EXPECT_TRUE(has(r.body, "<td>1.5000 ± 0.0497 (3)</td>")) << "mean 1.50, t(0.975, 2) * 0.02 / sqrt(3) = 0.0497";
  EXPECT_TRUE(has(r.body, "<th>published</th>"));
  EXPECT_TRUE(has(r.body, "<pre id=\"interaction-lines\">"));
  EXPECT_TRUE(has(r.body, "interaction I = delta(ega_mope) - delta(ega) - delta(mope) = +0.0600"));
  EXPECT_TRUE(has(r.body, "id=\"verdict\">superadditive"));
  EXPECT_TRUE(has(r.body, "published I = +0.0589"));
  for (const char* id : {"table-deltas", "table-interaction", "table-published", "table-summary",
                         "table-per_seed", "table-mope_runs", "table-gates_by_layer", "table-cells"})
    EXPECT_TRUE(has(r.body, std::string("<table id=\"") + id + "\">")) << id;
  // Each claim's anytime-valid sequence, as text beside the fixed-n interval and as a figure.
  EXPECT_TRUE(has(r.body, "<pre id=\"sequences\">anytime-valid confidence sequences"));
  for (const char* id : {"plot-val-curves", "plot-omega-sigma", "plot-interaction", "plot-sequences"})
    EXPECT_TRUE(has(r.body, std::string("<svg id=\"") + id + "\"")) << id;
  // Four variants' val curves, each a line and a seed band.
  const std::string curves = r.body.substr(r.body.find("<svg id=\"plot-val-curves\""));
  const std::string first_svg = curves.substr(0, curves.find("</svg>"));
  size_t lines = 0, bands = 0;
  for (size_t p = 0; (p = first_svg.find("class=\"line\"", p)) != std::string::npos; ++p) ++lines;
  for (size_t p = 0; (p = first_svg.find("class=\"band\"", p)) != std::string::npos; ++p) ++bands;
  EXPECT_EQ(lines, 4u);
  EXPECT_EQ(bands, 4u);
  EXPECT_TRUE(has(r.body, "<a href=\"/sweep/fixture/cell/ega_mope-s1\">ega_mope-s1</a>"));
  EXPECT_TRUE(has(r.body, "href=\"/sweep/fixture/paper.csv\""));
  EXPECT_FALSE(has(r.body, "http-equiv=\"refresh\""));
  // One seed: no interval, so no verdict.
  const Response one = get("/sweep/one_seed");
  ASSERT_EQ(one.status, 200);
  EXPECT_TRUE(has(one.body, "id=\"verdict\">no verdict")) << one.body.substr(0, 3000);
}

TEST_F(Serve, EveryTableDownloadsAsCsvAndJson) {
  snapshot();
  for (const char* const* t = egm::serve::sweep_table_names(); *t; ++t) {
    const std::string name = *t;
    if (name == "grid" || name == "grid_across") {  // the fixture has no grid points
      if (name == "grid_across") EXPECT_EQ(get("/sweep/fixture/grid_across.csv").status, 404);
      continue;
    }
    const Response csv = get("/sweep/fixture/" + name + ".csv");
    ASSERT_EQ(csv.status, 200) << name << ": " << csv.body;
    EXPECT_EQ(csv.filename, "fixture-" + name + ".csv");
    const Response json = get("/sweep/fixture/" + name + ".json");
    ASSERT_EQ(json.status, 200) << name;
    EXPECT_EQ(json.content_type, "application/json");
    EXPECT_TRUE(nlohmann::json::parse(json.body).is_array()) << name;
  }
  const auto paper = nlohmann::json::parse(get("/sweep/fixture/paper.json").body);
  ASSERT_EQ(paper.size(), 5u);  // 4 variants + the interaction row
  EXPECT_EQ(paper[0]["variant"], "base");
  EXPECT_NEAR(paper[0]["mean"].get<double>(), 1.50, 1e-12);
  EXPECT_NEAR(paper[3]["mean"].get<double>(), 1.38, 1e-12);
  EXPECT_NEAR(paper[4]["delta"].get<double>(), 0.06, 1e-12);  // I
  const auto cells = nlohmann::json::parse(get("/sweep/fixture/cells.json").body);
  EXPECT_EQ(cells.size(), 12u);
  // ?metric switches the analysis: best_val = final_val - 0.01 everywhere.
  const auto best = nlohmann::json::parse(get("/sweep/fixture/paper.json?metric=best_val").body);
  EXPECT_NEAR(best[0]["mean"].get<double>(), 1.49, 1e-12);
  for (const char* t : {"attempts", "events", "metrics", "params"}) {
    const Response r = get(std::string("/sweep/fixture/cell/mope-s0/") + t + ".json");
    ASSERT_EQ(r.status, 200) << t;
    EXPECT_TRUE(nlohmann::json::parse(r.body).is_array()) << t;
  }
  EXPECT_EQ(nlohmann::json::parse(get("/sweep/fixture/cell/mope-s0/attempts.json").body).size(), 1u);
  // Events carry their step (schema v4): the attempt ended at the cell's final step, 100.
  const auto events = nlohmann::json::parse(get("/sweep/fixture/cell/mope-s0/events.json").body);
  bool done_at_100 = false;
  for (const auto& e : events) {
    ASSERT_TRUE(e.contains("step")) << e.dump();
    done_at_100 |= e["kind"] == "attempt_done" && e["step"] == 100;
  }
  EXPECT_TRUE(done_at_100) << events.dump();
}

TEST_F(Serve, CellPageShowsAttemptsCurvesAndLearnedParameters) {
  snapshot();
  const Response r = get("/sweep/fixture/cell/ega_mope-s1");
  ASSERT_EQ(r.status, 200) << r.body;
  for (const char* id : {"table-results", "table-params", "table-attempts", "table-events"})
    EXPECT_TRUE(has(r.body, std::string("<table id=\"") + id + "\">")) << id;
  EXPECT_TRUE(has(r.body, "<svg id=\"plot-loss\""));
  EXPECT_TRUE(has(r.body, "<svg id=\"plot-omega-sigma\"")) << "ega_mope has MoPE pairs";
  EXPECT_TRUE(has(r.body, "<td>tau</td>")) << "and EGA gates";
  EXPECT_TRUE(has(r.body, "<td class=\"num\">1.39</td>")) << "its final val loss (fixture: 1.39)";
  // base has neither: no parameter table, no plane.
  const Response base = get("/sweep/fixture/cell/base-s0");
  ASSERT_EQ(base.status, 200);
  EXPECT_FALSE(has(base.body, "plot-omega-sigma"));
}

TEST_F(Serve, TheSqlBoxReadsAndRefusesToWrite) {
  snapshot();
  const Response r = get("/query?sql=SELECT+count(*)+AS+n+FROM+cells");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(has(r.body, "<table id=\"query-result\">"));
  EXPECT_TRUE(has(r.body, "<td class=\"num\">16</td>")) << "12 + 4 cells";
  EXPECT_EQ(get("/query.csv?sql=SELECT%20variant%20FROM%20cells%20WHERE%20key%3D%27ega-s2%27").body,
            "variant\nega\n");
  EXPECT_TRUE(has(get("/query").body, "<textarea name=\"sql\""));
  for (const char* sql : {"DELETE FROM cells", "UPDATE cells SET status = 'failed'", "DROP TABLE cells",
                          "INSERT INTO events (time, kind, message) VALUES (0, 'x', 'y')",
                          "PRAGMA query_only = OFF", "ATTACH DATABASE '/tmp/x.sqlite' AS x", "VACUUM",
                          "CREATE TABLE t (x)"}) {
    const Response w = get("/query?sql=" + egm::serve::url_encode(sql));
    EXPECT_TRUE(w.status == 403 || w.status == 400) << sql << ": " << w.status;
    EXPECT_TRUE(has(w.body, "id=\"error\"")) << sql;
    const Response d = get("/query.json?sql=" + egm::serve::url_encode(sql));
    EXPECT_TRUE(d.status == 403 || d.status == 400) << sql;
  }
  EXPECT_EQ(get("/query?sql=DELETE+FROM+cells").status, 403);
  EXPECT_EQ(get("/query?sql=SELEC+1").status, 400);
  EXPECT_EQ(get("/query?sql=SELECT+1%3B+SELECT+2").status, 400) << "one statement only";
  EXPECT_EQ(get("/query.csv").status, 400) << "a download needs ?sql=";
}

// /paper: egm paper's scorecard (src/analysis/scorecard.h) with the built-in claims: each claim's
// row per sweep that measured it, the sweep linked, "not measured" rows for what the fixture lacks,
// the CSV and JSON forms, and every name from the database escaped.
TEST_F(Serve, PaperPageScoresEveryPublishedClaim) {
  {  // a sweep whose name is markup, measuring the same claims
    egm::db::ResultsDb db(path_, egm::db::OpenMode::read_write);
    egm::testing::FixtureOptions o;
    o.name = "<script>x</script>";
    egm::testing::write_fixture(db, o);
    db.connection().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  snapshot();
  const Response r = get("/paper");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(has(r.body, "<table id=\"scorecard\">"));
  // delta(ega) = 0.08 [0.055, 0.105] over 3 seeds against a published +0.092 (test_scorecard.cpp).
  EXPECT_TRUE(has(r.body, "<tr data-claim=\"ega\" data-verdict=\"reproduced in sign\"><td>ega: EGA with the "
                          "learned table beats the baseline</td><td>1.3821 (delta +0.0920)</td><td><a "
                          "href=\"/sweep/fixture\">fixture</a></td>"))
      << r.body;
  EXPECT_TRUE(has(r.body, "<tr data-claim=\"ega\" data-verdict=\"not settled\">")) << "one_seed: no interval";
  EXPECT_TRUE(has(r.body, "<tr data-claim=\"sincos\" data-verdict=\"not measured\">"));
  EXPECT_TRUE(has(r.body, "<tr data-claim=\"mope_four_clusters\" data-verdict=\"reproduced\">"));
  EXPECT_TRUE(has(r.body, "href=\"/sweep/%3Cscript%3Ex%3C%2Fscript%3E\">&lt;script&gt;x&lt;/script&gt;</a>"));
  EXPECT_FALSE(has(r.body, "<script>x"));
  const Response csv = get("/paper.csv");
  ASSERT_EQ(csv.status, 200);
  EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(csv.filename, "paper.csv");
  EXPECT_EQ(csv.body.rfind("claim,kind,variant,reference,published_value,published_delta,delta_quoted,sweep,", 0), 0u);
  const Response json = get("/paper.json");
  ASSERT_EQ(json.status, 200);
  EXPECT_EQ(json.filename, "paper.json");
  const auto j = nlohmann::json::parse(json.body);
  EXPECT_EQ(j["rows"].size(), static_cast<size_t>(std::count(csv.body.begin(), csv.body.end(), '\n') - 1));
  EXPECT_EQ(j["claims_file"], "embedded experiments/paper_claims.json");
  EXPECT_EQ(get("/paper?metric=best_val").status, 400) << "the page takes no parameters";
  EXPECT_EQ(get("/paper/x").status, 404);
}

TEST_F(Serve, BadRequestsGetA4xxPageWithAClearMessage) {
  snapshot();
  struct Case {
    const char* method;
    const char* target;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {"GET", "/nope", 404, "no page at '/nope'"},
      {"GET", "/sweep", 404, "no page at '/sweep'"},
      {"GET", "/sweep/missing", 404, "no sweep named 'missing'"},
      {"GET", "/sweep/missing/cell/base-s0", 404, "no sweep named 'missing'"},
      {"GET", "/sweep/fixture/cell/base-s9", 404, "no cell 'base-s9' in sweep 'fixture'"},
      {"GET", "/sweep/fixture/nonsense.csv", 404, "no table 'nonsense.csv'"},
      {"GET", "/sweep/fixture/paper", 404, "no table 'paper'"},
      {"GET", "/sweep/fixture/cell/base-s0/secrets.csv", 404, "no table 'secrets.csv'"},
      {"GET", "/sweep/fixture/a/b/c/d", 404, "no page at"},
      {"GET", "/sweep/fixture?metric=bogus", 400, "bogus"},
      {"GET", "/sweep/fixture?point=3", 404, "this sweep has no grid points"},
      {"GET", "/sweep/fixture?colour=red", 400, "unknown parameter 'colour' for /sweep/NAME; it takes: metric, point"},
      {"GET", "/sweep/fixture?metric=final_val&metric=best_val", 400, "parameter 'metric' given twice"},
      {"GET", "/?all", 400, "malformed query string: 'all' has no '='"},
      {"GET", "/?all=%zz", 400, "malformed query string: bad %-escape"},
      {"GET", "/?all=1&&x=2", 400, "malformed query string"},
      {"GET", "/?all=2", 400, "parameter 'all' takes 0 or 1"},
      {"GET", "/sweep/fix%2", 400, "malformed path"},
      {"GET", "/sweep/fixture/cell/base-s0?x=1", 400, "unknown parameter 'x'"},
      {"POST", "/", 405, "method POST not allowed"},
      {"DELETE", "/sweep/fixture", 405, "method DELETE not allowed"},
      {"PUT", "/query", 405, "method PUT not allowed"},
  };
  for (const Case& c : cases) {
    const Response r = handle_request(options(), c.method, c.target);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << ": " << r.body;
    const std::string path = std::string(c.target).substr(0, std::string(c.target).find('?'));
    const bool download = path.size() > 4 && (path.substr(path.size() - 4) == ".csv" || path.substr(path.size() - 5) == ".json");
    if (download) {  // a download's refusal is one line of plain text
      EXPECT_TRUE(has(r.body, c.message)) << c.target << ": " << r.body;
      EXPECT_EQ(r.content_type, "text/plain; charset=utf-8") << c.target;
      EXPECT_EQ(std::count(r.body.begin(), r.body.end(), '\n'), 1) << c.target;
    } else {
      EXPECT_TRUE(has(r.body, egm::serve::escape(c.message))) << c.method << " " << c.target << ": " << r.body;
      EXPECT_EQ(r.content_type, "text/html; charset=utf-8") << c.target;
      EXPECT_TRUE(has(r.body, "id=\"error\"")) << c.target;
    }
  }
  // A download's refusal is plain text, one line.
  const Response csv = get("/sweep/missing/paper.csv");
  EXPECT_EQ(csv.status, 404);
  EXPECT_EQ(csv.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(std::count(csv.body.begin(), csv.body.end(), '\n'), 1);
  // User text in a message is escaped, never markup.
  const Response x = get("/sweep/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
  EXPECT_EQ(x.status, 404);
  EXPECT_FALSE(has(x.body, "<script>"));
  EXPECT_TRUE(has(x.body, "&lt;script&gt;"));
}

TEST_F(Serve, ALiveSweepReloadsItselfAndAGoneOneShowsStale) {
  add_running_sweep("live", unix_now());
  add_running_sweep("gone", unix_now() - 3600);
  snapshot();
  const Response list = get("/");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(has(list.body, "<meta http-equiv=\"refresh\" content=\"3\">")) << "a sweep runs";
  EXPECT_TRUE(has(list.body, "status-running\">running")) << "live";
  EXPECT_TRUE(has(list.body, "status-stale\">stale")) << "gone";
  EXPECT_TRUE(has(list.body, "stale: coordinator gone"));
  const Response live = get("/sweep/live");
  EXPECT_TRUE(has(live.body, "http-equiv=\"refresh\""));
  EXPECT_TRUE(has(live.body, "<table id=\"table-running\">"));
  EXPECT_TRUE(has(live.body, "1 running"));
  EXPECT_TRUE(has(live.body, "11 of 12 cells used"));
  const Response gone = get("/sweep/gone");
  EXPECT_FALSE(has(gone.body, "http-equiv=\"refresh\"")) << "nothing will change: no reload";
  EXPECT_TRUE(has(gone.body, "id=\"stale\">stale: no heartbeat since"));
  EXPECT_TRUE(has(gone.body, "0 running")) << "its running cell counts as interrupted";
  EXPECT_TRUE(has(gone.body, "1 interrupted"));
  const auto rows = nlohmann::json::parse(get("/sweeps.json").body);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2]["status"], "running");
  EXPECT_EQ(rows[3]["status"], "stale");
  EXPECT_TRUE(rows[3]["eta_s"].is_null());
}

// Grid points (cells.grid_point, schema 3): each point analysed on its own.
TEST_F(Serve, AGridSweepIsAnalysedPerPoint) {
  {
    egm::db::Connection c(path_, egm::db::OpenMode::read_write);
    bool has_grid = false;
    egm::db::Statement s = c.prepare("SELECT name FROM pragma_table_info('cells')");
    while (s.step()) has_grid = has_grid || s.text(0) == "grid_point";
    if (!has_grid) GTEST_SKIP() << "this schema has no grid points";
    // Seeds 0 and 1 as point 0 (lr 0.001), seed 2 as point 1 (lr 0.002).
    c.exec("UPDATE cells SET grid_point = (seed = 2), grid_json = CASE WHEN seed = 2 THEN '{\"train.lr\":0.002}' "
           "ELSE '{\"train.lr\":0.001}' END WHERE sweep_id = (SELECT id FROM sweeps WHERE name = 'fixture')");
    c.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  snapshot();
  const Response r = get("/sweep/fixture");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(has(r.body, "<table id=\"table-grid\">"));
  EXPECT_TRUE(has(r.body, "point 0: train.lr=0.001"));
  EXPECT_TRUE(has(r.body, "point 1: train.lr=0.002"));
  // Across points, as egm analyze prints it: base's mean at point 0 is seeds 0 and 1.
  EXPECT_TRUE(has(r.body, "<table id=\"table-grid-across\">"));
  EXPECT_TRUE(has(r.body, "<td>mean(base)</td><td>1.4900 ")) << r.body.substr(r.body.find("table-grid-across"), 800);
  const auto across = nlohmann::json::parse(get("/sweep/fixture/grid_across.json").body);
  bool found = false;
  for (const auto& row : across)
    if (row["quantity"] == "mean(base)" && row["grid_point"] == 0) {
      EXPECT_NEAR(row["estimate"].get<double>(), 1.49, 1e-12);
      found = true;
    }
  EXPECT_TRUE(found) << across.dump();
  const Response p1 = get("/sweep/fixture?point=1");
  ASSERT_EQ(p1.status, 200);
  EXPECT_TRUE(has(p1.body, "4 of 4 cells used")) << "point 1 holds seed 2: one cell per variant";
  const auto paper = nlohmann::json::parse(get("/sweep/fixture/paper.json?point=0").body);
  EXPECT_NEAR(paper[0]["mean"].get<double>(), 1.49, 1e-12) << "base seeds 0 and 1: (1.48 + 1.50) / 2";
  EXPECT_EQ(get("/sweep/fixture/paper.json").status, 400) << "a grid sweep's analysis table needs a point";
  EXPECT_EQ(get("/sweep/fixture?point=7").status, 404);
}

TEST_F(Serve, MissingDatabaseIsAnErrorAndCreatesNothing) {
  egm::serve::ServeOptions o;
  o.site.db_path = scratch_.file("absent.sqlite");
  o.port = 0;
  EXPECT_THROW(egm::serve::Server server(o), egm::DbError);
  EXPECT_FALSE(std::filesystem::exists(o.site.db_path));
  EXPECT_FALSE(std::filesystem::exists(o.site.db_path + "-wal"));
  // A file that is not a database: one line (no SQL appended), and untouched.
  o.site.db_path = scratch_.file("text.sqlite");
  egm::atomic_write_file(o.site.db_path, "not sqlite");
  try {
    egm::serve::Server server(o);
    ADD_FAILURE() << "a text file was served";
  } catch (const egm::DbError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_EQ(egm::read_file(o.site.db_path), "not sqlite");
}

// The real server on loopback: 200 requests at once, all answered correctly.
TEST_F(Serve, TwoHundredConcurrentRequestsAllAnswered) {
  snapshot();
  egm::serve::ServeOptions o;
  o.site = options();
  o.port = 0;
  egm::serve::Server server(o);
  EXPECT_EQ(server.host(), "127.0.0.1") << "the default binds loopback only";
  std::thread runner([&] { server.run(); });
  struct Probe {
    std::string target;
    int status;
    std::string needle;
  };
  const std::vector<Probe> probes{
      {"/", 200, "<table id=\"sweeps\">"},
      {"/sweep/fixture", 200, "id=\"verdict\">superadditive"},
      {"/sweep/fixture/cell/mope-s2", 200, "<svg id=\"plot-loss\""},
      {"/sweep/fixture/paper.csv", 200, "variant,attention,position"},
      {"/query.json?sql=SELECT%20count(*)%20AS%20n%20FROM%20cells", 200, "\"n\": 16"},
      {"/sweep/nope", 404, "no sweep named"},
      {"/?bad", 400, "malformed query string"},
  };
  constexpr int kRequests = 200;
  std::atomic<int> ok{0};
  std::vector<std::string> failures;
  std::mutex failures_mutex;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i)
    clients.emplace_back([&, i] {
      const Probe& p = probes[static_cast<size_t>(i) % probes.size()];
      httplib::Client client("127.0.0.1", server.port());
      client.set_connection_timeout(60);
      client.set_read_timeout(120);
      auto res = client.Get(p.target.c_str());
      if (res && res->status == p.status && res->body.find(p.needle) != std::string::npos) {
        ++ok;
      } else {
        std::lock_guard<std::mutex> lock(failures_mutex);
        failures.push_back(p.target + ": " + (res ? std::to_string(res->status) : httplib::to_string(res.error())));
      }
    });
  for (auto& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(ok.load(), kRequests) << (failures.empty() ? "" : failures.front());
  // Liveness, not speed: the timing is results/BENCHMARKS.md's business.
  EXPECT_LT(seconds, 180.0);
  // Over the wire: another method is 405, HEAD answers like GET without a body.
  httplib::Client client("127.0.0.1", server.port());
  auto post = client.Post("/query", "sql=DELETE FROM cells", "application/x-www-form-urlencoded");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto head = client.Head("/sweep/fixture");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  auto dl = client.Get("/sweep/fixture/cells.csv");
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->get_header_value("Content-Disposition"),
            "attachment; filename=\"fixture-cells.csv\"; filename*=UTF-8''fixture-cells.csv");
  server.stop();
  runner.join();
}

TEST(ServeHtml, EscapesAndCodesUrls) {
  EXPECT_EQ(egm::serve::escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(egm::serve::url_encode("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
  EXPECT_EQ(egm::serve::url_decode("a%20b+c", true), "a b c");
  EXPECT_EQ(egm::serve::url_decode("a+b", false), "a+b");
  EXPECT_FALSE(egm::serve::url_decode("%zz", true));
  EXPECT_FALSE(egm::serve::url_decode("abc%2", true));
  EXPECT_FALSE(egm::serve::url_decode("%", true));
}

TEST(ServeSvg, DrawsLayersAndSkipsWhatALogAxisCannotShow) {
  egm::analysis::Figure plot;
  plot.title = "t";
  plot.log_y = true;
  plot.line({1, 2, 3, 4}, {1, -1, 10, NAN}, "#000", "l");  // -1 and NaN break the line
  const std::string svg = egm::serve::render_svg(plot, "p");
  EXPECT_EQ(svg.rfind("<svg id=\"p\"", 0), 0u);
  // Two pieces: M at x=1, then M again at x=3 (the point after the gap).
  const auto d_start = svg.find("class=\"line\" d=\"");
  ASSERT_NE(d_start, std::string::npos);
  const std::string d = svg.substr(d_start + 16, svg.find('"', d_start + 16) - d_start - 16);
  EXPECT_EQ(std::count(d.begin(), d.end(), 'M'), 2) << d;
  EXPECT_EQ(std::count(d.begin(), d.end(), 'L'), 0) << d;
  egm::analysis::Figure empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_NE(egm::serve::render_svg(empty, "e").find("no data yet"), std::string::npos);
}

// Every match of `re` in `svg`, its first group.
std::vector<std::string> svg_matches(const std::string& svg, const std::string& re) {
  std::vector<std::string> out;
  const std::regex r(re);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), r); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST(ServeSvg, CountAxesTickWholeNumbers) {
  egm::analysis::Figure f;
  f.integer_x = true;
  f.line({1, 2, 3, 4}, {0.1, 0.2, 0.1, 0.3}, "#000", "l");
  const auto ticks = svg_matches(egm::serve::render_svg(f, "p"), "class=\"xtick\"[^>]*>([^<]*)<");
  EXPECT_EQ(ticks, (std::vector<std::string>{"1", "2", "3", "4"}));
  f.integer_x = false;
  const auto fractional = svg_matches(egm::serve::render_svg(f, "p"), "class=\"xtick\"[^>]*>([^<]*)<");
  EXPECT_NE(std::find(fractional.begin(), fractional.end(), "1.5"), fractional.end()) << "the control";
}

TEST(ServeSvg, LegendListsIntervalsSpansAndDiamondsAsDrawn) {
  egm::analysis::Figure f;
  f.categories = {"a", "b"};
  f.interval(0, 1, 0.5, 1.5, "#111111", 0, "ours");
  f.interval(1, 1, 0.5, 1.5, "#111111", 0, "ours");  // listed once
  f.points({0.2}, {1.2}, "#222222", "published", false, "diamond");
  f.span(-0.5, 0.5, "#333333", "unbounded");
  const std::string svg = egm::serve::render_svg(f, "p");
  EXPECT_EQ(svg_matches(svg, "<text class=\"legend\"[^>]*><tspan[^>]*>([^<]*)<").size(), 3u) << svg;
  EXPECT_NE(svg.find("<path class=\"swatch\" d=\"M"), std::string::npos) << "an interval's swatch is an interval";
  EXPECT_NE(svg.find("l5,5l-5,5l-5,-5z\" fill=\"#222222\""), std::string::npos) << "a diamond's swatch is a diamond";
  EXPECT_NE(svg.find("<rect class=\"swatch\""), std::string::npos);
  EXPECT_NE(svg.find("<rect class=\"span\""), std::string::npos);
}

TEST(ServeSvg, CategoryLabelsThatWouldTouchAreWrappedOrTurned) {
  egm::analysis::Figure f;
  for (const char* c : {"delta(ega)", "delta(mope)", "sum of parts", "delta(ega_mope)", "interaction I"})
    f.categories.push_back(c);
  for (size_t i = 0; i < f.categories.size(); ++i)
    f.interval(static_cast<double>(i), 0.1, 0, 0.2, "#111111", 0, "twenty characters ok");
  // About 96 px per category: "delta(ega_mope)" (about 103 px) goes on two lines, at its parenthesis.
  const std::string wrapped = egm::serve::render_svg(f, "p");
  EXPECT_EQ(svg_matches(wrapped, ">delta</tspan><tspan x=\"[0-9.]+\" dy=\"13\">(\\(ega_mope\\))</tspan>").size(), 1u)
      << wrapped;
  EXPECT_EQ(svg_matches(wrapped, ">(sum of parts)</tspan></text>").size(), 1u) << "fits on one line" << wrapped;
  EXPECT_EQ(wrapped.find("rotate(-35)"), std::string::npos);
  // A word wider than its share is never cut: the labels are turned instead.
  f.categories[3] = "delta(ega_causal_rope_only)";
  const std::string turned = egm::serve::render_svg(f, "p");
  EXPECT_EQ(svg_matches(turned, "class=\"xtick\" transform=\"translate\\([^)]*\\) (rotate\\(-35\\))").size(), 5u)
      << turned;
  // Short labels stay as they are.
  for (auto& c : f.categories) c = "a";
  EXPECT_EQ(svg_matches(egm::serve::render_svg(f, "p"), "(<tspan)").size(), 5u + 1u) << "one line each, and the legend";
}

TEST(ServeSvg, ALegendTallerThanTheFigureMakesItTaller) {
  egm::analysis::Figure f;
  for (int i = 0; i < 30; ++i)
    f.line({0, 1}, {0, 1}, egm::analysis::figure_colour(static_cast<size_t>(i)),
           "variant number " + std::to_string(i) + " with a name long enough to wrap onto a second line");
  const std::string svg = egm::serve::render_svg(f, "p", 720, 380);
  const auto heights = svg_matches(svg, "<svg [^>]* height=\"([0-9]+)\"");
  ASSERT_EQ(heights.size(), 1u);
  EXPECT_GT(std::stoi(heights[0]), 30 * 2 * 13) << "thirty entries of two lines each";
  // Every legend line starts inside and is at most as long as the column allows (by the renderer's estimate).
  for (const std::string& line : svg_matches(svg, "<tspan x=\"[0-9.]+\" dy=\"[0-9]+\">([^<]*)</tspan>"))
    EXPECT_LE(line.size(), 44u) << line;
}

}  // namespace

namespace {

// A sweep name from the database in a download's header (issue 40): a quote and
// "filename*=" must not make a browser save a CSV as evil.html.
TEST(ServeHtml, ContentDispositionNeverCarriesTheNameAsItIs) {
  const std::string h = egm::serve::content_disposition("x\"; filename*=UTF-8''evil.html; a=\"-cells.csv");
  EXPECT_EQ(h.rfind("attachment; filename=\"", 0), 0u) << h;
  // Exactly two quotes (around the safe name), one filename*, no ';' beyond the two separators.
  EXPECT_EQ(std::count(h.begin(), h.end(), '"'), 2) << h;
  EXPECT_EQ(std::count(h.begin(), h.end(), ';'), 2) << h;
  EXPECT_EQ(h.find("evil.html;"), std::string::npos) << h;
  EXPECT_NE(h.find("filename*=UTF-8''x%22%3B%20filename%2A%3DUTF-8%27%27evil.html%3B%20a%3D%22-cells.csv"),
            std::string::npos)
      << h;
  EXPECT_EQ(egm::serve::content_disposition("fixture-cells.csv"),
            "attachment; filename=\"fixture-cells.csv\"; filename*=UTF-8''fixture-cells.csv");
  const std::string ctl = egm::serve::content_disposition("a\r\nSet-Cookie: x=1");
  EXPECT_EQ(ctl.find('\r'), std::string::npos);
  EXPECT_EQ(ctl.find('\n'), std::string::npos);
}

}  // namespace
