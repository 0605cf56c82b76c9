// The real worker over the in-process transport, with the test as its
// coordinator: HELLO, records forwarded in batches, RESULT equal to a direct
// Trainer run of the same config (bitwise, one thread), STOP -> checkpoint ->
// resume from that step, an injected failure -> FAILED with where it was
// raised, a stop signal -> "interrupted" (the worker does not die), SHUTDOWN -> BYE.
// Needs the TinyShakespeare corpus ($EGM_DATA, else the configured test path).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <future>

#include "config/run_config.h"
#include "data/corpus.h"
#include "data/corpus_source.h"
#include "protocol/in_process_transport.h"
#include "train/trainer.h"
#include "util/files.h"
#include "util/stop_signal.h"
#include "workers/run_group.h"
#include "workers/worker.h"

namespace fs = std::filesystem;
namespace es = egm::protocol;

namespace {

std::string corpus_path() {
  const char* env = std::getenv("EGM_DATA");
  return env && *env ? std::string(env) : std::string(EGM_TEST_DATA);
}

egm::RunConfig tiny_config(const std::string& variant, uint64_t seed, int64_t steps) {
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = variant;
  egm::apply_variant_options(c.model);
  c.train.seed = seed;
  c.train.max_steps = steps;
  c.train.eval_interval = 10;
  egm::validate(c);
  return c;
}

class WorkerInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!egm::file_exists(corpus_path())) GTEST_SKIP() << "no corpus at " << corpus_path() << " (set EGM_DATA)";
    egm::clear_stop_request();
    dir_ = fs::temp_directory_path() /
           ("egm_test_worker_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    hub_ = std::make_unique<es::InProcessHub>(2);
    me_ = hub_->endpoint(0);
    worker_transport_ = hub_->endpoint(1);
    worker_ = std::make_unique<egm::worker::Worker>(egm::worker::WorkerOptions{corpus_path()}, *worker_transport_,
                                                    group_factory());
    exit_code_ = std::async(std::launch::async, [this] { return worker_->run(); });
    hello_ = std::get<es::Hello>(next().message);
  }
  void TearDown() override {
    if (exit_code_.valid()) {
      es::send_message(*me_, 1, es::Shutdown{"test over"});
      while (true) {
        auto r = es::wait_message(*me_, std::chrono::seconds(30));
        if (!r || std::holds_alternative<es::Bye>(r->message)) break;
      }
      EXPECT_EQ(exit_code_.get(), 0);
    }
    egm::clear_stop_request();
    fs::remove_all(dir_);
  }

  // How the worker forms k-rank groups: none here (as without MPI).
  virtual egm::worker::RunGroupFactory group_factory() { return {}; }

  es::Received next() {
    auto r = es::wait_message(*me_, std::chrono::seconds(60));
    if (!r) throw std::runtime_error("no message from the worker within 60 s");
    return *r;
  }

  es::Assign assign(const egm::RunConfig& config, int64_t cell_id, int64_t fail_at_step = -1) {
    es::Assign a;
    a.cell_id = cell_id;
    a.run_id = cell_id * 10;
    a.cell_key = config.model.variant + "-s" + std::to_string(config.train.seed);
    a.variant = config.model.variant;
    a.seed = config.train.seed;
    a.config_json = egm::to_json(config).dump();
    a.runtime.out_dir = (dir_ / a.cell_key).string();
    a.runtime.threads = 1;
    a.runtime.log_interval = 5;
    a.runtime.fail_at_step = fail_at_step;
    a.group = {1};
    return a;
  }

  // Collects RECORDS until RESULT or FAILED.
  struct Outcome {
    std::vector<nlohmann::json> records;
    int messages = 0;
    std::optional<es::Result> result;
    std::optional<es::Failed> failed;
  };
  Outcome collect(const std::function<void(const nlohmann::json&)>& on_record = {}) {
    Outcome o;
    while (true) {
      es::Received r = next();
      if (auto* rec = std::get_if<es::Records>(&r.message)) {
        ++o.messages;
        for (const egm::Record& x : rec->records) {
          // Checked in the JSON form metrics.jsonl and the protocol write.
          o.records.push_back(egm::to_json(x));
          if (on_record) on_record(o.records.back());
        }
      } else if (auto* res = std::get_if<es::Result>(&r.message)) {
        o.result = *res;
        return o;
      } else if (auto* f = std::get_if<es::Failed>(&r.message)) {
        o.failed = *f;
        return o;
      } else {
        ADD_FAILURE() << "unexpected " << es::kind_name(es::kind_of(r.message));
        return o;
      }
    }
  }

  fs::path dir_;
  std::unique_ptr<es::InProcessHub> hub_;
  std::unique_ptr<es::Transport> me_, worker_transport_;
  std::unique_ptr<egm::worker::Worker> worker_;
  std::future<int> exit_code_;
  es::Hello hello_;
};

}  // namespace

