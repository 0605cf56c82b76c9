// The sweep protocol without MPI: the frame layout as written in
// src/protocol/protocol.h, round trips of every message kind, and the errors a
// bad frame gets (version mismatch naming both versions, unknown kind, ...).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include "protocol/in_process_transport.h"
#include "protocol/protocol.h"
#include "protocol/transport.h"
#include "util/error.h"

namespace es = egm::protocol;

namespace {

template <typename T>
T round_trip(const T& message) {
  const std::string bytes = es::encode(message);
  es::Message back = es::decode(bytes, "rank 1");
  EXPECT_TRUE(std::holds_alternative<T>(back)) << "decoded kind " << es::kind_name(es::kind_of(back));
  return std::get<T>(back);
}

std::string error_of(const std::string& bytes) {
  try {
    es::decode(bytes, "rank 3");
  } catch (const egm::ProtocolError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(SweepProtocol, FrameLayoutIsTheDocumentedOne) {
  const std::string bytes = es::encode(es::Shutdown{"done"});
  // The body is the compact JSON of the message; the header is 16 bytes:
  // "EGMP", version 1 (uint16 LE), kind 18 = SHUTDOWN (uint16 LE), body length (uint32 LE), 4 zero bytes.
  const std::string body = R"({"reason":"done"})";
  ASSERT_EQ(bytes.size(), 16 + body.size());
  EXPECT_EQ(bytes.substr(0, 4), "EGMP");
  EXPECT_EQ(static_cast<unsigned char>(bytes[4]), 1);
  EXPECT_EQ(static_cast<unsigned char>(bytes[5]), 0);
  EXPECT_EQ(static_cast<unsigned char>(bytes[6]), 18);
  EXPECT_EQ(static_cast<unsigned char>(bytes[7]), 0);
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), body.size());
  EXPECT_EQ(bytes.substr(9, 7), std::string(7, '\0'));
  EXPECT_EQ(bytes.substr(16), body);
}

TEST(SweepProtocol, EveryKindRoundTrips) {
  es::Hello h;
  h.host = "node7";
  h.pid = 4242;
  h.local_rank = 3;
  h.cores = 16;
  h.torch_version = "1.13.1";
  h.git_commit = "abc123def456";
  h.corpus_path = "/data/input.txt";
  h.corpus_sha256 = "86c4";
  h.error = "";
  h.nccl = true;
  h.gpus = 2;
  h.gpu_names = {"NVIDIA H200", "NVIDIA H200"};
  const es::Hello h2 = round_trip(h);
  EXPECT_EQ(h2.protocol_version, es::kProtocolVersion);
  EXPECT_EQ(h2.host, "node7");
  EXPECT_EQ(h2.pid, 4242);
  EXPECT_EQ(h2.local_rank, 3);
  EXPECT_EQ(h2.cores, 16);
  EXPECT_EQ(h2.torch_version, "1.13.1");
  EXPECT_EQ(h2.git_commit, "abc123def456");
  EXPECT_EQ(h2.corpus_path, "/data/input.txt");
  EXPECT_EQ(h2.corpus_sha256, "86c4");
  EXPECT_TRUE(h2.nccl);
  EXPECT_EQ(h2.gpu_names, h.gpu_names);
  // An older worker's HELLO has no "nccl" nor "gpu_names": false and none.
  nlohmann::json old_hello = es::to_json(es::Message{h});
  old_hello.erase("nccl");
  old_hello.erase("gpu_names");
  const auto decoded = es::decode(es::encode_frame(es::kProtocolVersion, 1, old_hello.dump()), "rank 1");
  EXPECT_FALSE(std::get<es::Hello>(decoded).nccl);
  EXPECT_TRUE(std::get<es::Hello>(decoded).gpu_names.empty());
  // A malformed list is refused, naming the field.
  nlohmann::json bad = es::to_json(es::Message{h});
  bad["gpu_names"] = {1, 2};
  EXPECT_THROW(es::decode(es::encode_frame(es::kProtocolVersion, 1, bad.dump()), "rank 1"), egm::ProtocolError);

  es::Assign a;
  a.cell_id = 12;
  a.run_id = 34;
  a.attempt = 2;
  a.cell_key = "ega_mope-s3";
  a.variant = "ega_mope";
  a.seed = 3;
  const nlohmann::json config = {{"preset", "tiny"}, {"train", {{"seed", 3}, {"lr", 0.003}}}};
  a.config_json = config.dump(2);  // spliced into the body as it is, white space included
  a.runtime.out_dir = "runs/tiny/ega_mope-s3-0123456789ab";
  a.runtime.threads = 4;
  a.runtime.device = egm::parse_device_name("cuda:1");
  a.runtime.fail_at_step = 17;
  a.runtime.checkpoint_interval = 50;
  a.runtime.log_interval = 5;
  a.group = {5};
  const es::Assign a2 = round_trip(a);
  EXPECT_EQ(a2.cell_id, 12);
  EXPECT_EQ(a2.run_id, 34);
  EXPECT_EQ(a2.attempt, 2);
  EXPECT_EQ(a2.cell_key, "ega_mope-s3");
  EXPECT_EQ(a2.variant, "ega_mope");
  EXPECT_EQ(a2.seed, 3u);
  EXPECT_EQ(a2.config, config);  // decoded into the object the worker reads, not text to parse again
  EXPECT_TRUE(a2.config_json.empty());
  EXPECT_EQ(a2.runtime.out_dir, a.runtime.out_dir);
  EXPECT_EQ(a2.runtime.threads, 4);
  EXPECT_EQ(a2.runtime.device, egm::parse_device_name("cuda:1"));
  EXPECT_EQ(a2.runtime.fail_at_step, 17);
  EXPECT_EQ(a2.runtime.fail_kind, "error");
  EXPECT_EQ(a2.runtime.checkpoint_interval, 50);
  EXPECT_EQ(a2.runtime.log_interval, 5);
  EXPECT_EQ(a2.group, std::vector<int>{5});

  es::Records r;
  r.cell_id = 1;
  r.run_id = 2;
  r.records = {egm::ProgressRecord{10, 2.5, 1e-3, 100.0, 1.0}, egm::CheckpointRecord{10}};
  r.records[1].time = 1234.5;
  const es::Records r2 = round_trip(r);
  ASSERT_EQ(r2.records.size(), 2u);
  for (size_t i = 0; i < r.records.size(); ++i) EXPECT_EQ(egm::to_json(r2.records[i]), egm::to_json(r.records[i]));
  EXPECT_TRUE(std::holds_alternative<egm::CheckpointRecord>(r2.records[1].body));
  EXPECT_EQ(r2.records[1].time, std::optional<double>(1234.5));
  // A record the protocol does not know stops the message, naming the sender.
  const std::string unknown = es::encode_frame(
      es::kProtocolVersion, static_cast<uint16_t>(es::Kind::records),
      R"({"cell_id": 1, "run_id": 2, "records": [{"kind": "telemetry", "step": 3}]})");
  try {
    es::decode(unknown, "rank 4");
    ADD_FAILURE() << "an unknown record kind was accepted";
  } catch (const egm::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("a record in RECORDS from rank 4: field 'kind'"), std::string::npos) << e.what();
  }

