// One live coordinator per sweep (db/ownership.h): the takeover rule case by
// case, the owner's columns in the database, and process_alive.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "db/migrations.h"
#include "db/ownership.h"
#include "db/results_db.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::db;
using egm::testing::ScratchDir;

constexpr double kNow = 1'000'000;
constexpr double kLimit = 60;

SweepOwner owner_on(const std::string& host, std::optional<double> heartbeat_age,
                    std::optional<std::string> job = std::nullopt) {
  SweepOwner o;
  o.host = host;
  o.pid = 4242;
  o.started_at = kNow - 3600;
  o.slurm_job = std::move(job);
  if (heartbeat_age) o.heartbeat = kNow - *heartbeat_age;
  return o;
}

Claimant me(bool takeover = false, std::optional<std::string> job = std::nullopt) {
  return Claimant{"node1", 777, std::move(job), takeover};
}

TEST(Ownership, NobodyOwnsItClaim) {
  const TakeoverDecision d = decide_takeover(std::nullopt, kNow, me(), true, kLimit);
  EXPECT_EQ(d.kind, Takeover::claim);
}

TEST(Ownership, FreshOwnerOnThisHostIsRefusedNamingIt) {
  const TakeoverDecision d = decide_takeover(owner_on("node1", 3), kNow, me(), /*alive=*/true, kLimit);
  ASSERT_EQ(d.kind, Takeover::refuse);
  EXPECT_NE(d.line.find("pid 4242 on node1"), std::string::npos) << d.line;
  EXPECT_NE(d.line.find("last heartbeat 3 s ago"), std::string::npos) << d.line;
  EXPECT_EQ(d.line.find('\n'), std::string::npos) << d.line;
  // --takeover does not change that while the heartbeat is fresh.
  EXPECT_EQ(decide_takeover(owner_on("node1", 3), kNow, me(true), true, kLimit).kind, Takeover::refuse);
}

TEST(Ownership, OwnerOnThisHostWhoseProcessIsGoneIsTakenOverAtOnce) {
  // A kill -9: the heartbeat may be seconds old, the process is gone.
  const TakeoverDecision d = decide_takeover(owner_on("node1", 2), kNow, me(), /*alive=*/false, kLimit);
  ASSERT_EQ(d.kind, Takeover::take_over);
  EXPECT_NE(d.line.find("process is gone"), std::string::npos) << d.line;
}

TEST(Ownership, StoppedProcessOnThisHostNeedsTakeover) {
  // Alive (SIGSTOP, hung) but silent past the limit: refused, saying --takeover ...
  const TakeoverDecision refused = decide_takeover(owner_on("node1", 90), kNow, me(), /*alive=*/true, kLimit);
  ASSERT_EQ(refused.kind, Takeover::refuse);
  EXPECT_NE(refused.line.find("--takeover"), std::string::npos) << refused.line;
  EXPECT_NE(refused.line.find("last heartbeat 90 s ago"), std::string::npos) << refused.line;
  // ... which then takes it.
  const TakeoverDecision taken = decide_takeover(owner_on("node1", 90), kNow, me(true), true, kLimit);
  ASSERT_EQ(taken.kind, Takeover::take_over);
  EXPECT_NE(taken.line.find("--takeover"), std::string::npos) << taken.line;
}

TEST(Ownership, OwnerOnAnotherHostIsJudgedByItsHeartbeat) {
  // The pid means nothing here (another host): only the heartbeat counts.
  EXPECT_EQ(decide_takeover(owner_on("node2", 59), kNow, me(), /*alive=*/true, kLimit).kind, Takeover::refuse);
  EXPECT_EQ(decide_takeover(owner_on("node2", 59), kNow, me(true), true, kLimit).kind, Takeover::refuse);
  const TakeoverDecision d = decide_takeover(owner_on("node2", 61), kNow, me(), true, kLimit);
  ASSERT_EQ(d.kind, Takeover::take_over);
  EXPECT_NE(d.line.find("pid 4242 on node2"), std::string::npos) << d.line;
  EXPECT_NE(d.line.find("61 s ago"), std::string::npos) << d.line;
  // No heartbeat at all: its claim's time stands in for one.
  EXPECT_EQ(decide_takeover(owner_on("node2", std::nullopt), kNow, me(), true, kLimit).kind, Takeover::take_over);
}

