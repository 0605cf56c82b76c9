#include "export/tensorboard.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "export/tfrecord.h"
#include "tensorboard_event.pb.h"
#include "util/error.h"

namespace egm::exporter {
namespace {

namespace tb = egm::tensorboard;

// One cell's event file, opened at its first event.
class EventFile {
 public:
  EventFile(std::string path, double created_at) : path_(std::move(path)), created_at_(created_at) {}

  void loss(int64_t step, double wall_time, const std::string& tag, std::optional<double> value) {
    tb::Event event;
    event.set_wall_time(wall_time);
    event.set_step(step);
    add(event.mutable_summary(), tag, value ? *value : std::numeric_limits<double>::quiet_NaN());
    write(event);
  }

  void train(int64_t step, double wall_time, std::optional<double> loss, std::optional<double> lr,
             std::optional<double> tokens_per_s) {
    tb::Event event;
    event.set_wall_time(wall_time);
    event.set_step(step);
    tb::Summary* summary = event.mutable_summary();
    add(summary, "train/loss", loss ? *loss : std::numeric_limits<double>::quiet_NaN());
    if (lr) add(summary, "train/lr", *lr);
    if (tokens_per_s) add(summary, "train/tokens_per_s", *tokens_per_s);
    write(event);
  }

  bool open() const { return writer_.has_value(); }
  int64_t events() const { return events_; }
  void close() {
    if (writer_) writer_->close();
  }

 private:
  static void add(tb::Summary* summary, const std::string& tag, std::optional<double> value) {
    tb::SummaryValue* v = summary->add_value();
    v->set_tag(tag);
    if (value) v->set_simple_value(static_cast<float>(*value));
  }

  void write(const tb::Event& event) {
    if (!writer_) {
      std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
      writer_.emplace(path_);
      // Every event file starts with its version; readers check it.
      tb::Event version;
      version.set_wall_time(created_at_);
      version.set_file_version("brain.Event:2");
      writer_->write(version.SerializeAsString());
    }
    writer_->write(event.SerializeAsString());
    ++events_;
  }

  std::string path_;
  double created_at_ = 0;
  std::optional<TfRecordWriter> writer_;
  int64_t events_ = 0;
};

}  // namespace

std::string loss_tag(std::string_view split) {
  if (split == "train") return "train/loss";
  if (split == "eval_train") return "eval/train_loss";
  if (split == "eval_val") return "eval/val_loss";
  if (split == "val_full" || split == "val_ar" || split == "val_ar_ref") return fmt::format("final/{}", split);
  return fmt::format("other/{}", split);
}

TensorBoardSummary write_tensorboard(db::Connection& connection, int64_t sweep_id, const std::string& dir,
                                     const std::function<void(int64_t)>& progress) {
  db::Statement sweep = connection.prepare("SELECT created_at FROM sweeps WHERE id = ?1");
  sweep.bind(1, sweep_id);
  EGM_REQUIRE(sweep.step(), DbError, "{}: no sweep with id {}", connection.path(), sweep_id);
  const double created_at = sweep.real(0);
  const std::string file_name = fmt::format("events.out.tfevents.{}.egm", static_cast<int64_t>(created_at));

  db::Statement cells = connection.prepare(
      "SELECT id, key, status, final_val, best_val, final_step, updated_at FROM cells WHERE sweep_id = ?1 "
      "ORDER BY position");
  cells.bind(1, sweep_id);
  // The cell's rows in primary-key order (split, step): no sort.
  db::Statement metrics = connection.prepare(
      "SELECT split, step, loss, lr, tokens_per_s, time FROM metrics WHERE cell_id = ?1 ORDER BY split, step");
  TensorBoardSummary summary;
  int64_t seen = 0;
  while (cells.step()) {
    const int64_t cell_id = cells.int64(0);
    EventFile file((std::filesystem::path(dir) / cells.text(1) / file_name).string(), created_at);
    metrics.reset();
    metrics.bind(1, cell_id);
    while (metrics.step()) {
      const std::string split = metrics.text(0);
      const int64_t step = metrics.int64(1);
      const double time = metrics.real(5);
      if (split == "train")
        file.train(step, time, metrics.opt_real(2), metrics.opt_real(3), metrics.opt_real(4));
      else
        file.loss(step, time, loss_tag(split), metrics.opt_real(2));
    }
    if (cells.text(2) == "done" && !cells.is_null(5)) {
      const int64_t step = cells.int64(5);
      const double time = cells.real(6);
      if (!cells.is_null(3)) file.loss(step, time, "final/final_val", cells.real(3));
      if (!cells.is_null(4)) file.loss(step, time, "final/best_val", cells.real(4));
    }
    if (file.open()) {
      file.close();
      ++summary.runs;
      summary.events += file.events();
    }
    if (++seen % 1000 == 0 && progress) progress(seen);
  }
  return summary;
}

}  // namespace egm::exporter
