// The worker's MetricsSink: stamps each trainer record with the time it was
// emitted and forwards the records to the coordinator in RECORDS messages.
// Records are batched (one message, one database transaction): a batch goes
// out every `flush_interval_s`, and at once for the records someone waits for
// (status, checkpoint, final_eval, event), so a checkpoint is in the database
// as soon as it is on disk.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "protocol/transport.h"
#include "train/metrics_sink.h"

namespace egm::worker {

class ForwardingSink : public MetricsSink {
 public:
  ForwardingSink(protocol::Transport& transport, int64_t cell_id, int64_t run_id, double flush_interval_s = 0.5,
                 int coordinator_rank = protocol::kCoordinatorRank);
  void emit(const Record& record) override;
  // Sends what is buffered (nothing when empty).
  void flush();
  // The highest "step" seen in any record; -1 before the first.
  int64_t last_step() const { return last_step_; }

 private:
  protocol::Transport& transport_;
  int64_t cell_id_, run_id_;
  double flush_interval_s_;
  int coordinator_;
  std::vector<Record> buffer_;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
  int64_t last_step_ = -1;
};

}  // namespace egm::worker