TEST(Ownership, EarlierAllocationOfTheSameSlurmJobIsTakenOver) {
  // A requeued job on another node: Slurm runs one allocation of a job at a time.
  const TakeoverDecision d =
      decide_takeover(owner_on("node2", 5, "123"), kNow, me(false, "123"), true, kLimit);
  ASSERT_EQ(d.kind, Takeover::take_over);
  EXPECT_NE(d.line.find("Slurm job 123"), std::string::npos) << d.line;
  // Another job's owner is not.
  EXPECT_EQ(decide_takeover(owner_on("node2", 5, "122"), kNow, me(false, "123"), true, kLimit).kind,
            Takeover::refuse);
  // The same job on this host with a live process (two steps of one job): refused.
  EXPECT_EQ(decide_takeover(owner_on("node1", 5, "123"), kNow, me(false, "123"), true, kLimit).kind,
            Takeover::refuse);
}

TEST(Ownership, StaleLimitFromTheEnvironment) {
  ::unsetenv("EGM_STALE_AFTER_S");
  EXPECT_EQ(owner_stale_after_s(), kOwnerStaleAfterS);
  EXPECT_EQ(owner_heartbeat_interval_s(), 5);
  ::setenv("EGM_STALE_AFTER_S", "3", 1);
  EXPECT_EQ(owner_stale_after_s(), 3);
  EXPECT_EQ(owner_heartbeat_interval_s(), 1);  // a third of the limit: a live owner is never stale
  ::setenv("EGM_STALE_AFTER_S", "soon", 1);
  EXPECT_THROW(owner_stale_after_s(), egm::ConfigError);
  ::unsetenv("EGM_STALE_AFTER_S");
}

TEST(Ownership, ProcessAlive) {
  EXPECT_TRUE(process_alive(::getpid()));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  // Exited, not reaped yet: a zombie, which counts as gone.
  for (int i = 0; i < 500 && process_alive(child); ++i) ::usleep(10'000);
  EXPECT_FALSE(process_alive(child));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(process_alive(child));
  EXPECT_FALSE(process_alive(0));
}

TEST(Ownership, ClaimHeartbeatAndRelease) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t id = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  EXPECT_FALSE(db.sweep(id).owner);
  const SweepOwner a{"node1", 11, 100.5, std::string("77"), std::nullopt};
  db.claim_sweep(id, a);
  const SweepRow row = db.sweep(id);
  ASSERT_TRUE(row.owner);
  EXPECT_EQ(row.owner->host, "node1");
  EXPECT_EQ(row.owner->pid, 11);
  EXPECT_EQ(row.owner->started_at, 100.5);
  EXPECT_EQ(row.owner->slurm_job, std::optional<std::string>("77"));
  EXPECT_TRUE(row.owner->heartbeat);
  EXPECT_TRUE(db.owned_heartbeat(id, a));
  // Another coordinator takes it: the first one's heartbeat no longer writes, and says so.
  const SweepOwner b{"node2", 22, 200.25, std::nullopt, std::nullopt};
  db.claim_sweep(id, b);
  const double beat_b = *db.sweep(id).owner->heartbeat;
  EXPECT_FALSE(db.owned_heartbeat(id, a));
  EXPECT_EQ(*db.sweep(id).owner->heartbeat, beat_b);
  EXPECT_EQ(db.sweep(id).owner->pid, 22);
  // Releasing as the old owner changes nothing; as the owner, clears it.
  db.release_sweep(id, a);
  EXPECT_TRUE(db.sweep(id).owner);
  db.release_sweep(id, b);
  EXPECT_FALSE(db.sweep(id).owner);
}

