// Where a run's records go. A record is one JSON object with a "kind"
// (RecordKind in train/run_records.h, which names each kind and outcome once):
//   progress   {step, train_loss, lr, tokens_per_s, elapsed_s}      every log_interval steps
//   eval       {step, split: "eval_train"|"eval_val", loss}          paper protocol (MetricSplit)
//   final_eval {split: "val_full"|"val_ar"|"val_ar_ref", loss, windows}
//   params     {step, params: [{module, layer, index, name, value}]} learned parameters
//   checkpoint {step}
//   status     {status: "running"|"done"|"diverged"|"interrupted", step, message, ...}
//   event      {event: "resumed"|"checkpoint_skipped"|"restart_from_scratch", message, step?, path?}
// `egm train` writes them as JSON lines; a worker forwards them to the
// coordinator, which stores them in the results database.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace egm {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void emit(const nlohmann::json& record) = 0;
};

// Appends one JSON object per line to a file (append mode: a resumed run adds).
class JsonLinesSink : public MetricsSink {
 public:
  explicit JsonLinesSink(const std::string& path);
  void emit(const nlohmann::json& record) override;

 private:
  std::ofstream out_;
};

// Human progress lines on a stream: one per eval and at the end.
class ProgressPrinter : public MetricsSink {
 public:
  ProgressPrinter(std::FILE* out, int64_t max_steps) : out_(out), max_steps_(max_steps) {}
  void emit(const nlohmann::json& record) override;

 private:
  std::FILE* out_;
  int64_t max_steps_;
  nlohmann::json last_progress_ = nlohmann::json::object();
};

// Sends every record to several sinks.
class FanoutSink : public MetricsSink {
 public:
  void add(MetricsSink* sink) { sinks_.push_back(sink); }
  void emit(const nlohmann::json& record) override {
    for (auto* s : sinks_) s->emit(record);
  }

 private:
  std::vector<MetricsSink*> sinks_;
};

// Keeps records in memory (tests, benchmarks).
class MemorySink : public MetricsSink {
 public:
  void emit(const nlohmann::json& record) override { records.push_back(record); }
  std::vector<nlohmann::json> records;
};

}  // namespace egm
