// egm::parallel_for (model/kernels/parallel.h), the loop the CPU attention and dropout
// kernels run on: that it really runs chunks at the same time (a barrier that
// only two concurrent chunks can pass), covers the range once in contiguous
// chunks, runs nested calls serially, finishes in a forked child, passes
// exceptions on; and that the kernels give bit-identical results with 1 and 2
// threads.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/flash_attention_kernels.h"
#include "model/kernels/parallel.h"

namespace {

// Sets LibTorch's intra-op threads for one test and puts them back.
class Threads {
 public:
  explicit Threads(int n) : saved_(at::get_num_threads()) { at::set_num_threads(n); }
  ~Threads() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

TEST(ParallelFor, TwoChunksRunAtTheSameTime) {
  Threads two(2);
  std::mutex m;
  std::condition_variable cv;
  int started = 0;
  bool both = true;
  egm::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    std::unique_lock<std::mutex> lock(m);
    ++started;
    cv.notify_all();
    // Serially, the first chunk would wait here for a second that never starts.
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return started == 2; })) both = false;
  });
  EXPECT_TRUE(both) << "the two chunks did not run concurrently";
  EXPECT_EQ(started, 2);
}

TEST(ParallelFor, CoversTheRangeOnceInContiguousChunks) {
  Threads two(2);
  for (int64_t n : {1, 2, 3, 1000, 1001}) {
    for (int64_t grain : {1, 7, 5000}) {
      std::mutex m;
      std::vector<int> seen(static_cast<size_t>(n), 0);
      int calls = 0;
      egm::parallel_for(10, 10 + n, grain, [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(m);
        ++calls;
        for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i - 10)];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << "n " << n << " index " << i;
      EXPECT_EQ(calls, egm::parallel_chunks(10, 10 + n, grain, 2)) << "n " << n << " grain " << grain;
    }
  }
  EXPECT_EQ(egm::parallel_chunks(0, 1000, 1, 2), 2);
  EXPECT_EQ(egm::parallel_chunks(0, 1000, 600, 4), 2);
  EXPECT_EQ(egm::parallel_chunks(0, 1000, 5000, 2), 1);
  EXPECT_EQ(egm::parallel_chunks(0, 0, 1, 2), 0);
}

TEST(ParallelFor, OneThreadAndNestedCallsRunOnTheCallingThread) {
  {
    Threads one(1);
    int calls = 0;
    const auto caller = std::this_thread::get_id();
    egm::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
      ++calls;
      EXPECT_EQ(std::this_thread::get_id(), caller);
      EXPECT_EQ(e - b, 100);
    });
    EXPECT_EQ(calls, 1);
  }
  Threads two(2);
  std::mutex m;
  int inner_calls = 0;
  egm::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    const auto outer = std::this_thread::get_id();
    egm::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(m);
      ++inner_calls;
      EXPECT_EQ(std::this_thread::get_id(), outer);
      EXPECT_EQ(e - b, 100);
    });
  });
  EXPECT_EQ(inner_calls, 2);
}

TEST(ParallelFor, AnExceptionReachesTheCallerAndThePoolGoesOn) {
  Threads two(2);
  EXPECT_THROW(egm::parallel_for(0, 2, 1,
                                 [&](int64_t b, int64_t) {
                                   if (b == 1) throw std::runtime_error("chunk 1");
                                 }),
               std::runtime_error);
  int64_t sum = 0;
  std::mutex m;
  egm::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum, 4950);
}

TEST(ParallelFor, AForkedChildRunsSerially) {
  Threads two(2);
  egm::parallel_for(0, 2, 1, [](int64_t, int64_t) {});  // the parent's workers exist now
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child waiting for workers it does not have would hang: let it die instead
    int64_t sum = 0;
    egm::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    _exit(sum == 4950 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not finish (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Forward and gradients of the flash kernels (gated, with dropout and an ALiBi-like
// bias; and the fused-projection entry) with the same seed at 1 and at 2 threads.
std::vector<torch::Tensor> flash_run(int threads) {
  Threads t(threads);
  torch::manual_seed(7);
  const int64_t B = 2, H = 3, T = 33, D = 8;
  auto q = torch::randn({B, H, T, D}).requires_grad_(), k = torch::randn({B, H, T, D}).requires_grad_(),
       v = torch::randn({B, H, T, D}).requires_grad_();
  auto a = torch::randn({B, H, T}).requires_grad_(), c = torch::randn({B, H, T}).requires_grad_(),
       d = torch::randn({B, H, T}).requires_grad_();
  auto bias = torch::randn({H, T, T});
  auto qkv = torch::randn({B, T, 3 * H * D}).requires_grad_();
  auto y1 = egm::flash_causal_gated_attention(q, k, a, c, d, v, 0.35, bias, 0.2, /*training=*/true);
  auto y2 = egm::flash_causal_attention_qkv(qkv, H, 0.35, torch::Tensor(), 0.2, /*training=*/true);
  auto P = torch::softmax(egm::causal_scores(q, k, 0.35, bias), -1);
  auto y3 = egm::causal_gated_dropout_matmul(P, a, c, d, v, 0.2, /*training=*/true);
  (y1.sin().sum() + y2.cos().sum() + y3.square().sum()).backward();
  return {y1, y2, y3, q.grad(), k.grad(), v.grad(), a.grad(), c.grad(), d.grad(), qkv.grad()};
}

TEST(ParallelFor, KernelsGiveTheSameBitsAtOneAndTwoThreads) {
  const auto one = flash_run(1), two = flash_run(2);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << "tensor " << i;
}

}  // namespace
