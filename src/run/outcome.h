// How a run ended and what it measured: one RunOutcome, which the trainer
// returns (train/trainer.h), RESULT carries (sweep/protocol.h), the
// coordinator hands to the database (db::ResultsDb::finish_attempt) and the
// analysis reads back (cells' columns of the same names). "No value" is an
// empty std::optional in C++, null in JSON and NULL in SQL: a NaN loss (a
// diverged evaluation) is no value too.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace egm {

enum class Outcome {
  done,         // reached max_steps; its final measurements are taken
  diverged,     // a loss became NaN or inf (not retried)
  interrupted,  // stopped on request and checkpointed (resumes later)
};
const char* to_string(Outcome outcome);
Outcome parse_outcome(std::string_view name);  // ProtocolError naming the valid names

// What a run measured; each is absent when it was not measured (or not finite).
struct Measurements {
  std::optional<double> final_val;     // paper protocol at the last step (the paper's number)
  std::optional<double> best_val;      // lowest paper-protocol val loss over the evals
  std::optional<double> final_train;   // paper protocol on train batches at the last step
  std::optional<double> full_val;      // every val window, once
  std::optional<double> ar_val;        // autoregressive (each position sees only its prefix)
  std::optional<double> ar_ref_val;    // ar_val's windows, full-window forward
  std::optional<double> tokens_per_s;  // training throughput of this attempt

  friend bool operator==(const Measurements& a, const Measurements& b);
};

// Every measurement, the one list that the outcome's JSON, the results
// database (a REAL column of cells of the same name), egm merge, egm export,
// egm runs, the cell and sweep pages and the analysis (its --metric choices and
// per-seed tables) are built from. Adding a measurement is a field above, a
// line here, the trainer that measures it, and its cells column (a
// migration in db/migrations.cpp and schemas/results.sql).
struct MeasurementField {
  const char* name;                            // the JSON field and, with a cells column, its name
  std::optional<double> Measurements::*value;  // where it is held
  int cells_since;  // the results schema version that added its cells column; 0: none (kept per attempt only)
  // For people, where the analysis may take statistics over seeds of it (egm
  // analyze/report/plan --metric); nullptr: it is stored and shown, not analysed.
  const char* statistic = nullptr;
};
inline constexpr MeasurementField kMeasurementFields[] = {
    {"final_val", &Measurements::final_val, 1,
     "val loss at the final step (random eval batches; the paper's number)"},
    {"best_val", &Measurements::best_val, 1, "lowest val loss over the periodic evals"},
    {"final_train", &Measurements::final_train, 0},
    {"full_val", &Measurements::full_val, 1, "val loss of a deterministic pass over every val window"},
    {"ar_val", &Measurements::ar_val, 1, "autoregressive (prefix-only) val loss"},
    {"ar_ref_val", &Measurements::ar_ref_val, 1},
    {"tokens_per_s", &Measurements::tokens_per_s, 0},
};
// The measurements with a cells column, in the order above (the cells columns' order in every table).
std::vector<MeasurementField> cell_measurements();

// A finite value, else none: the one place the trainer's NaN becomes "no value".
std::optional<double> finite_or_none(double value);

struct RunOutcome {
  Outcome status = Outcome::done;
  std::string message;                       // why, for diverged and interrupted
  int64_t step = 0;                          // optimiser steps completed
  std::optional<int64_t> resumed_from_step;  // the checkpoint this attempt started from; none: from scratch
  Measurements measured;
};

// JSON: {status, message, step, resumed_from_step (-1: none), final_val, ...}
// with null for each measurement that has no value (RESULT's `result`, the end
// status record). The reader throws ProtocolError naming `what` and the field.
nlohmann::json to_json(const RunOutcome& outcome);
RunOutcome run_outcome_from_json(const nlohmann::json& object, const std::string& what);

}  // namespace egm