TEST(Ownership, CorpusStoredAndDescribed) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t id = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  EXPECT_EQ(describe_corpus(db.sweep(id)), "not recorded (no coordinator has started the sweep)");
  db.set_sweep_corpus(id, {"abc123", 42, "/data/input.txt"});
  const SweepRow row = db.sweep(id);
  EXPECT_EQ(row.corpus_sha256, std::optional<std::string>("abc123"));
  EXPECT_EQ(row.corpus_bytes, std::optional<int64_t>(42));
  EXPECT_EQ(describe_corpus(row), "sha256 abc123 (42 bytes, /data/input.txt)");
}

// Migration 9 on a v8 file: a sweep that ran gets corpus 'unknown' (nothing
// recorded its workers' corpus), one that never ran none (its first start
// records it); nobody owns either.
TEST(Ownership, MigrationMarksSweepsThatRanUnknown) {
  ScratchDir dir;
  const std::string path = dir.file("v8.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    std::vector<Migration> v8 = results_migrations();
    v8.resize(8);
    migrate(c, v8);
    ASSERT_EQ(c.user_version(), 8);
    c.execute("INSERT INTO sweeps (id, name, spec_json, spec_hash, created_at, updated_at, status) VALUES "
              "(1, 'ran', '{}', 'h1', 0, 0, 'done'), (2, 'pending', '{}', 'h2', 0, 0, 'pending')");
    c.execute("INSERT INTO cells (id, sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, max_attempts, updated_at) "
              "VALUES (1, 1, 0, 'base-s0', 'base', 0, '{}', 'c', 10, 1, 0), (2, 2, 0, 'base-s0', 'base', 0, '{}', 'c', 10, 1, 0)");
    c.execute("INSERT INTO runs (cell_id, attempt, status, started_at) VALUES (1, 1, 'done', 0)");
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_EQ(db.schema_version(), results_schema_version());
  EXPECT_EQ(db.sweep(1).corpus_sha256, std::optional<std::string>("unknown"));
  EXPECT_EQ(describe_corpus(db.sweep(1)), "unknown (the sweep ran before egm recorded its corpus)");
  EXPECT_FALSE(db.sweep(2).corpus_sha256);
  EXPECT_FALSE(db.sweep(1).owner);
}

}  // namespace

namespace {

// A forged or skewed row (issue 40): a heartbeat a year ahead is no sign of life.
TEST(Ownership, HeartbeatFarInTheFutureCountsAsStale) {
  const SweepOwner ahead = owner_on("node2", -365.0 * 86400);
  const TakeoverDecision d = decide_takeover(ahead, kNow, me(), /*alive=*/true, kLimit);
  ASSERT_EQ(d.kind, Takeover::take_over) << d.line;
  EXPECT_NE(d.line.find("in the future"), std::string::npos) << d.line;
  // On this host, alive: --takeover takes it (it would be refused for a year otherwise).
  EXPECT_EQ(decide_takeover(owner_on("node1", -365.0 * 86400), kNow, me(true), true, kLimit).kind,
            Takeover::take_over);
  // Within the limit (clock skew between hosts): still fresh.
  EXPECT_EQ(decide_takeover(owner_on("node2", -30), kNow, me(), true, kLimit).kind, Takeover::refuse);
}

TEST(Ownership, EveryRefusalOfALiveOwnerSaysHowToGoOn) {
  const TakeoverDecision here = decide_takeover(owner_on("node1", 3), kNow, me(), true, kLimit);
  EXPECT_NE(here.line.find("--takeover"), std::string::npos) << here.line;
  const TakeoverDecision there = decide_takeover(owner_on("node2", 3), kNow, me(), true, kLimit);
  EXPECT_NE(there.line.find("takes the sweep over by itself"), std::string::npos) << there.line;
}

TEST(Ownership, APidThatCannotExistHereIsDead) {
  EXPECT_FALSE(process_alive((int64_t{1} << 32) + 1));  // kill() would see pid 1
  EXPECT_FALSE(process_alive(int64_t{1} << 40));
  EXPECT_TRUE(process_alive(::getpid()));
}

}  // namespace