TEST_F(WorkerInProcess, HelloThenARunWhoseResultEqualsADirectTrainerRun) {
  EXPECT_EQ(hello_.protocol_version, es::kProtocolVersion);
  EXPECT_TRUE(hello_.error.empty()) << hello_.error;
  EXPECT_EQ(hello_.corpus_sha256, egm::kTinyShakespeareSha256);
  EXPECT_FALSE(hello_.torch_version.empty());

  const egm::RunConfig config = tiny_config("ega_mope", 3, 30);
  es::send_message(*me_, 1, assign(config, 7));
  Outcome o = collect();
  ASSERT_TRUE(o.result) << (o.failed ? o.failed->error : "");
  EXPECT_EQ(o.result->cell_id, 7);
  EXPECT_EQ(o.result->run_id, 70);
  EXPECT_EQ(o.result->result.status, egm::Outcome::done);
  EXPECT_EQ(o.result->result.step, 30);
  EXPECT_EQ(o.result->signal, 0);

  std::map<std::string, int> kinds;
  double last_eval_val = NAN;
  bool ega_tau = false, mope_sigma = false;
  for (const auto& r : o.records) {
    ++kinds[r["kind"].get<std::string>()];
    EXPECT_TRUE(r.contains("time") && r["time"].is_number()) << r.dump();
    if (r["kind"] == "eval" && r["split"] == "eval_val") last_eval_val = r["loss"].get<double>();
    if (r["kind"] == "params")
      for (const auto& p : r["params"]) {
        ega_tau |= p["module"] == "ega" && p["name"] == "tau";
        mope_sigma |= p["module"] == "mope" && p["name"] == "sigma";
      }
  }
  EXPECT_EQ(kinds["progress"], 6);    // every 5 of 30 steps
  EXPECT_EQ(kinds["eval"], 8);        // steps 0, 10, 20, 30 x (train, val)
  EXPECT_EQ(kinds["checkpoint"], 4);  // at 10, 20, 30, and after the final measurements
  EXPECT_EQ(kinds["final_eval"], 3);  // val_full, val_ar, val_ar_ref
  EXPECT_TRUE(ega_tau && mope_sigma);
  EXPECT_LT(o.messages, static_cast<int>(o.records.size()));  // batched
  EXPECT_EQ(o.result->result.measured.final_val, std::optional<double>(last_eval_val));
  EXPECT_TRUE(fs::exists(dir_ / "ega_mope-s3" / "checkpoint.egmc"));
  EXPECT_TRUE(fs::exists(dir_ / "ega_mope-s3" / "metrics.jsonl"));

  // The same config trained here directly: the same numbers, bit for bit.
  egm::Corpus corpus = egm::Corpus::load(corpus_path());
  egm::MemorySink sink;
  egm::RuntimeOptions runtime;
  runtime.threads = 1;
  egm::Trainer trainer(config, runtime, corpus, sink);
  const egm::RunOutcome direct = trainer.run();
  ASSERT_TRUE(direct.measured.final_val && direct.measured.full_val && direct.measured.ar_val);
  // Every measurement but the rate (tokens/s: wall time), bit for bit.
  const egm::Measurements& got = o.result->result.measured;
  EXPECT_EQ(got.final_val, direct.measured.final_val);
  EXPECT_EQ(got.best_val, direct.measured.best_val);
  EXPECT_EQ(got.final_train, direct.measured.final_train);
  EXPECT_EQ(got.full_val, direct.measured.full_val);
  EXPECT_EQ(got.ar_val, direct.measured.ar_val);
  EXPECT_EQ(got.ar_ref_val, direct.measured.ar_ref_val);
}

