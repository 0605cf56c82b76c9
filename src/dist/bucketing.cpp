// Gradient buckets: consecutive tensors of one dtype and device up to a byte
// budget, flattened into one tensor and copied back after the collective.
#include "dist/bucketing.h"

#include <torch/torch.h>

#include "util/error.h"

namespace egm::dist {

std::vector<Bucket> plan_buckets(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes) {
  EGM_CHECK(bucket_bytes > 0, "bucket size must be positive, got {} bytes", bucket_bytes);
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const torch::Tensor& t = tensors[i];
    EGM_CHECK(t.defined(), "tensor {} of the list to reduce is undefined", i);
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    // A bucket is one flat tensor, so it holds one dtype on one device; only consecutive tensors join one,
    // which keeps each bucket's order the same on every rank.
    const bool fits = !buckets.empty() && buckets.back().dtype == t.scalar_type() &&
                      buckets.back().device == t.device() && buckets.back().bytes + bytes <= bucket_bytes;
    // A tensor larger than the budget still gets a bucket of its own: buckets are never split.
    if (!fits) {
      buckets.emplace_back();
      buckets.back().dtype = t.scalar_type();
      buckets.back().device = t.device();
    }
    Bucket& b = buckets.back();
    b.indices.push_back(i);
    b.numel += t.numel();
    b.bytes += bytes;
  }
  return buckets;
}

torch::Tensor flatten(const std::vector<torch::Tensor>& tensors, const Bucket& bucket) {
  if (bucket.indices.size() == 1) {
    const torch::Tensor& t = tensors[bucket.indices[0]];
    // A single contiguous tensor is reduced in place through a view: no copy in, and none back (unflatten_into).
    return t.is_contiguous() ? t.view({-1}) : t.reshape({-1}).contiguous();
  }
  std::vector<torch::Tensor> pieces;
  pieces.reserve(bucket.indices.size());
  // cat copies, so the flat buffer is new memory and must be copied back after the collective.
  for (size_t i : bucket.indices) pieces.push_back(tensors[i].reshape({-1}));
  return torch::cat(pieces);
}

void unflatten_into(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors, const Bucket& bucket) {
  EGM_CHECK(flat.dim() == 1 && flat.numel() == bucket.numel, "flat buffer has {} elements, the bucket {}",
            flat.numel(), bucket.numel);
  // The copies into gradients (leaf tensors) must not be recorded by autograd.
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (size_t i : bucket.indices) {
    torch::Tensor& t = tensors[i];
    const int64_t n = t.numel();
    torch::Tensor piece = flat.narrow(0, offset, n);
    // Same storage: the collective already wrote into the tensor (the view case of flatten).
    if (n > 0 && piece.data_ptr() != t.data_ptr()) t.copy_(piece.view(t.sizes()));
    offset += n;
  }
}

void for_each_bucket(std::vector<torch::Tensor>& tensors, int64_t bucket_bytes,
                     const std::function<void(const Bucket&, torch::Tensor&)>& reduce) {
  // Every rank plans the same buckets from the same parameter list, so the collectives match up across ranks.
  for (const Bucket& bucket : plan_buckets(tensors, bucket_bytes)) {
    torch::Tensor flat = flatten(tensors, bucket);
    reduce(bucket, flat);
    unflatten_into(flat, tensors, bucket);
  }
}

}  // namespace egm::dist
