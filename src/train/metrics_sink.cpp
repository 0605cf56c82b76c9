#include "train/metrics_sink.h"

#include <fmt/format.h>

#include <cmath>

#include "train/run_records.h"
#include "util/error.h"

namespace egm {

JsonLinesSink::JsonLinesSink(const std::string& path) : out_(path, std::ios::app) {
  EGM_REQUIRE(out_.good(), IoError, "cannot open {} for appending", path);
}

void JsonLinesSink::emit(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
}

namespace {
std::string duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}
}  // namespace

void ProgressPrinter::emit(const nlohmann::json& r) {
  const RecordKind kind = parse_record_kind(r.value("kind", ""));
  if (kind == RecordKind::progress) {
    last_progress_ = r;
  } else if (kind == RecordKind::eval && r.value("split", "") == to_string(MetricSplit::eval_val)) {
    const int64_t step = r["step"].get<int64_t>();
    double train = last_progress_.value("train_loss", std::nan(""));
    double tps = last_progress_.value("tokens_per_s", 0.0);
    double elapsed = last_progress_.value("elapsed_s", 0.0);
    int64_t pstep = last_progress_.value("step", int64_t{0});
    double eta = pstep > 0 ? elapsed / static_cast<double>(pstep) * static_cast<double>(max_steps_ - step) : -1;
    std::string train_text = std::isfinite(train) ? fmt::format("{:.4f}", train) : "  -   ";
    std::fprintf(out_, "step %6lld/%lld  train %s  val %.4f  lr %.2e  %8.0f tokens/s  elapsed %s  ETA %s\n",
                 static_cast<long long>(step), static_cast<long long>(max_steps_), train_text.c_str(),
                 r["loss"].get<double>(), last_progress_.value("lr", 0.0), tps, duration(elapsed).c_str(),
                 duration(eta).c_str());
    std::fflush(out_);
  } else if (kind == RecordKind::final_eval) {
    std::fprintf(out_, "%-12s %.4f  (%lld windows)\n", r["split"].get<std::string>().c_str(), r["loss"].get<double>(),
                 static_cast<long long>(r.value("windows", int64_t{0})));
    std::fflush(out_);
  } else if (kind == RecordKind::status && r.value("status", "") != kRunningStatus) {
    const std::string message = r.value("message", "");
    std::fprintf(out_, "%s at step %lld%s%s\n", r["status"].get<std::string>().c_str(),
                 static_cast<long long>(r.value("step", int64_t{0})), message.empty() ? "" : ": ", message.c_str());
    std::fflush(out_);
  }
}

}  // namespace egm