TEST_F(WorkerInProcess, StopCheckpointsAndTheNextAssignResumesFromThatStep) {
  const egm::RunConfig config = tiny_config("base", 1, 150);
  es::send_message(*me_, 1, assign(config, 3));
  bool sent = false;
  Outcome o = collect([&](const nlohmann::json& r) {
    if (!sent && r["kind"] == "progress" && r["step"].get<int64_t>() >= 15) {
      es::send_message(*me_, 1, es::Stop{"test", 0});
      sent = true;
    }
  });
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::interrupted);
  const int64_t stopped_at = o.result->result.step;
  EXPECT_GE(stopped_at, 15);
  EXPECT_LT(stopped_at, 150);
  EXPECT_EQ(o.result->signal, 0);
  EXPECT_EQ(o.records.back()["kind"], "status");
  EXPECT_TRUE(fs::exists(dir_ / "base-s1" / "checkpoint.egmc"));

  // A STOP that arrives while idle is ignored; the next ASSIGN resumes.
  es::send_message(*me_, 1, es::Stop{"late", 0});
  es::send_message(*me_, 1, assign(config, 3));
  o = collect();
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::done);
  EXPECT_EQ(o.result->result.resumed_from_step, std::optional<int64_t>(stopped_at));
  bool resumed_event = false;
  for (const auto& r : o.records)
    if (r["kind"] == "event" && r["event"] == "resumed") resumed_event = r["step"].get<int64_t>() == stopped_at;
  EXPECT_TRUE(resumed_event);
}

TEST_F(WorkerInProcess, AnExceptionBecomesFailedWithWhereAndTheWorkerGoesOn) {
  es::send_message(*me_, 1, assign(tiny_config("mope", 0, 30), 5, /*fail_at_step=*/12));
  Outcome o = collect();
  ASSERT_TRUE(o.failed);
  EXPECT_EQ(o.failed->cell_id, 5);
  EXPECT_NE(o.failed->error.find("injected failure at step 12"), std::string::npos) << o.failed->error;
  EXPECT_NE(o.failed->where.find("trainer.cpp"), std::string::npos) << o.failed->where;
  EXPECT_EQ(o.failed->step, 10);  // the last step it reported (progress every 5 steps; eval at 10)
  EXPECT_TRUE(o.failed->retriable);  // an error after steps completed may not recur

  // A config the worker cannot build is a failure of that run only.
  es::Assign bad = assign(tiny_config("base", 0, 30), 6);
  nlohmann::json bad_config = nlohmann::json::parse(bad.config_json);
  bad_config["model"]["n_head"] = 3;  // d_model 32 is not divisible by 3
  bad.config_json = bad_config.dump();
  es::send_message(*me_, 1, bad);
  o = collect();
  ASSERT_TRUE(o.failed);
  EXPECT_NE(o.failed->error.find("n_head"), std::string::npos) << o.failed->error;
  EXPECT_FALSE(o.failed->retriable);  // a ConfigError recurs identically: the cell is given up at once

  es::send_message(*me_, 1, assign(tiny_config("base", 0, 10), 8));
  o = collect();
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::done);
}

// LibTorch's out-of-memory error (injected: a real c10::OutOfMemoryError with its
// stack trace) before the first step is not retriable, after steps it is; FAILED
// carries one line, the full text goes along and into the run folder's errors.log.
TEST_F(WorkerInProcess, OutOfMemoryIsOneLineAndNotRetriableBeforeTheFirstStep) {
  es::Assign early = assign(tiny_config("base", 0, 30), 5, /*fail_at_step=*/0);
  early.runtime.fail_kind = "oom";
  es::send_message(*me_, 1, early);
  Outcome o = collect();
  ASSERT_TRUE(o.failed);
  EXPECT_FALSE(o.failed->retriable);
  EXPECT_EQ(o.failed->error, "injected failure at step 0 (test-only fail_at_step) (injected as out of memory)");
  EXPECT_NE(o.failed->detail.find("Exception raised from"), std::string::npos) << o.failed->detail;
  const std::string log = egm::read_file(early.runtime.out_dir + "/errors.log");
  EXPECT_NE(log.find("base-s0 attempt 1 failed on rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("out of memory, not retriable"), std::string::npos) << log;
  EXPECT_NE(log.find("Exception raised from"), std::string::npos) << log;

  es::Assign late = assign(tiny_config("ega", 0, 30), 6, /*fail_at_step=*/12);
  late.runtime.fail_kind = "oom";
  es::send_message(*me_, 1, late);
  o = collect();
  ASSERT_TRUE(o.failed);
  EXPECT_TRUE(o.failed->retriable);
  EXPECT_EQ(o.failed->error.find('\n'), std::string::npos) << o.failed->error;
}

TEST_F(WorkerInProcess, ASignalInterruptsTheRunAndTheWorkerTakesNoNewWork) {
  es::send_message(*me_, 1, assign(tiny_config("ega", 2, 400), 9));
  bool signalled = false;
  Outcome o = collect([&](const nlohmann::json& r) {
    if (!signalled && r["kind"] == "progress" && r["step"].get<int64_t>() >= 10) {
      egm::request_stop(SIGUSR2);  // what the handler does when mpirun forwards SIGUSR2
      signalled = true;
    }
  });
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::interrupted);
  EXPECT_EQ(o.result->signal, SIGUSR2);
  EXPECT_TRUE(fs::exists(dir_ / "ega-s2" / "checkpoint.egmc"));

  es::send_message(*me_, 1, assign(tiny_config("ega", 2, 400), 9));
  o = collect();
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::interrupted);
  EXPECT_EQ(o.result->signal, SIGUSR2);
  EXPECT_TRUE(o.records.empty());
}

