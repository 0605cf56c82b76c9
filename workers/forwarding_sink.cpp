// The worker's sink: each record stamped with its UNIX time and buffered; a batch
// goes out each flush interval, at 1,000 records, or at once for a status, checkpoint, final or event.
#include "workers/forwarding_sink.h"

#include <algorithm>
#include <string>


namespace egm::worker {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Records the coordinator acts on at once (a start, an end, a checkpoint, an event) are not held back.
bool flush_now(RecordKind kind) {
  return kind == RecordKind::status || kind == RecordKind::checkpoint || kind == RecordKind::final_eval ||
         kind == RecordKind::event;
}

}  // namespace

ForwardingSink::ForwardingSink(protocol::Transport& transport, int64_t cell_id, int64_t run_id, double flush_interval_s,
                               int coordinator_rank)
    : transport_(transport),
      cell_id_(cell_id),
      run_id_(run_id),
      flush_interval_s_(flush_interval_s),
      coordinator_(coordinator_rank) {}

void ForwardingSink::emit(const Record& record) {
  Record r = record;
  // Stamped here, when the record is made, not when the batch reaches the database.
  r.time = unix_seconds();
  if (const std::optional<int64_t> step = step_of(r.body)) last_step_ = std::max(last_step_, *step);
  const RecordKind kind = kind_of(r.body);
  buffer_.push_back(std::move(r));
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count();
  // 1,000 records bound the message: a long interval at a high step rate must not build one huge RECORDS.
  if (flush_now(kind) || since >= flush_interval_s_ || buffer_.size() >= 1000) flush();
}

void ForwardingSink::flush() {
  last_flush_ = std::chrono::steady_clock::now();
  if (buffer_.empty()) return;
  protocol::Records m;
  m.cell_id = cell_id_;
  m.run_id = run_id_;
  // A moved-from vector is valid but unspecified: clear() makes it empty for the next records.
  m.records = std::move(buffer_);
  buffer_.clear();
  protocol::send_message(transport_, coordinator_, m);
}

}  // namespace egm::worker
