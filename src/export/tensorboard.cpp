#include "export/tensorboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

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

namespace {

// The folder of a cell's event file: its key when that is a plain name
// (letters, digits, '.', '_', '-', '+', '=', '@'; not starting with '.'),
// else "cell-ID"; unique within the export. A key read from a database made
// elsewhere may be "../../x", an absolute path, "." or empty: none of them
// may name a folder outside `dir`, or the same folder twice.
std::string run_folder(const std::string& key, int64_t cell_id, std::set<std::string>& used) {
  const bool plain = !key.empty() && key.size() <= 200 && key[0] != '.' &&
                     std::all_of(key.begin(), key.end(), [](char ch) {
                       return std::isalnum(static_cast<unsigned char>(ch)) || (ch != '\0' && std::strchr("._-+=@", ch) != nullptr);
                     });
  std::string name = plain ? key : fmt::format("cell-{}", cell_id);
  while (!used.insert(name).second) name += fmt::format("-{}", cell_id);
  return name;
}

// A stored number as a number: text or a blob in a REAL column (a database
// edited elsewhere) is refused, naming the cell, never read as 0.0.
std::optional<double> number(const db::Statement& s, int column, const char* what, int64_t cell_id,
                             const std::string& path) {
  bool mismatch = false;
  std::optional<double> v = s.opt_number(column, &mismatch);
  EGM_REQUIRE(!mismatch, DbError,
              "{}: {} of cell {} is stored as {}, not a number (was the database edited elsewhere?); nothing exported",
              path, what, cell_id, s.text(column).substr(0, 40));
  return v;
}

}  // namespace

TensorBoardSummary write_tensorboard(db::Connection& connection, int64_t sweep_id, const std::string& dir,
                                     const std::function<void(int64_t)>& progress) {
  db::Statement sweep = connection.prepare("SELECT created_at FROM sweeps WHERE id = ?1");
  sweep.bind(1, sweep_id);
  EGM_REQUIRE(sweep.step(), DbError, "{}: no sweep with id {}", connection.path(), sweep_id);
  // A time beyond any real clock (a crafted row) would overflow the cast: named 0 then.
  const double created_at = sweep.real(0);
  const bool sane = std::abs(created_at) <= 1e11;
  const std::string file_name =
      fmt::format("events.out.tfevents.{}.egm", sane ? static_cast<int64_t>(created_at) : int64_t{0});

  db::Statement cells = connection.prepare(
      "SELECT id, key, status, final_val, best_val, final_step, updated_at FROM cells WHERE sweep_id = ?1 "
      "ORDER BY position");
  cells.bind(1, sweep_id);
  // The cell's rows in primary-key order (split, step): no sort.
  db::Statement metrics = connection.prepare(
      "SELECT split, step, loss, lr, tokens_per_s, time FROM metrics WHERE cell_id = ?1 ORDER BY split, step");
  TensorBoardSummary summary;
  int64_t seen = 0;
  std::set<std::string> used;
  const std::string& db = connection.path();
  while (cells.step()) {
    const int64_t cell_id = cells.int64(0);
    EventFile file((std::filesystem::path(dir) / run_folder(cells.text(1), cell_id, used) / file_name).string(),
                   created_at);
    metrics.reset();
    metrics.bind(1, cell_id);
    while (metrics.step()) {
      const std::string split = metrics.text(0);
      const int64_t step = metrics.int64(1);
      const double time = number(metrics, 5, "a metric's time", cell_id, db).value_or(0);
      const std::optional<double> loss = number(metrics, 2, "a loss", cell_id, db);
      if (split == "train")
        file.train(step, time, loss, number(metrics, 3, "a learning rate", cell_id, db),
                   number(metrics, 4, "a tokens/s", cell_id, db));
      else
        file.loss(step, time, loss_tag(split), loss);
    }
    if (cells.text(2) == "done" && !cells.is_null(5)) {
      const int64_t step = cells.int64(5);
      const double time = number(cells, 6, "updated_at", cell_id, db).value_or(0);
      if (auto v = number(cells, 3, "final_val", cell_id, db)) file.loss(step, time, "final/final_val", *v);
      if (auto v = number(cells, 4, "best_val", cell_id, db)) file.loss(step, time, "final/best_val", *v);
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
