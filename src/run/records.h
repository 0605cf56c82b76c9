// A run's records: what the trainer emits while it trains (train/trainer.h),
// `egm train` prints and writes to metrics.jsonl, a worker forwards in
// RECORDS (sweep/protocol.h) and the coordinator stores
// (coordinator/record_mapping.h). One C++ type per kind, one JSON encoder and
// one decoder; an unknown kind or a bad field is a ProtocolError.
//
// JSON forms (one object per record, "kind" first in meaning; keys sorted in
// the text), unchanged since metrics.jsonl was first written:
//   progress   {step, train_loss, lr, tokens_per_s, elapsed_s}   every log_interval steps
//   eval       {step, split: eval_train|eval_val, loss, elapsed_s?}  paper protocol
//   final_eval {split: val_full|val_ar|val_ar_ref, loss, windows}
//   params     {step, params: [{module, layer, index, name, value}]}
//   checkpoint {step}
//   status     {status: "running", step, config_hash, world_size, backend, device,
//               torch_version, egm_commit, threads}                  the run starts (StartRecord)
//   status     {status: done|diverged|interrupted, ...RunOutcome}   the run ends (EndRecord)
//   event      {event: resumed|checkpoint_skipped|restart_from_scratch, message, step?, path?}
// plus "time" (UNIX s) on records a worker forwarded. null is "no value".
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "run/device.h"
#include "run/learned_param.h"
#include "run/outcome.h"

namespace egm {

enum class RecordKind { progress, eval, final_eval, params, checkpoint, status, event };
const char* to_string(RecordKind kind);
RecordKind parse_record_kind(std::string_view name);

// Where a loss was measured (metrics.split in the results database).
enum class MetricSplit {
  train,       // progress records: the training loss of the step
  eval_train,  // paper protocol on random training batches
  eval_val,    // paper protocol on random validation batches (the paper's number)
  val_full,    // final: every validation window
  val_ar,      // final: autoregressive (prefix-only) loss
  val_ar_ref,  // final: the full-window loss on val_ar's windows
};
const char* to_string(MetricSplit split);
MetricSplit parse_metric_split(std::string_view name);

// Something worth a line in the event log.
enum class TrainerEvent {
  resumed,               // loaded a checkpoint (step: the step it resumed from)
  checkpoint_skipped,    // a checkpoint was unusable (corrupt, another config)
  restart_from_scratch,  // no usable checkpoint although there were some
};
const char* to_string(TrainerEvent event);
TrainerEvent parse_trainer_event(std::string_view name);

struct ProgressRecord {
  int64_t step = 0;
  std::optional<double> train_loss;  // mean over the ranks; none when it was not finite
  double lr = 0;
  double tokens_per_s = 0;
  double elapsed_s = 0;
};

struct EvalRecord {
  int64_t step = 0;
  MetricSplit split = MetricSplit::eval_val;
  std::optional<double> loss;
  std::optional<double> elapsed_s;  // on eval_val records
};

struct FinalEvalRecord {
  MetricSplit split = MetricSplit::val_full;
  std::optional<double> loss;
  int64_t windows = 0;
};

struct ParamsRecord {
  int64_t step = 0;
  LearnedParams params;
};

struct CheckpointRecord {
  int64_t step = 0;
};

// What a run really runs with, as it starts (the status record "running").
struct RunEnvironment {
  std::string config_hash;
  int world_size = 1;
  Backend backend = Backend::none;
  DeviceName device;
  std::string torch_version;
  std::string egm_commit;
  int threads = 1;
};

struct StartRecord {
  int64_t step = 0;  // where it starts: 0, or the checkpoint it resumed from
  RunEnvironment setup;
};

struct EndRecord {
  RunOutcome outcome;
};

struct EventRecord {
  TrainerEvent event = TrainerEvent::resumed;
  std::string message;
  std::optional<int64_t> step;
  std::optional<std::string> path;
};

using RecordBody = std::variant<ProgressRecord, EvalRecord, FinalEvalRecord, ParamsRecord, CheckpointRecord,
                                StartRecord, EndRecord, EventRecord>;

struct Record {
  RecordBody body;
  std::optional<double> time;  // UNIX s when it was emitted; set by the worker that forwards it

  Record() = default;
  template <typename Body, typename = std::enable_if_t<!std::is_same_v<std::decay_t<Body>, Record>>>
  Record(Body&& b) : body(std::forward<Body>(b)) {}  // NOLINT: a record is its body
};

RecordKind kind_of(const RecordBody& body);
// The step a record is about, when it names one (final_eval does not).
std::optional<int64_t> step_of(const RecordBody& body);

nlohmann::json to_json(const Record& record);
// `what` names the record's source in errors ("a record of rank 3").
Record record_from_json(const nlohmann::json& object, const std::string& what = "record");

}  // namespace egm
