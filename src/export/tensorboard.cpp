// TensorBoard export: each cell's loss curves as event files (one run folder a
// cell), written through tfrecord.h's framing.
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

#include "db/sweep_reads.h"
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
    // A missing loss is written as NaN, so the step is still recorded.
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
    // TensorBoard's scalar plugin reads simple_value, a 32-bit float.
    if (value) v->set_simple_value(static_cast<float>(*value));
  }

  void write(const tb::Event& event) {
    if (!writer_) {
      // Created at the first event, so a cell without metrics leaves no folder and counts as no run.
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
  const auto is = [&](MetricSplit s) { return split == to_string(s); };
  if (is(MetricSplit::train)) return "train/loss";
  if (is(MetricSplit::eval_train)) return "eval/train_loss";
  if (is(MetricSplit::eval_val)) return "eval/val_loss";
  if (is(MetricSplit::val_full) || is(MetricSplit::val_ar) || is(MetricSplit::val_ar_ref))
    return fmt::format("final/{}", split);
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
  // Two keys can reach one name (or a key can be "cell-ID"): the id is appended until it is unique.
  while (!used.insert(name).second) name += fmt::format("-{}", cell_id);
  return name;
}

}  // namespace

TensorBoardSummary write_tensorboard(db::ResultsDb& results, int64_t sweep_id, const std::string& dir,
                                     const std::function<void(int64_t)>& progress) {
  // A time beyond any real clock (a crafted row) would overflow the cast: named 0 then.
  const double created_at = results.sweep(sweep_id).created_at;
  const bool sane = std::abs(created_at) <= 1e11;
  const std::string file_name =
      fmt::format("events.out.tfevents.{}.egm", sane ? static_cast<int64_t>(created_at) : int64_t{0});

  TensorBoardSummary summary;
  int64_t seen = 0;
  std::set<std::string> used;
  try {
    for (const db::CellEnd& cell : db::cell_ends(results, sweep_id)) {
      EventFile file((std::filesystem::path(dir) / run_folder(cell.key, cell.id, used) / file_name).string(),
                     created_at);
      db::for_each_metric(results, cell.id, [&](const db::CellMetric& m) {
        // Train rows carry the learning rate and throughput too; every other split is one loss tag.
        if (m.split == to_string(MetricSplit::train))
          file.train(m.step, m.time, m.loss, m.lr, m.tokens_per_s);
        else
          file.loss(m.step, m.time, loss_tag(m.split), m.loss);
      });
      // A finished cell's final and best validation losses, as their own tags at its last step.
      if (cell.done && cell.final_step) {
        if (cell.final_val) file.loss(*cell.final_step, cell.updated_at, "final/final_val", *cell.final_val);
        if (cell.best_val) file.loss(*cell.final_step, cell.updated_at, "final/best_val", *cell.best_val);
      }
      if (file.open()) {
        file.close();
        ++summary.runs;
        summary.events += file.events();
      }
      if (++seen % 1000 == 0 && progress) progress(seen);
    }
  } catch (const DbError& e) {
    EGM_THROW(DbError, "{}; nothing exported", e.what());
  }
  return summary;
}

}  // namespace egm::exporter
