// The run vocabulary (src/run): every record kind and the outcome survive
// their JSON round trip with their types; the JSON is the form metrics.jsonl
// and RECORDS have always had; an unknown kind or a bad field is refused
// naming it; the device and backend rules.
#include <gtest/gtest.h>

#include <cmath>

#include "run/device.h"
#include "run/outcome.h"
#include "run/records.h"
#include "util/error.h"

namespace {

using nlohmann::json;

egm::Record round_trip(const egm::Record& r) { return egm::record_from_json(json::parse(egm::to_json(r).dump())); }

TEST(RunOutcome, RoundTripsWithNoValueAsNull) {
  egm::RunOutcome o;
  o.status = egm::Outcome::interrupted;
  o.message = "stopped at step 7 and checkpointed";
  o.step = 7;
  o.resumed_from_step = 3;
  o.measured.final_val = 2.5;
  o.measured.tokens_per_s = 1234.5;
  const json j = egm::to_json(o);
  EXPECT_TRUE(j.at("best_val").is_null());  // not measured: null, not NaN, not absent
  EXPECT_EQ(j.at("resumed_from_step"), 3);
  const egm::RunOutcome back = egm::run_outcome_from_json(j, "test");
  EXPECT_EQ(back.status, o.status);
  EXPECT_EQ(back.message, o.message);
  EXPECT_EQ(back.step, 7);
  EXPECT_EQ(back.resumed_from_step, std::optional<int64_t>(3));
  EXPECT_EQ(back.measured, o.measured);
  // From scratch travels as -1 (the wire's old spelling) and comes back as none.
  o.resumed_from_step.reset();
  EXPECT_EQ(egm::to_json(o).at("resumed_from_step"), -1);
  EXPECT_FALSE(egm::run_outcome_from_json(egm::to_json(o), "test").resumed_from_step);
}

TEST(RunOutcome, NonFiniteIsNoValue) {
  EXPECT_FALSE(egm::finite_or_none(NAN));
  EXPECT_FALSE(egm::finite_or_none(INFINITY));
  EXPECT_EQ(egm::finite_or_none(1.5), std::optional<double>(1.5));
  egm::RunOutcome o;
  o.measured.final_val = NAN;  // a careless caller: still null on the wire
  EXPECT_TRUE(egm::to_json(o).at("final_val").is_null());
}

TEST(RunOutcome, BadFieldsAreNamed) {
  try {
    egm::run_outcome_from_json({{"status", "exploded"}, {"step", 1}}, "RESULT result message from rank 2");
    FAIL() << "an unknown status was accepted";
  } catch (const egm::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("RESULT result message from rank 2: field 'status'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(egm::run_outcome_from_json({{"status", "done"}}, "x"), egm::ProtocolError);  // no step
  EXPECT_THROW(egm::run_outcome_from_json({{"status", "done"}, {"step", "9"}}, "x"), egm::ProtocolError);
}

TEST(Records, EveryKindRoundTripsTyped) {
  egm::RunEnvironment env;
  env.config_hash = "abc";
  env.world_size = 2;
  env.backend = egm::Backend::nccl;
  env.device = egm::parse_device_name("cuda:1");
  env.torch_version = "2.11.0";
  env.egm_commit = "deadbeef";
  env.threads = 4;
  egm::RunOutcome end;
  end.status = egm::Outcome::done;
  end.step = 100;
  end.measured.final_val = 1.25;
  const std::vector<egm::Record> records = {
      egm::ProgressRecord{10, 2.5, 1e-3, 5000.0, 1.5},
      egm::ProgressRecord{20, std::nullopt, 2e-3, 6000.0, 3.0},
      egm::EvalRecord{20, egm::MetricSplit::eval_train, 2.0, std::nullopt},
      egm::EvalRecord{20, egm::MetricSplit::eval_val, 2.25, 4.0},
      egm::FinalEvalRecord{egm::MetricSplit::val_ar, 1.875, 8},
      egm::ParamsRecord{20, {{"mope", -1, 3, "sigma", 0.75}, {"ega", 1, 0, "tau", -0.5}}},
      egm::CheckpointRecord{20},
      egm::StartRecord{0, env},
      egm::EndRecord{end},
      egm::EventRecord{egm::TrainerEvent::resumed, "resumed", 20, std::string("/r/checkpoint.egmc")},
      egm::EventRecord{egm::TrainerEvent::checkpoint_skipped, "corrupt", std::nullopt, std::nullopt},
  };
  for (const egm::Record& r : records) {
    const egm::Record back = round_trip(r);
    ASSERT_EQ(back.body.index(), r.body.index()) << egm::to_json(r).dump();
    EXPECT_EQ(egm::to_json(back), egm::to_json(r));
    EXPECT_EQ(egm::kind_of(back.body), egm::kind_of(r.body));
    EXPECT_EQ(egm::step_of(back.body), egm::step_of(r.body));
  }
  const egm::Record start_back = round_trip(records[7]), progress_back = round_trip(records[1]),
                    params_back = round_trip(records[5]), done_back = round_trip(records[8]);
  const auto& start = std::get<egm::StartRecord>(start_back.body);
  EXPECT_EQ(start.setup.backend, egm::Backend::nccl);
  EXPECT_EQ(start.setup.device.index, 1);
  EXPECT_EQ(start.setup.threads, 4);
  const auto& progress = std::get<egm::ProgressRecord>(progress_back.body);
  EXPECT_FALSE(progress.train_loss);  // NaN loss: null, read back as no value
  const auto& params = std::get<egm::ParamsRecord>(params_back.body);
  ASSERT_EQ(params.params.size(), 2u);
  EXPECT_EQ(params.params[1].layer, 1);
  EXPECT_EQ(params.params[1].value, -0.5);
  const auto& done = std::get<egm::EndRecord>(done_back.body);
  EXPECT_EQ(done.outcome.measured.final_val, std::optional<double>(1.25));
}

// The JSON forms are those metrics.jsonl and RECORDS have always carried.
TEST(Records, JsonIsTheDocumentedForm) {
  EXPECT_EQ(egm::to_json(egm::ProgressRecord{10, 2.5, 1e-3, 5000.0, 1.5}),
            json({{"kind", "progress"}, {"step", 10}, {"train_loss", 2.5}, {"lr", 1e-3}, {"tokens_per_s", 5000.0},
                  {"elapsed_s", 1.5}}));
  EXPECT_EQ(egm::to_json(egm::EvalRecord{20, egm::MetricSplit::eval_train, 2.0, std::nullopt}),
            json({{"kind", "eval"}, {"step", 20}, {"split", "eval_train"}, {"loss", 2.0}}));
  EXPECT_EQ(egm::to_json(egm::FinalEvalRecord{egm::MetricSplit::val_full, std::nullopt, 7}),
            json({{"kind", "final_eval"}, {"split", "val_full"}, {"loss", nullptr}, {"windows", 7}}));
  EXPECT_EQ(egm::to_json(egm::CheckpointRecord{5}), json({{"kind", "checkpoint"}, {"step", 5}}));
  egm::Record timed = egm::CheckpointRecord{5};
  timed.time = 1000.5;
  EXPECT_EQ(egm::to_json(timed).at("time"), 1000.5);
  const json start = egm::to_json(egm::StartRecord{0, {}});
  EXPECT_EQ(start.at("kind"), "status");
  EXPECT_EQ(start.at("status"), "running");
  EXPECT_EQ(start.at("backend"), "none");
  EXPECT_EQ(start.at("device"), "cpu");
  EXPECT_EQ(egm::to_json(egm::EndRecord{}).at("status"), "done");
}

TEST(Records, UnknownKindsAndBadFieldsAreRefusedByName) {
  auto what = [](const json& j) {
    try {
      egm::record_from_json(j, "a record of rank 3");
    } catch (const egm::ProtocolError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(what({{"kind", "telemetry"}, {"step", 1}}).find("field 'kind'"), std::string::npos);
  EXPECT_NE(what({{"kind", "telemetry"}, {"step", 1}}).find("telemetry"), std::string::npos);
  EXPECT_NE(what({{"step", 1}}).find("field 'kind' is missing"), std::string::npos);
  EXPECT_NE(what({{"kind", "eval"}, {"step", 1}, {"split", "eval_test"}}).find("field 'split'"), std::string::npos);
  EXPECT_NE(what({{"kind", "progress"}, {"step", 1.5}}).find("field 'step' must be an integer"), std::string::npos);
  EXPECT_NE(what({{"kind", "event"}, {"event", "exploded"}}).find("field 'event'"), std::string::npos);
  EXPECT_NE(what({{"kind", "status"}, {"status", "running"}, {"step", 0}, {"backend", "gloo"}, {"device", "cpu"}})
                .find("field 'backend'"),
            std::string::npos);
  EXPECT_NE(what({{"kind", "status"}, {"status", "running"}, {"step", 0}, {"backend", "mpi"}, {"device", "tpu"}})
                .find("field 'device'"),
            std::string::npos);
  EXPECT_NE(what({{"kind", "params"}, {"step", 1}, {"params", {{{"module", "ega"}}}}}).find("field 'layer'"),
            std::string::npos);
  EXPECT_NE(what(json::array()).find("a record of rank 3"), std::string::npos);
}

TEST(Device, ParsesTheThreeFormsAndNamesTheKind) {
  EXPECT_EQ(egm::parse_device_name("cpu"), egm::DeviceName{});
  EXPECT_EQ(egm::parse_device_name("cuda:2").str(), "cuda:2");
  EXPECT_STREQ(egm::device_kind(egm::parse_device_name("cuda:2")), "cuda");
  EXPECT_STREQ(egm::device_kind(egm::parse_device_name("cpu")), "cpu");
  EXPECT_THROW(egm::parse_device_name("cuda:"), egm::ConfigError);
  EXPECT_THROW(egm::parse_device_name("cuda:12345"), egm::ConfigError);
}

TEST(Backend, OneRuleForWorkersAndCoordinator) {
  const egm::DeviceName cpu, cuda = egm::parse_device_name("cuda");
  EXPECT_EQ(egm::backend_for(cpu, 1, true), egm::Backend::none);
  EXPECT_EQ(egm::backend_for(cpu, 4, true), egm::Backend::mpi);
  EXPECT_EQ(egm::backend_for(cuda, 4, true), egm::Backend::nccl);
  EXPECT_EQ(egm::backend_for(cuda, 4, false), egm::Backend::mpi);  // one member without NCCL: all go over MPI
  for (egm::Backend b : {egm::Backend::none, egm::Backend::mpi, egm::Backend::nccl})
    EXPECT_EQ(egm::parse_backend(egm::to_string(b)), b);
  EXPECT_THROW(egm::parse_backend("gloo"), egm::ProtocolError);
}

}  // namespace
