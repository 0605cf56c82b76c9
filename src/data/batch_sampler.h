// Draws (input, target) windows of T+1 characters from a corpus.
//
// Window offsets are a pure function of (seed, stream, step, index) through a
// counter-based hash, not a stateful generator. So: the data order depends
// only on the run's seed (never on the variant, the thread count or the eval
// cadence); a rank of a k-way data-parallel run draws exactly its slice of the
// 1-rank global batch; and resuming needs nothing but the step.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/corpus.h"

namespace egm {

struct Batch {
  at::Tensor x;  // [n, T] int64 inputs
  at::Tensor y;  // [n, T] int64 targets (x shifted by one)
};

class BatchSampler {
 public:
  // Throws ConfigError when a split is too short for one window of T+1.
  BatchSampler(const Corpus& corpus, int64_t block_size, uint64_t seed);

  // Windows [first, first + count) of the global training batch of `step`.
  Batch train_batch(int64_t step, int64_t batch_size, int64_t first, int64_t count) const;
  Batch train_batch(int64_t step, int64_t batch_size) const { return train_batch(step, batch_size, 0, batch_size); }

  // Random batch `batch_index` of the evaluation held at `step` (paper protocol).
  Batch eval_batch(Split split, int64_t step, int64_t batch_index, int64_t batch_size) const;

  // Every non-overlapping window of a split, in order: window w starts at w*T.
  int64_t num_windows(Split split) const;
  Batch windows(Split split, int64_t first, int64_t count) const;

  int64_t block_size() const { return block_size_; }

 private:
  Batch gather(Split split, const at::Tensor& offsets) const;
  at::Tensor random_offsets(Split split, uint64_t stream, int64_t step, int64_t first, int64_t count) const;

  const Corpus& corpus_;
  int64_t block_size_;
  uint64_t seed_;
};

}  // namespace egm