  es::Result res;
  res.cell_id = 5;
  res.run_id = 6;
  res.result.status = egm::Outcome::interrupted;
  res.result.message = "stopped at step 40";
  res.result.step = 40;
  res.result.resumed_from_step = 20;
  res.result.measured.final_val = 1.25;
  res.result.measured.best_val = std::nullopt;  // travels as null
  res.signal = SIGUSR2;
  const es::Result res2 = round_trip(res);
  EXPECT_EQ(res2.result.status, egm::Outcome::interrupted);
  EXPECT_EQ(res2.result.message, "stopped at step 40");
  EXPECT_EQ(res2.result.step, 40);
  EXPECT_EQ(res2.result.resumed_from_step, std::optional<int64_t>(20));
  EXPECT_EQ(res2.result.measured.final_val, std::optional<double>(1.25));
  EXPECT_FALSE(res2.result.measured.best_val);
  EXPECT_FALSE(res2.result.measured.full_val);
  EXPECT_EQ(res2.signal, SIGUSR2);

  const es::Failed f2 = round_trip(es::Failed{7, 8, "boom", "trainer.cpp:12 on node7 (rank 2)", 13});
  EXPECT_EQ(f2.cell_id, 7);
  EXPECT_EQ(f2.run_id, 8);
  EXPECT_EQ(f2.error, "boom");
  EXPECT_EQ(f2.where, "trainer.cpp:12 on node7 (rank 2)");
  EXPECT_EQ(f2.step, 13);
  EXPECT_TRUE(f2.retriable);  // the default
  EXPECT_EQ(f2.detail, "");
  es::Failed final_failure{7, 8, "out of memory", "", 0, /*retriable=*/false, "out of memory\nframe #0: alloc"};
  const es::Failed f3 = round_trip(final_failure);
  EXPECT_FALSE(f3.retriable);
  EXPECT_EQ(f3.detail, "out of memory\nframe #0: alloc");

  EXPECT_EQ(round_trip(es::Bye{"no corpus"}).error, "no corpus");
  const es::Stop s2 = round_trip(es::Stop{"interrupted by SIGUSR2", SIGUSR2});
  EXPECT_EQ(s2.reason, "interrupted by SIGUSR2");
  EXPECT_EQ(s2.signal, SIGUSR2);
  EXPECT_EQ(round_trip(es::Shutdown{"finished"}).reason, "finished");
}

