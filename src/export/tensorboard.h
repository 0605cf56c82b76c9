// TensorBoard event files of a sweep: one run (folder) per cell, named by the
// cell's key, holding one event file with its curves and final measurements
// under stable tags. TensorBoard (and W&B's, Aim's and MLflow's TensorBoard
// importers) read the folder as a log directory:
//   tensorboard --logdir DIR
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "db/results_db.h"

namespace egm::exporter {

// The tag of a metrics split's loss: train -> "train/loss",
// eval_train -> "eval/train_loss", eval_val -> "eval/val_loss",
// val_full / val_ar / val_ar_ref -> "final/val_full" / "final/val_ar" /
// "final/val_ar_ref"; any other split S -> "other/S". Train rows also carry
// "train/lr" and "train/tokens_per_s"; a done cell's final_val and best_val
// are "final/final_val" and "final/best_val" at its final step. A NULL loss
// (a NaN in training) is written as NaN.
std::string loss_tag(std::string_view split);

struct TensorBoardSummary {
  int64_t runs = 0;    // cells with an event file
  int64_t events = 0;  // events written, file-version records not counted
};

// Writes DIR/<cell key>/events.out.tfevents.<sweep created_at>.egm for every
// cell of the sweep with metrics or results (the timestamp in the name keeps
// a second export of the same sweep byte-identical). `progress` is called
// after every 1,000 cells with the count so far.
TensorBoardSummary write_tensorboard(db::ResultsDb& results, int64_t sweep_id, const std::string& dir,
                                     const std::function<void(int64_t)>& progress = {});

}  // namespace egm::exporter
