// Each record kind to JSON and back (metrics.jsonl, RECORDS), the split and
// event names parsed once, a bad field named by JsonFields.
#include "run/records.h"

#include <array>
#include <cmath>

#include "util/enum_names.h"
#include "util/json_fields.h"

namespace egm {
namespace {

using json = nlohmann::json;

// Each list is in its enum's declaration order (the value is the index); the names are the wire format of
// metrics.jsonl and RECORDS, so a name may be added but never renamed.
constexpr std::array<const char*, 7> kRecordKinds = {"progress",   "eval",   "final_eval", "params",
                                                     "checkpoint", "status", "event"};
constexpr std::array<const char*, 6> kMetricSplits = {"train",    "eval_train", "eval_val",
                                                      "val_full", "val_ar",     "val_ar_ref"};
constexpr std::array<const char*, 3> kTrainerEvents = {"resumed", "checkpoint_skipped", "restart_from_scratch"};

// The status record's "status" while the run is under way.
constexpr std::string_view kRunning = "running";

// The usual visitor helper: one lambda per alternative of the RecordBody variant.
template <typename... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// A name field parsed into its enum; an unknown name names the field.
template <typename Enum>
// f.fail throws, so no return is missing after the catch.
Enum name_field(const JsonFields& f, const char* field, Enum (*parse)(std::string_view)) {
  const std::string text = f.text(field);
  try {
    return parse(text);
  } catch (const ProtocolError& e) {
    f.fail(field, e.what());
  }
}

// A missing loss (NaN) is written as null: JSON has no NaN.
json body_json(const RecordBody& body) {
  return std::visit(
      Overloaded{
          [](const ProgressRecord& r) -> json {
            return {{"kind", to_string(RecordKind::progress)}, {"step", r.step},
                    {"train_loss", number_or_null(r.train_loss)}, {"lr", r.lr},
                    {"tokens_per_s", r.tokens_per_s}, {"elapsed_s", r.elapsed_s}};
          },
          [](const EvalRecord& r) -> json {
            json j = {{"kind", to_string(RecordKind::eval)}, {"step", r.step}, {"split", to_string(r.split)},
                      {"loss", number_or_null(r.loss)}};
            if (r.elapsed_s) j["elapsed_s"] = *r.elapsed_s;
            return j;
          },
          [](const FinalEvalRecord& r) -> json {
            return {{"kind", to_string(RecordKind::final_eval)}, {"split", to_string(r.split)},
                    {"loss", number_or_null(r.loss)}, {"windows", r.windows}};
          },
          [](const ParamsRecord& r) -> json {
            json list = json::array();
            for (const LearnedParam& p : r.params)
              list.push_back({{"module", p.module}, {"layer", p.layer}, {"index", p.index}, {"name", p.name},
                              {"value", number_or_null(p.value)}});
            return {{"kind", to_string(RecordKind::params)}, {"step", r.step}, {"params", std::move(list)}};
          },
          [](const CheckpointRecord& r) -> json {
            return {{"kind", to_string(RecordKind::checkpoint)}, {"step", r.step}};
          },
          // Start and end share the kind "status": "running" marks a start, any outcome an end.
          [](const StartRecord& r) -> json {
            const RunEnvironment& s = r.setup;
            return {{"kind", to_string(RecordKind::status)}, {"status", kRunning},
                    {"step", r.step}, {"config_hash", s.config_hash},
                    {"world_size", s.world_size}, {"backend", to_string(s.backend)},
                    {"device", s.device.str()}, {"torch_version", s.torch_version},
                    {"egm_commit", s.egm_commit}, {"threads", s.threads}};
          },
          [](const EndRecord& r) -> json {
            json j = to_json(r.outcome);
            j["kind"] = to_string(RecordKind::status);
            return j;
          },
          [](const EventRecord& r) -> json {
            json j = {{"kind", to_string(RecordKind::event)}, {"event", to_string(r.event)},
                      {"message", r.message}};
            if (r.step) j["step"] = *r.step;
            if (r.path) j["path"] = *r.path;
            return j;
          },
      },
      body);
}

RecordBody body_from_json(const json& object, const JsonFields& f) {
  switch (name_field(f, "kind", parse_record_kind)) {
    case RecordKind::progress: {
      ProgressRecord r;
      r.step = f.integer("step");
      r.train_loss = f.optional_number("train_loss");
      // NaN for an absent value, as the writer's own "unknown" (written as null) reads back.
      r.lr = f.optional_number("lr").value_or(NAN);
      r.tokens_per_s = f.optional_number("tokens_per_s").value_or(NAN);
      r.elapsed_s = f.optional_number("elapsed_s").value_or(NAN);
      return r;
    }
    case RecordKind::eval: {
      EvalRecord r;
      r.step = f.integer("step");
      r.split = name_field(f, "split", parse_metric_split);
      r.loss = f.optional_number("loss");
      r.elapsed_s = f.optional_number("elapsed_s");
      return r;
    }
    case RecordKind::final_eval: {
      FinalEvalRecord r;
      r.split = name_field(f, "split", parse_metric_split);
      r.loss = f.optional_number("loss");
      // 0 when the record leaves the count out.
      r.windows = f.integer_or("windows", 0);
      return r;
    }
    case RecordKind::params: {
      ParamsRecord r;
      r.step = f.integer("step");
      for (const json& p : f.array("params")) {
        const JsonFields pf(p, f.what() + " (a learned parameter)");
        r.params.push_back(LearnedParam{pf.text("module"), pf.integer("layer"), pf.integer("index"), pf.text("name"),
                                        pf.optional_number("value").value_or(NAN)});
      }
      return r;
    }
    case RecordKind::checkpoint:
      return CheckpointRecord{f.integer("step")};
    case RecordKind::status: {
      // Any status but "running" is an outcome; run_outcome_from_json refuses one it does not know.
      if (f.text("status") != kRunning) return EndRecord{run_outcome_from_json(object, f.what())};
      StartRecord r;
      r.step = f.integer("step");
      RunEnvironment& s = r.setup;
      s.config_hash = f.text_or("config_hash", "");
      // world_size and threads are 1 when the record leaves them out.
      s.world_size = static_cast<int>(f.integer_or("world_size", 1));
      s.backend = name_field(f, "backend", parse_backend);
      try {
        s.device = parse_device_name(f.text("device"), "");
      } catch (const ConfigError& e) {
        f.fail("device", e.what());
      }
      s.torch_version = f.text_or("torch_version", "");
      s.egm_commit = f.text_or("egm_commit", "");
      s.threads = static_cast<int>(f.integer_or("threads", 1));
      return r;
    }
    case RecordKind::event: {
      EventRecord r;
      r.event = name_field(f, "event", parse_trainer_event);
      r.message = f.text_or("message", "");
      r.step = f.optional_integer("step");
      r.path = f.optional_text("path");
      return r;
    }
  }
  // Unreachable for a parsed kind; it keeps the function from falling off its end.
  f.fail("kind", "is not a record kind");
}

}  // namespace

const char* to_string(RecordKind kind) { return kRecordKinds.at(static_cast<std::size_t>(kind)); }
RecordKind parse_record_kind(std::string_view name) {
  return parse_enum<RecordKind, ProtocolError>(name, kRecordKinds, "record kind");
}

const char* to_string(MetricSplit split) { return kMetricSplits.at(static_cast<std::size_t>(split)); }
MetricSplit parse_metric_split(std::string_view name) {
  return parse_enum<MetricSplit, ProtocolError>(name, kMetricSplits, "metric split");
}

const char* to_string(TrainerEvent event) { return kTrainerEvents.at(static_cast<std::size_t>(event)); }
TrainerEvent parse_trainer_event(std::string_view name) {
  return parse_enum<TrainerEvent, ProtocolError>(name, kTrainerEvents, "trainer event");
}

// The kind written on the wire: start and end records are both "status".
RecordKind kind_of(const RecordBody& body) {
  return std::visit(Overloaded{
                        [](const ProgressRecord&) { return RecordKind::progress; },
                        [](const EvalRecord&) { return RecordKind::eval; },
                        [](const FinalEvalRecord&) { return RecordKind::final_eval; },
                        [](const ParamsRecord&) { return RecordKind::params; },
                        [](const CheckpointRecord&) { return RecordKind::checkpoint; },
                        [](const StartRecord&) { return RecordKind::status; },
                        [](const EndRecord&) { return RecordKind::status; },
                        [](const EventRecord&) { return RecordKind::event; },
                    },
                    body);
}

// nullopt for the records that are not tied to one step (a final eval, an event without one).
std::optional<int64_t> step_of(const RecordBody& body) {
  return std::visit(Overloaded{
                        [](const ProgressRecord& r) -> std::optional<int64_t> { return r.step; },
                        [](const EvalRecord& r) -> std::optional<int64_t> { return r.step; },
                        [](const FinalEvalRecord&) -> std::optional<int64_t> { return std::nullopt; },
                        [](const ParamsRecord& r) -> std::optional<int64_t> { return r.step; },
                        [](const CheckpointRecord& r) -> std::optional<int64_t> { return r.step; },
                        [](const StartRecord& r) -> std::optional<int64_t> { return r.step; },
                        [](const EndRecord& r) -> std::optional<int64_t> { return r.outcome.step; },
                        [](const EventRecord& r) { return r.step; },
                    },
                    body);
}

json to_json(const Record& record) {
  json j = body_json(record.body);
  // UNIX seconds when the worker wrote the record; optional.
  if (record.time) j["time"] = *record.time;
  return j;
}

Record record_from_json(const json& object, const std::string& what) {
  const JsonFields f(object, what);
  Record r;
  r.body = body_from_json(object, f);
  r.time = f.optional_number("time");
  return r;
}

}  // namespace egm
