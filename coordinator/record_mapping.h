// A run's records (run/records.h) -> rows of the results database.
// One RECORDS message becomes one RecordBatch, written in one transaction:
//   ProgressRecord   -> metrics, split train (loss = train_loss, lr, tokens_per_s),
//                       at most about kMaxTrainPoints per run (train_stride); the
//                       live view sees every one
//   EvalRecord       -> metrics, split eval_train / eval_val
//   FinalEvalRecord  -> metrics, split val_full / val_ar / val_ar_ref, at the final step
//   ParamsRecord     -> params (module, layer, index -> idx, name, value, step)
//   CheckpointRecord -> event checkpoint, with its step
//   EventRecord      -> event of the trainer event's kind (resumed, checkpoint_skipped,
//                       ...), with the record's step when it has one
//   StartRecord      -> the attempt's device, backend and world size, as the worker
//                       really runs it (ResultsDb::set_run_setup)
//   EndRecord        -> nothing (RESULT carries the outcome)
// A record's time (the worker's, when it was emitted) becomes the row's time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "db/results_db.h"
#include "run/records.h"

namespace egm::coordinator {

// The training curve a run keeps in the database: about this many 'train'
// points at most, whatever its length. Progress arrives every log_interval
// steps (10); a 5,000-step run would store 500 train rows, which for a
// 100,000-cell sweep is 50 million rows (gigabytes), while its evals, final
// measurements and learned parameters are kept in full.
inline constexpr int64_t kMaxTrainPoints = 100;

// Steps between the train points kept: 1 (every progress record) for a run
// of up to log_interval x kMaxTrainPoints steps (1,000 at the default), else
// log_interval times the smallest factor that brings max_steps / stride to
// kMaxTrainPoints or below. The points kept are the steps divisible by it
// and the final step; a function of the cell alone, so a resumed attempt
// keeps the same steps as an uninterrupted one.
int64_t train_stride(int64_t max_steps, int64_t log_interval);

struct RecordContext {
  int64_t sweep_id = 0;
  int64_t cell_id = 0;
  int64_t run_id = 0;
  int64_t final_step = 0;    // the step final_eval records belong to (the cell's max_steps)
  int64_t train_stride = 1;  // keep the train points at multiples of it (and final_step)
};

// The latest training progress in a batch, for the live view.
struct ProgressPoint {
  int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> tokens_per_s;
  double time = 0;
};

struct MappedRecords {
  db::RecordBatch batch;
  std::optional<int64_t> resumed_from_step;  // from a "resumed" event
  std::optional<ProgressPoint> progress;     // the last progress record
  std::optional<int64_t> checkpoint_step;    // the last checkpoint record
  std::optional<RunEnvironment> setup;             // the run's start record
};

MappedRecords map_records(const std::vector<Record>& records, const RecordContext& context);

}  // namespace egm::coordinator
