// Where a run's records go (run/records.h defines each kind and its JSON).
// `egm train` prints them (ProgressPrinter) and writes them as JSON lines; a
// worker also forwards them to the coordinator, which stores them in the
// results database.
#pragma once

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run/records.h"

namespace egm {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void emit(const Record& record) = 0;
};

// Appends one JSON object per line to a file (append mode: a resumed run adds).
class JsonLinesSink : public MetricsSink {
 public:
  explicit JsonLinesSink(const std::string& path);
  void emit(const Record& record) override;

 private:
  std::ofstream out_;
};

// Human progress lines on a stream: one per eval_val record, one per final
// measurement and one when the run ends.
class ProgressPrinter : public MetricsSink {
 public:
  ProgressPrinter(std::FILE* out, int64_t max_steps) : out_(out), max_steps_(max_steps) {}
  void emit(const Record& record) override;

 private:
  std::FILE* out_;
  int64_t max_steps_;
  std::optional<ProgressRecord> last_progress_;
};

// Sends every record to several sinks.
class FanoutSink : public MetricsSink {
 public:
  void add(MetricsSink* sink) { sinks_.push_back(sink); }
  void emit(const Record& record) override {
    for (auto* s : sinks_) s->emit(record);
  }

 private:
  std::vector<MetricsSink*> sinks_;
};

// Keeps records in memory (tests, benchmarks).
class MemorySink : public MetricsSink {
 public:
  void emit(const Record& record) override { records.push_back(record); }
  // The records of one type, in order (e.g. of<EvalRecord>()).
  template <typename Body>
  std::vector<Body> of() const {
    std::vector<Body> out;
    for (const Record& r : records)
      if (const auto* b = std::get_if<Body>(&r.body)) out.push_back(*b);
    return out;
  }
  std::vector<Record> records;
};

}  // namespace egm
