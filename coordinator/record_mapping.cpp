#include "coordinator/record_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "train/run_records.h"
#include "util/error.h"

namespace egm::coordinator {
namespace {

using json = nlohmann::json;

std::optional<double> number(const json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_number()) return std::nullopt;  // null = NaN
  return r[key].get<double>();
}

int64_t integer(const json& r, const char* key) {
  EGM_REQUIRE(r.contains(key) && r[key].is_number_integer(), ProtocolError, "{} record without an integer '{}': {}",
              r.value("kind", "?"), key, r.dump().substr(0, 200));
  return r[key].get<int64_t>();
}

std::string text(const json& r, const char* key) {
  EGM_REQUIRE(r.contains(key) && r[key].is_string(), ProtocolError, "{} record without a string '{}': {}",
              r.value("kind", "?"), key, r.dump().substr(0, 200));
  return r[key].get<std::string>();
}

// A record's split, checked: a name the trainer does not write is a ProtocolError.
std::string metric_split(const json& r) { return to_string(parse_metric_split(text(r, "split"))); }

db::EventKind event_kind(TrainerEvent event) {
  switch (event) {
    case TrainerEvent::resumed: return db::EventKind::resumed;
    case TrainerEvent::checkpoint_skipped: return db::EventKind::checkpoint_skipped;
    case TrainerEvent::restart_from_scratch: return db::EventKind::restart_from_scratch;
  }
  EGM_THROW(ProtocolError, "trainer event {} has no event kind", static_cast<int>(event));
}

}  // namespace

int64_t train_stride(int64_t max_steps, int64_t log_interval) {
  const int64_t every = std::max<int64_t>(1, log_interval);
  const int64_t span = every * kMaxTrainPoints;
  if (max_steps <= span) return 1;  // every progress record is kept
  return every * std::max<int64_t>(1, (max_steps + span - 1) / span);
}

MappedRecords map_records(const std::vector<json>& records, const RecordContext& ctx) {
  MappedRecords out;
  auto metric = [&](int64_t step, std::string split, std::optional<double> loss, double time) {
    db::MetricPoint m;
    m.cell_id = ctx.cell_id;
    m.run_id = ctx.run_id;
    m.step = step;
    m.split = std::move(split);
    m.loss = loss;
    m.time = time;
    return m;
  };
  auto event = [&](db::EventKind kind, std::string message, double time, std::optional<int64_t> step) {
    db::EventInput e;
    e.sweep_id = ctx.sweep_id;
    e.cell_id = ctx.cell_id;
    e.run_id = ctx.run_id;
    e.kind = kind;
    e.message = std::move(message);
    e.time = time;
    e.step = step;
    return e;
  };

  for (const json& r : records) {
    const std::string kind_name = text(r, "kind");
    const double time = number(r, "time").value_or(0.0);
    RecordKind kind;
    try {
      kind = parse_record_kind(kind_name);
    } catch (const ProtocolError&) {
      // A record this coordinator does not know: kept in the event log, not guessed at.
      out.batch.events.push_back(event(db::EventKind::unknown_record, r.dump().substr(0, 500), time, std::nullopt));
      continue;
    }
    switch (kind) {
      case RecordKind::progress: {
        db::MetricPoint m = metric(integer(r, "step"), to_string(MetricSplit::train), number(r, "train_loss"), time);
        m.lr = number(r, "lr");
        m.tokens_per_s = number(r, "tokens_per_s");
        out.progress = ProgressPoint{m.step, m.loss, m.tokens_per_s, time};
        if (m.step % std::max<int64_t>(1, ctx.train_stride) == 0 || m.step == ctx.final_step)
          out.batch.metrics.push_back(std::move(m));
        break;
      }
      case RecordKind::eval:
        out.batch.metrics.push_back(metric(integer(r, "step"), metric_split(r), number(r, "loss"), time));
        break;
      case RecordKind::final_eval:
        out.batch.metrics.push_back(metric(ctx.final_step, metric_split(r), number(r, "loss"), time));
        break;
      case RecordKind::params: {
        const int64_t step = integer(r, "step");
        EGM_REQUIRE(r.contains("params") && r["params"].is_array(), ProtocolError, "params record without a list: {}",
                    r.dump().substr(0, 200));
        for (const json& p : r["params"]) {
          db::ParamValue v;
          v.cell_id = ctx.cell_id;
          v.run_id = ctx.run_id;
          v.step = step;
          v.module = text(p, "module");
          v.layer = integer(p, "layer");
          v.idx = integer(p, "index");
          v.name = text(p, "name");
          v.value = number(p, "value").value_or(NAN);
          out.batch.params.push_back(std::move(v));
        }
        break;
      }
      case RecordKind::checkpoint: {
        const int64_t step = integer(r, "step");
        out.checkpoint_step = step;
        out.batch.events.push_back(
            event(db::EventKind::checkpoint, fmt::format("checkpoint at step {}", step), time, step));
        break;
      }
      case RecordKind::event: {
        const TrainerEvent name = parse_trainer_event(text(r, "event"));
        std::string message = r.value("message", std::string());
        std::optional<int64_t> step;
        if (r.contains("step") && r["step"].is_number_integer()) {
          step = r["step"].get<int64_t>();
          message += fmt::format(" (step {})", *step);
          if (name == TrainerEvent::resumed) out.resumed_from_step = step;
        }
        if (r.contains("path") && r["path"].is_string()) message += ": " + r["path"].get<std::string>();
        out.batch.events.push_back(event(event_kind(name), message, time, step));
        break;
      }
      case RecordKind::status:
        // The run's start and end; RESULT carries the outcome, start_attempt the setup.
        break;
    }
  }
  return out;
}

}  // namespace egm::coordinator
