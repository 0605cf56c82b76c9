// Batches gathered from the corpus's token tensor at offsets that are a pure
// function of (seed, split, step, index): no sampler state to checkpoint.
#include "data/batch_sampler.h"

#include <torch/torch.h>

#include "util/error.h"
#include "util/seed.h"

namespace egm {
namespace {
// Stream tags keep training and evaluation draws independent.
constexpr uint64_t kTrainStream = 0x7472616e;      // "tran"
constexpr uint64_t kEvalTrainStream = 0x65767472;  // "evtr"
constexpr uint64_t kEvalValStream = 0x65767661;    // "evva"
}  // namespace

BatchSampler::BatchSampler(const Corpus& corpus, int64_t block_size, uint64_t seed)
    : corpus_(corpus), block_size_(block_size), seed_(seed) {
  EGM_REQUIRE(block_size >= 1, ConfigError, "block size must be >= 1, got {}", block_size);
  // Both splits need a whole window of block_size + 1 tokens (inputs and the next-token targets).
  for (Split s : {Split::train, Split::val}) {
    EGM_REQUIRE(corpus.tokens(s).numel() >= block_size + 1, ConfigError,
                "the {} split has {} characters, fewer than one window of block_size+1 = {}; "
                "use a smaller model.block_size or a larger corpus",
                split_name(s), corpus.tokens(s).numel(), block_size + 1);
  }
}

torch::Tensor BatchSampler::random_offsets(Split split, uint64_t stream, int64_t step, int64_t first,
                                           int64_t count) const {
  // A window starts at 0 .. numel - block_size - 1, so it ends within the split.
  const uint64_t starts = static_cast<uint64_t>(corpus_.tokens(split).numel() - block_size_);
  torch::Tensor offsets = torch::empty({count}, torch::kInt64);
  int64_t* o = offsets.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    // Hashed from the sequence's index in the whole batch (first + i), so a rank's slice draws the same
    // windows as the single-process batch would: data parallelism does not change the data.
    uint64_t h = derive_seed(seed_, stream, static_cast<uint64_t>(step), static_cast<uint64_t>(first + i));
    o[i] = static_cast<int64_t>(h % starts);  // modulo bias < starts / 2^64: negligible
  }
  return offsets;
}

Batch BatchSampler::gather(Split split, const torch::Tensor& offsets) const {
  torch::Tensor window = torch::arange(block_size_ + 1, torch::kInt64);
  // One gather for the whole batch instead of n slices.
  torch::Tensor idx = offsets.unsqueeze(1) + window.unsqueeze(0);  // [n, T+1]
  torch::Tensor tok = corpus_.tokens(split).index({idx});           // [n, T+1]
  // Targets are the inputs shifted by one token: x = tok[:, :T], y = tok[:, 1:].
  return {tok.slice(1, 0, block_size_).contiguous(), tok.slice(1, 1, block_size_ + 1).contiguous()};
}

Batch BatchSampler::train_batch(int64_t step, int64_t batch_size, int64_t first, int64_t count) const {
  // The slice of one data-parallel rank; the caller splits the batch, so a bad slice is a bug.
  EGM_CHECK(first >= 0 && count >= 1 && first + count <= batch_size, "bad batch slice [{}, {}) of {}", first,
            first + count, batch_size);
  return gather(Split::train, random_offsets(Split::train, kTrainStream, step, first, count));
}

Batch BatchSampler::eval_batch(Split split, int64_t step, int64_t batch_index, int64_t batch_size) const {
  // Eval draws use their own streams: the same step's training batch and eval batches never coincide.
  uint64_t stream = split == Split::train ? kEvalTrainStream : kEvalValStream;
  return gather(split, random_offsets(split, stream, step, batch_index * batch_size, batch_size));
}

// Non-overlapping windows over the whole split, for the full evaluation; the -1 leaves room for the last target.
int64_t BatchSampler::num_windows(Split split) const {
  return (corpus_.tokens(split).numel() - 1) / block_size_;
}

Batch BatchSampler::windows(Split split, int64_t first, int64_t count) const {
  EGM_CHECK(first >= 0 && count >= 1 && first + count <= num_windows(split), "bad window range");
  // Consecutive windows share one token: window k's last target is window k+1's first input.
  torch::Tensor offsets = torch::arange(first, first + count, torch::kInt64) * block_size_;
  return gather(split, offsets);
}

}  // namespace egm
