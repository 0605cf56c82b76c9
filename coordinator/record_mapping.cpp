// A RECORDS message's records turned into one RecordBatch of database rows,
// with train points thinned to about 100 a run (train_stride).
#include "coordinator/record_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "util/error.h"

namespace egm::coordinator {
namespace {

db::EventKind event_kind(TrainerEvent event) {
  switch (event) {
    case TrainerEvent::resumed: return db::EventKind::resumed;
    case TrainerEvent::checkpoint_skipped: return db::EventKind::checkpoint_skipped;
    case TrainerEvent::restart_from_scratch: return db::EventKind::restart_from_scratch;
  }
  // Unreachable for a parsed event; it keeps the function from falling off its end.
  EGM_THROW(ProtocolError, "trainer event {} has no event kind", static_cast<int>(event));
}

// Turns each record into rows; one instance per RECORDS message.
class Mapper {
 public:
  Mapper(const RecordContext& ctx, MappedRecords& out) : ctx_(ctx), out_(out) {}

  void map(const Record& r) {
    time_ = r.time.value_or(0.0);  // 0: the database stamps the row when it writes it
    std::visit([this](const auto& body) { add(body); }, r.body);
  }

 private:
  db::MetricPoint metric(int64_t step, MetricSplit split, std::optional<double> loss) const {
    db::MetricPoint m;
    m.cell_id = ctx_.cell_id;
    m.run_id = ctx_.run_id;
    m.step = step;
    m.split = split;
    m.loss = loss;
    m.time = time_;
    return m;
  }
  void event(db::EventKind kind, std::string message, std::optional<int64_t> step) {
    out_.batch.events.push_back({ctx_.sweep_id, ctx_.cell_id, ctx_.run_id, kind, std::move(message), time_, step});
  }

  void add(const ProgressRecord& r) {
    db::MetricPoint m = metric(r.step, MetricSplit::train, r.train_loss);
    m.lr = r.lr;
    m.tokens_per_s = r.tokens_per_s;
    out_.progress = ProgressPoint{m.step, m.loss, m.tokens_per_s, time_};
    // Thinned (train_stride), but the live view above has seen this one.
    if (m.step % std::max<int64_t>(1, ctx_.train_stride) == 0 || m.step == ctx_.final_step)
      out_.batch.metrics.push_back(std::move(m));
  }
  // Eval points are never thinned: there are few, and the analysis reads them.
  void add(const EvalRecord& r) { out_.batch.metrics.push_back(metric(r.step, r.split, r.loss)); }
  // Final measurements have no step of their own: they belong to the cell's last.
  void add(const FinalEvalRecord& r) { out_.batch.metrics.push_back(metric(ctx_.final_step, r.split, r.loss)); }
  void add(const ParamsRecord& r) {
    for (const LearnedParam& p : r.params) {
      db::ParamValue v;
      v.cell_id = ctx_.cell_id;
      v.run_id = ctx_.run_id;
      v.step = r.step;
      v.module = p.module;
      v.layer = p.layer;
      v.idx = p.index;
      v.name = p.name;
      v.value = p.value;
      out_.batch.params.push_back(std::move(v));
    }
  }
  // A checkpoint asks for an immediate commit (cell_life.cpp): the database is never behind what a resume starts from.
  void add(const CheckpointRecord& r) {
    out_.checkpoint_step = r.step;
    event(db::EventKind::checkpoint, fmt::format("checkpoint at step {}", r.step), r.step);
  }
  void add(const EventRecord& r) {
    std::string message = r.message;
    if (r.step) {
      message += fmt::format(" (step {})", *r.step);
      if (r.event == TrainerEvent::resumed) out_.resumed_from_step = r.step;
    }
    if (r.path) message += ": " + *r.path;
    event(event_kind(r.event), std::move(message), r.step);
  }
  void add(const StartRecord& r) { out_.setup = r.setup; }
  void add(const EndRecord&) {}  // RESULT carries the outcome; start_attempt and StartRecord the setup

  const RecordContext& ctx_;
  MappedRecords& out_;
  double time_ = 0;
};

}  // namespace

int64_t train_stride(int64_t max_steps, int64_t log_interval) {
  const int64_t every = std::max<int64_t>(1, log_interval);
  // Up to kMaxTrainPoints progress records are kept whole; beyond that the stride is a multiple of log_interval,
  // so every kept step is one a progress record exists for.
  const int64_t span = every * kMaxTrainPoints;
  if (max_steps <= span) return 1;  // every progress record is kept
  return every * std::max<int64_t>(1, (max_steps + span - 1) / span);
}

MappedRecords map_records(const std::vector<Record>& records, const RecordContext& ctx) {
  MappedRecords out;
  Mapper mapper(ctx, out);
  for (const Record& r : records) mapper.map(r);
  return out;
}

}  // namespace egm::coordinator
