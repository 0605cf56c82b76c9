#include "train/run_records.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string>

#include "util/error.h"

namespace egm {
namespace {

// Names in enum order; parse finds the index.
constexpr std::array<const char*, 3> kOutcomes = {"done", "diverged", "interrupted"};
constexpr std::array<const char*, 7> kRecordKinds = {"progress",   "eval",   "final_eval", "params",
                                                     "checkpoint", "status", "event"};
constexpr std::array<const char*, 6> kMetricSplits = {"train",    "eval_train", "eval_val",
                                                      "val_full", "val_ar",     "val_ar_ref"};
constexpr std::array<const char*, 3> kTrainerEvents = {"resumed", "checkpoint_skipped", "restart_from_scratch"};

template <typename Enum, std::size_t N>
Enum parse(std::string_view name, const std::array<const char*, N>& names, const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  EGM_THROW(ProtocolError, "unknown {} '{}'; valid: {}", what, std::string(name), fmt::join(names, ", "));
}

}  // namespace

const char* to_string(Outcome outcome) { return kOutcomes.at(static_cast<std::size_t>(outcome)); }
Outcome parse_outcome(std::string_view name) { return parse<Outcome>(name, kOutcomes, "run outcome"); }

const char* to_string(RecordKind kind) { return kRecordKinds.at(static_cast<std::size_t>(kind)); }
RecordKind parse_record_kind(std::string_view name) { return parse<RecordKind>(name, kRecordKinds, "record kind"); }

const char* to_string(MetricSplit split) { return kMetricSplits.at(static_cast<std::size_t>(split)); }
MetricSplit parse_metric_split(std::string_view name) {
  return parse<MetricSplit>(name, kMetricSplits, "metric split");
}

const char* to_string(TrainerEvent event) { return kTrainerEvents.at(static_cast<std::size_t>(event)); }
TrainerEvent parse_trainer_event(std::string_view name) {
  return parse<TrainerEvent>(name, kTrainerEvents, "trainer event");
}

}  // namespace egm
