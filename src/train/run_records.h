// The names a run's records and outcome are known by, defined once: the
// trainer writes them, `egm train` prints them, a worker forwards them and
// the coordinator stores them (coordinator/record_mapping.h). Torch-free
// (library egm::train_records), so the coordinator and the sweep protocol use
// them without LibTorch. Each enum has one to_string and one parse; parse
// throws ProtocolError naming the unknown text and the valid names, since these
// strings arrive in records and messages.
#pragma once

#include <string_view>

namespace egm {

// How a run ended (RunResult::status, the RESULT message's result.status, the
// status record's "status" once the run is over).
enum class Outcome {
  done,         // reached max_steps; its final measurements are taken
  diverged,     // a loss became NaN or inf (not retried)
  interrupted,  // stopped on request and checkpointed (resumes later)
};
const char* to_string(Outcome outcome);
Outcome parse_outcome(std::string_view name);

// The "status" of the status record a run emits when it starts; when it ends
// the record carries the Outcome instead.
inline constexpr std::string_view kRunningStatus = "running";

// The "kind" of a record (train/metrics_sink.h documents each one's fields).
enum class RecordKind {
  progress,    // every log_interval steps
  eval,        // paper protocol at step 0, every eval_interval and max_steps
  final_eval,  // the final measurements (every val window, autoregressive)
  params,      // learned parameters
  checkpoint,  // a checkpoint is on disk
  status,      // the run started or ended
  event,       // something worth a line in the event log (TrainerEvent)
};
const char* to_string(RecordKind kind);
RecordKind parse_record_kind(std::string_view name);

// The "split" of a metric (metrics.split in the results database): where a
// loss was measured.
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

// The "event" of an event record.
enum class TrainerEvent {
  resumed,               // loaded a checkpoint ("step": the step it resumed from)
  checkpoint_skipped,    // a checkpoint was unusable (corrupt, another config)
  restart_from_scratch,  // no usable checkpoint although there were some
};
const char* to_string(TrainerEvent event);
TrainerEvent parse_trainer_event(std::string_view name);

}  // namespace egm