TEST(SweepProtocol, VersionMismatchNamesBothVersions) {
  const std::string frame = es::encode_frame(2, static_cast<uint16_t>(es::Kind::hello), R"({"protocol_version":2})");
  const std::string e = error_of(frame);
  EXPECT_NE(e.find("protocol version mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 3 speaks egm sweep protocol v2"), std::string::npos) << e;
  EXPECT_NE(e.find("this process speaks v1"), std::string::npos) << e;
}

TEST(SweepProtocol, UnknownKindIsRefused) {
  const std::string e = error_of(es::encode_frame(es::kProtocolVersion, 99, "{}"));
  EXPECT_NE(e.find("unknown kind 99"), std::string::npos) << e;
}

TEST(SweepProtocol, MalformedFramesAreClearErrors) {
  EXPECT_NE(error_of("EGM").find("shorter than the 16-byte"), std::string::npos);
  std::string bad_magic = es::encode(es::Bye{});
  bad_magic[0] = 'X';
  EXPECT_NE(error_of(bad_magic).find("magic"), std::string::npos);
  std::string truncated = es::encode(es::Shutdown{"bye"});
  truncated.pop_back();
  EXPECT_NE(error_of(truncated).find("header says"), std::string::npos) << error_of(truncated);
  const uint16_t stop = static_cast<uint16_t>(es::Kind::stop);
  EXPECT_NE(error_of(es::encode_frame(1, stop, "{not json")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(es::encode_frame(1, stop, "[1,2]")).find("must be a JSON object"), std::string::npos);
}

// A body is read within JsonLimits::machine(): a deep one (whose dump() or
// copy would overflow the stack) and an overflowing number are ProtocolErrors
// naming the path; a long error text is fine.
TEST(SweepProtocol, BodiesAreReadWithinLimits) {
  const uint16_t failed = static_cast<uint16_t>(es::Kind::failed);
  std::string e = error_of(es::encode_frame(1, failed, R"({"x": )" + std::string(100000, '[') + std::string(100000, ']') + "}"));
  EXPECT_NE(e.find("FAILED message from rank 3: body exceeds a limit"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("$.x[0][0]"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("deeper than 64 levels"), std::string::npos) << e.substr(0, 300);
  e = error_of(es::encode_frame(1, failed, R"({"cell_id":1,"run_id":2,"error":"x","step":1e999})"));
  EXPECT_NE(e.find("$.step: number 1e999 is out of range"), std::string::npos) << e;
  es::Failed f;
  f.error = std::string(1u << 20, 'e');
  EXPECT_EQ(std::get<es::Failed>(es::decode(es::encode(f), "rank 3")).error.size(), 1u << 20);
}

// FAILED's retriable and detail are optional: a worker that predates them is
// read as retriable, and a mistyped one is named.
TEST(SweepProtocol, FailedFromAnOlderWorkerIsRetriable) {
  const uint16_t failed = static_cast<uint16_t>(es::Kind::failed);
  const es::Message m = es::decode(
      es::encode_frame(1, failed, R"({"cell_id":1,"run_id":2,"error":"boom\nException raised from f at a.cpp:1"})"),
      "rank 3");
  EXPECT_TRUE(std::get<es::Failed>(m).retriable);
  EXPECT_EQ(std::get<es::Failed>(m).detail, "");
  EXPECT_NE(error_of(es::encode_frame(1, failed, R"({"cell_id":1,"run_id":2,"error":"x","retriable":"no"})"))
                .find("field 'retriable' must be true or false"),
            std::string::npos);
}

TEST(SweepProtocol, FailureHeadlineIsTheFirstLineWithoutTheStackTrace) {
  EXPECT_EQ(es::failure_headline("boom"), "boom");
  EXPECT_EQ(es::failure_headline("\n  boom at step 3  \nmore"), "boom at step 3; more");
  EXPECT_EQ(es::failure_headline("invalid run config:\n  model.n_head: 3 does not divide 64\n"),
            "invalid run config: model.n_head: 3 does not divide 64");
  // c10::Error::what(): the message, then the C++ stack trace (sometimes on the same line).
  EXPECT_EQ(es::failure_headline("DefaultCPUAllocator: not enough memory: you tried to allocate 8 bytes.\n"
                                 "Exception raised from alloc_cpu at alloc_cpu.cpp:1 (most recent call first):\n"
                                 "frame #0: c10::Error::Error()"),
            "DefaultCPUAllocator: not enough memory: you tried to allocate 8 bytes.");
  EXPECT_EQ(es::failure_headline("bad shape Exception raised from f at a.cpp:1 (most recent call first):"),
            "bad shape");
  EXPECT_EQ(es::failure_headline(std::string(1000, 'x')).size(), 300u);
  EXPECT_EQ(es::failure_headline(""), "");
}

// Every name of the run's records and outcome parses back to itself, and a
// name that is not one of them is a ProtocolError listing the valid ones.
TEST(RunRecords, NamesRoundTripAndUnknownNamesAreErrors) {
  for (auto o : {egm::Outcome::done, egm::Outcome::diverged, egm::Outcome::interrupted})
    EXPECT_EQ(egm::parse_outcome(egm::to_string(o)), o);
  for (auto k : {egm::RecordKind::progress, egm::RecordKind::eval, egm::RecordKind::final_eval,
                 egm::RecordKind::params, egm::RecordKind::checkpoint, egm::RecordKind::status,
                 egm::RecordKind::event})
    EXPECT_EQ(egm::parse_record_kind(egm::to_string(k)), k);
  for (auto s : {egm::MetricSplit::train, egm::MetricSplit::eval_train, egm::MetricSplit::eval_val,
                 egm::MetricSplit::val_full, egm::MetricSplit::val_ar, egm::MetricSplit::val_ar_ref})
    EXPECT_EQ(egm::parse_metric_split(egm::to_string(s)), s);
  EXPECT_STREQ(egm::to_string(egm::MetricSplit::val_ar_ref), "val_ar_ref");  // metrics.split, unchanged
  EXPECT_THROW(egm::parse_metric_split("val"), egm::ProtocolError);
  for (auto e : {egm::TrainerEvent::resumed, egm::TrainerEvent::checkpoint_skipped,
                 egm::TrainerEvent::restart_from_scratch})
    EXPECT_EQ(egm::parse_trainer_event(egm::to_string(e)), e);
  EXPECT_STREQ(egm::to_string(egm::Outcome::interrupted), "interrupted");  // the wire's text, unchanged
  EXPECT_STREQ(egm::to_string(egm::RecordKind::final_eval), "final_eval");
  try {
    egm::parse_outcome("running");
    ADD_FAILURE() << "'running' parsed as an outcome";
  } catch (const egm::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown run outcome 'running'; valid: done, diverged, interrupted"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(egm::parse_record_kind("Progress"), egm::ProtocolError);
  EXPECT_THROW(egm::parse_trainer_event(""), egm::ProtocolError);
}

TEST(SweepProtocol, MissingOrMistypedFieldsAreNamed) {
  const uint16_t failed = static_cast<uint16_t>(es::Kind::failed);
  std::string e = error_of(es::encode_frame(1, failed, R"({"cell_id":1,"error":"x"})"));
  EXPECT_NE(e.find("FAILED message from rank 3: field 'run_id' is missing"), std::string::npos) << e;
  e = error_of(es::encode_frame(1, failed, R"({"cell_id":"1","run_id":2,"error":"x"})"));
  EXPECT_NE(e.find("field 'cell_id' must be an integer, got string"), std::string::npos) << e;
  const uint16_t result = static_cast<uint16_t>(es::Kind::result);
  e = error_of(es::encode_frame(1, result, R"({"cell_id":1,"run_id":2,"result":{"status":"finished","step":3}})"));
  EXPECT_NE(e.find("'status' must be done, diverged or interrupted"), std::string::npos) << e;
  es::Assign a;
  a.cell_key = "k";
  a.variant = "base";
  a.runtime.out_dir = "d";
  a.group = {};
  e = error_of(es::encode(a));
  EXPECT_NE(e.find("field 'group' is empty"), std::string::npos) << e;
}

TEST(SweepTransport, InProcessKeepsOrderPerSenderAndWaitTimesOut) {
  es::InProcessHub hub(3);
  auto coordinator = hub.endpoint(0);
  auto w1 = hub.endpoint(1);
  auto w2 = hub.endpoint(2);
  EXPECT_EQ(w2->rank(), 2);
  EXPECT_EQ(w2->size(), 3);
  for (int i = 0; i < 5; ++i) es::send_message(*w1, 0, es::Failed{i, i, "e", "", -1});
  es::send_message(*w2, 0, es::Bye{});
  std::vector<int64_t> from_w1;
  int byes = 0;
  while (auto r = es::try_receive_message(*coordinator)) {
    if (r->source == 1) from_w1.push_back(std::get<es::Failed>(r->message).cell_id);
    if (r->source == 2) ++byes;
  }
  EXPECT_EQ(from_w1, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(byes, 1);

  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(es::wait_message(*coordinator, std::chrono::milliseconds(50)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));

  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    es::send_message(*w2, 0, es::Bye{"late"});
  });
  auto r = es::wait_message(*coordinator, std::chrono::milliseconds(2000));
  late.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<es::Bye>(r->message).error, "late");
}