// ---- data-parallel groups ----------------------------------------------------------

TEST_F(WorkerInProcess, AGroupRunWithoutAWayToFormGroupsFailsClearly) {
  es::Assign a = assign(tiny_config("base", 0, 20), 5);
  a.group = {1, 2};
  es::send_message(*me_, 1, a);
  Outcome o = collect();
  ASSERT_TRUE(o.failed);
  EXPECT_NE(o.failed->error.find("data-parallel runs (2 ranks) need MPI"), std::string::npos) << o.failed->error;
}

// A group whose other member is told to stop at its `stop_at`-th poll: the
// stop agreement (agree_max) then returns 1 here too. One rank of compute
// (LocalCommunicator), so the test needs no MPI.
class FakeGroup : public egm::worker::RunGroup {
 public:
  explicit FakeGroup(int stop_at) : stop_at_(stop_at) {}
  egm::Communicator& communicator() override { return local_; }
  int agree_max(int mine) override {
    ++calls_;
    return std::max(mine, calls_ >= stop_at_ ? 1 : 0);
  }

 private:
  egm::LocalCommunicator local_;
  int stop_at_;
  int calls_ = 0;
};

class WorkerInGroup : public WorkerInProcess {
 protected:
  egm::worker::RunGroupFactory group_factory() override {
    return [this](const std::vector<int>& ranks, const torch::Device& device) {
      formed_ranks_ = ranks;
      formed_device_ = device.str();
      return std::make_unique<FakeGroup>(kStopAt);
    };
  }
  // Agreement calls: one before the run starts (was anyone signalled?), then one per step's poll.
  static constexpr int kStopAt = 1 + 8;
  std::vector<int> formed_ranks_;
  std::string formed_device_;
};

TEST_F(WorkerInGroup, APartnersStopStopsThisMemberAtTheAgreedStepWithACheckpoint) {
  es::Assign a = assign(tiny_config("base", 0, 50), 6);
  a.group = {1, 2};  // this worker leads
  es::send_message(*me_, 1, a);
  Outcome o = collect();
  EXPECT_EQ(formed_ranks_, (std::vector<int>{1, 2}));
  EXPECT_EQ(formed_device_, "cpu");
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->result.status, egm::Outcome::interrupted);
  EXPECT_EQ(o.result->result.step, 7);  // the 8th poll, before step 8
  EXPECT_EQ(o.result->signal, 0);       // nobody signalled this worker
  EXPECT_TRUE(fs::exists(dir_ / "base-s0" / "checkpoint.egmc"));
  EXPECT_TRUE(fs::exists(dir_ / "base-s0" / "config.json"));  // written by the leader
}

TEST_F(WorkerInGroup, AMemberThatDoesNotLeadWritesNoRunFiles) {
  es::Assign a = assign(tiny_config("base", 0, 50), 7);
  a.group = {2, 1};  // rank 2 leads; the trainer's records come from its rank 0
  es::send_message(*me_, 1, a);
  Outcome o = collect();
  ASSERT_TRUE(o.result);
  EXPECT_FALSE(fs::exists(dir_ / "base-s0" / "config.json"));
  EXPECT_FALSE(fs::exists(dir_ / "base-s0" / "metrics.jsonl"));
}
