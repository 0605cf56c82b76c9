// Gradient bucketing: a model hands the communicator ~100 small gradient
// tensors per step; one collective per tensor would pay the latency ~100
// times. Consecutive tensors of one dtype and device are packed into flat
// buffers of at most `bucket_bytes` each, reduced with one call per bucket,
// and copied back. A tensor larger than the cap gets a bucket of its own.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace egm::dist {

// 25 MiB, the order of magnitude DDP-style trainers use: large enough that the
// 5M-parameter paper model (20 MB of float32 gradients) needs one call.
inline constexpr int64_t kDefaultBucketBytes = int64_t{25} << 20;

struct Bucket {
  std::vector<size_t> indices;  // positions in the tensor list, ascending and consecutive
  int64_t numel = 0;            // elements over all its tensors
  int64_t bytes = 0;
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;
};

// Groups `tensors` in order: a bucket ends where the dtype or device changes
// or where the next tensor would take it past `bucket_bytes`. Every tensor
// must be defined; bucket_bytes must be positive.
std::vector<Bucket> plan_buckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes);

// The bucket's tensors as one 1-D contiguous tensor (on their device). A
// bucket of one contiguous tensor is a view of it (no copy).
at::Tensor flatten(const std::vector<at::Tensor>& tensors, const Bucket& bucket);

// Copies `flat` (as produced by flatten) back into the bucket's tensors, in
// place; skips tensors `flat` is already a view of.
void unflatten_into(const at::Tensor& flat, std::vector<at::Tensor>& tensors, const Bucket& bucket);

// flatten -> reduce(bucket, flat) in place -> unflatten_into, bucket by bucket.
void for_each_bucket(std::vector<at::Tensor>& tensors, int64_t bucket_bytes,
                     const std::function<void(const Bucket&, at::Tensor&)>& reduce);

}  // namespace egm::dist
