// Gradient bucketing without MPI: which tensors share a bucket (by hand from
// the byte sizes), flatten/unflatten round trips over mixed shapes, dtypes
// and layouts, and the one-call-per-bucket driver.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/bucketing.h"
#include "util/error.h"

namespace {

using egm::dist::Bucket;

std::vector<std::vector<size_t>> groups(const std::vector<Bucket>& buckets) {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets) out.push_back(b.indices);
  return out;
}

// Float tensors of the given element counts (4 bytes per element).
std::vector<torch::Tensor> floats(const std::vector<int64_t>& numels) {
  std::vector<torch::Tensor> out;
  for (int64_t n : numels) out.push_back(torch::zeros({n}, torch::kFloat));
  return out;
}

TEST(Bucketing, BucketsCloseAtTheByteCap) {
  // Bytes: 40, 40, 40, 120, 20 with a cap of 80:
  //   [0,1] = 80 (fits exactly); 2 would make 120 -> new bucket [2] = 40;
  //   3 (120) would make 160 -> new bucket, and alone it is over the cap but still one bucket;
  //   4 would make 140 -> new bucket [4].
  auto buckets = egm::dist::plan_buckets(floats({10, 10, 10, 30, 5}), 80);
  std::vector<std::vector<size_t>> expected{{0, 1}, {2}, {3}, {4}};
  EXPECT_EQ(groups(buckets), expected);
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].numel, 20);
  EXPECT_EQ(buckets[0].bytes, 80);
  EXPECT_EQ(buckets[2].numel, 30);
  EXPECT_EQ(buckets[2].bytes, 120);
}

TEST(Bucketing, OneBucketWhenEverythingFits) {
  // The tiny preset's ~30 gradient tensors of one dtype: one call, not one per tensor.
  auto buckets = egm::dist::plan_buckets(floats({64, 32, 32, 2048, 1, 0, 7}), egm::dist::kDefaultBucketBytes);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].numel, 64 + 32 + 32 + 2048 + 1 + 0 + 7);
}

TEST(Bucketing, DtypeOrDeviceChangeStartsABucket) {
  std::vector<torch::Tensor> t{torch::zeros({3}), torch::zeros({2}), torch::zeros({4}, torch::kDouble),
                               torch::zeros({1}, torch::kDouble), torch::zeros({5})};
  auto buckets = egm::dist::plan_buckets(t, 1 << 20);
  std::vector<std::vector<size_t>> expected{{0, 1}, {2, 3}, {4}};
  EXPECT_EQ(groups(buckets), expected);
  EXPECT_EQ(buckets[1].dtype, torch::kDouble);
  EXPECT_EQ(buckets[1].bytes, 5 * 8);
}

TEST(Bucketing, FlattenUnflattenRoundTripOverMixedShapes) {
  // Shapes a GPT's gradients have (matrix, vector, scalar), plus an empty one
  // and a transposed (non-contiguous) view; values 0, 1, 2, ... in order.
  torch::Tensor base_t = torch::arange(6, torch::kFloat).view({2, 3});
  std::vector<torch::Tensor> t{torch::arange(12, torch::kFloat).view({3, 4}) + 100, torch::arange(5, torch::kFloat) + 200,
                               torch::full({}, 300.0f), torch::zeros({0, 4}), base_t.t()};
  std::vector<torch::Tensor> before;
  for (auto& x : t) before.push_back(x.clone());
  const void* transposed_storage = t[4].data_ptr();

  auto buckets = egm::dist::plan_buckets(t, 1 << 20);
  ASSERT_EQ(buckets.size(), 1u);
  torch::Tensor flat = egm::dist::flatten(t, buckets[0]);
  ASSERT_EQ(flat.dim(), 1);
  ASSERT_EQ(flat.numel(), 12 + 5 + 1 + 0 + 6);
  // Row-major order of each tensor, one after the other (written out by hand).
  std::vector<float> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(100.0f + static_cast<float>(i));
  for (int i = 0; i < 5; ++i) expected.push_back(200.0f + static_cast<float>(i));
  expected.push_back(300.0f);
  // base_t = [[0,1,2],[3,4,5]]; its transpose row by row is 0,3,1,4,2,5.
  for (float v : {0.0f, 3.0f, 1.0f, 4.0f, 2.0f, 5.0f}) expected.push_back(v);
  std::vector<float> got(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  EXPECT_EQ(got, expected);

  flat.mul_(2).add_(1);
  egm::dist::unflatten_into(flat, t, buckets[0]);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].sizes(), before[i].sizes()) << i;
    EXPECT_TRUE(torch::equal(t[i], before[i] * 2 + 1)) << i;
  }
  // In place: the transposed view still aliases its base, which changed with it.
  EXPECT_EQ(t[4].data_ptr(), transposed_storage);
  EXPECT_TRUE(torch::equal(base_t, torch::arange(6, torch::kFloat).view({2, 3}) * 2 + 1));
}

TEST(Bucketing, ASingleContiguousTensorIsReducedWithoutACopy) {
  std::vector<torch::Tensor> t{torch::ones({4, 4})};
  auto buckets = egm::dist::plan_buckets(t, 1 << 20);
  torch::Tensor flat = egm::dist::flatten(t, buckets[0]);
  EXPECT_EQ(flat.data_ptr(), t[0].data_ptr());
}

TEST(Bucketing, ForEachBucketReducesEveryTensorOnceWithOneCallPerBucket) {
  std::vector<torch::Tensor> t{torch::full({10}, 1.0f), torch::full({10}, 2.0f), torch::full({3}, 3.0, torch::kDouble),
                               torch::full({2, 2}, 4.0f)};
  int calls = 0;
  // Cap 40 bytes: [0] (40), [1] (40; 0+1 would be 80), [2] (double), [3].
  egm::dist::for_each_bucket(t, 40, [&](const Bucket&, torch::Tensor& flat) {
    ++calls;
    flat.mul_(3);
  });
  EXPECT_EQ(calls, 4);
  EXPECT_TRUE(torch::equal(t[0], torch::full({10}, 3.0f)));
  EXPECT_TRUE(torch::equal(t[1], torch::full({10}, 6.0f)));
  EXPECT_TRUE(torch::equal(t[2], torch::full({3}, 9.0, torch::kDouble)));
  EXPECT_TRUE(torch::equal(t[3], torch::full({2, 2}, 12.0f)));
  // A reduction may also hand back a new buffer; it is copied into the tensors.
  egm::dist::for_each_bucket(t, 1 << 20, [&](const Bucket&, torch::Tensor& flat) { flat = flat + 1; });
  EXPECT_TRUE(torch::equal(t[0], torch::full({10}, 4.0f)));
  EXPECT_TRUE(torch::equal(t[3], torch::full({2, 2}, 13.0f)));
}

TEST(Bucketing, RefusesBadInput) {
  std::vector<torch::Tensor> undefined{torch::zeros({2}), torch::Tensor()};
  EXPECT_THROW(egm::dist::plan_buckets(undefined, 1024), egm::Error);
  EXPECT_THROW(egm::dist::plan_buckets(floats({1}), 0), egm::Error);
  std::vector<torch::Tensor> t = floats({3, 3});
  auto buckets = egm::dist::plan_buckets(t, 1024);
  EXPECT_THROW(egm::dist::unflatten_into(torch::zeros({5}), t, buckets[0]), egm::Error);
}

}  // namespace
