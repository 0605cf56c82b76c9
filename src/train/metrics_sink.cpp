// The sinks of `egm train`: metrics.jsonl (appended, one record a line) and the
// progress lines it prints.
#include "train/metrics_sink.h"

#include <fmt/format.h>

#include <cmath>

#include "util/error.h"

namespace egm {

// Appended: a resumed run adds to the records of its earlier attempts.
JsonLinesSink::JsonLinesSink(const std::string& path) : out_(path, std::ios::app) {
  EGM_REQUIRE(out_.good(), IoError, "cannot open {} for appending", path);
}

void JsonLinesSink::emit(const Record& record) {
  out_ << to_json(record).dump() << '\n';
  // Flushed per record, so a killed run's file holds every record it emitted.
  out_.flush();
}

namespace {
std::string duration(double seconds) {
  // Negated comparison: NaN goes to "?" too.
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string loss_text(const std::optional<double>& loss, const char* none) {
  return loss ? fmt::format("{:.4f}", *loss) : none;
}
}  // namespace

void ProgressPrinter::emit(const Record& record) {
  if (const auto* p = std::get_if<ProgressRecord>(&record.body)) {
    last_progress_ = *p;
  } else if (const auto* e = std::get_if<EvalRecord>(&record.body); e && e->split == MetricSplit::eval_val) {
    // The line is the eval's: the train loss, rate and ETA are the last progress record's.
    const ProgressRecord p = last_progress_.value_or(ProgressRecord{});
    const double eta =
        p.step > 0 ? p.elapsed_s / static_cast<double>(p.step) * static_cast<double>(max_steps_ - e->step) : -1;
    std::fprintf(out_, "step %6lld/%lld  train %s  val %s  lr %.2e  %8.0f tokens/s  elapsed %s  ETA %s\n",
                 static_cast<long long>(e->step), static_cast<long long>(max_steps_),
                 loss_text(p.train_loss, "  -   ").c_str(), loss_text(e->loss, "  nan ").c_str(), p.lr,
                 p.tokens_per_s, duration(p.elapsed_s).c_str(), duration(eta).c_str());
    std::fflush(out_);
  } else if (const auto* f = std::get_if<FinalEvalRecord>(&record.body)) {
    std::fprintf(out_, "%-12s %s  (%lld windows)\n", to_string(f->split), loss_text(f->loss, "nan").c_str(),
                 static_cast<long long>(f->windows));
    std::fflush(out_);
  } else if (const auto* end = std::get_if<EndRecord>(&record.body)) {
    const RunOutcome& o = end->outcome;
    std::fprintf(out_, "%s at step %lld%s%s\n", to_string(o.status), static_cast<long long>(o.step),
                 o.message.empty() ? "" : ": ", o.message.c_str());
    std::fflush(out_);
  }
}

}  // namespace egm
