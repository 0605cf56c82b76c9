// parallel_for on egm's own thread pool: chunks of the range run by waiting
// threads, the caller working too, and exceptions carried back to it.
#include "model/kernels/parallel.h"

#include <ATen/Parallel.h>
#include <c10/util/ParallelGuard.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "model/kernels/cpu_blas.h"

namespace egm {
namespace {

// Set while a chunk runs: a parallel_for inside it runs serially instead of waiting on the pool it occupies.
thread_local bool in_chunk = false;

int64_t divup(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One job at a time: chunks are handed out by an atomic counter; workers sleep
// on a condition variable between jobs (no spinning: LibTorch's OpenMP threads
// share the cores between kernels). A worker enters a job only under the lock
// (active_ counts those inside), and a job is set up and ended only when none
// is inside, so no worker ever sees half of one job and half of the next.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers stay parked at exit
    return *pool;
  }

  // Runs job(i) for i in [0, chunks); false (nothing run) when another thread holds the pool.
  bool try_run(int64_t chunks, const std::function<void(int64_t)>& job) {
    // A forked child has none of the parent's workers: it runs serially.
    if (getpid() != owner_) return false;
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    // chunks - 1 workers: the calling thread takes chunks itself (work() below).
    grow(static_cast<size_t>(chunks - 1));
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return active_ == 0; });
      job_ = &job;
      chunks_ = chunks;
      next_.store(0);
      remaining_ = chunks;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return remaining_ == 0 && active_ == 0; });
    // Reset only once no worker is inside: a worker that wakes late finds no chunk left and never calls it.
    job_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return true;
  }

 private:
  void grow(size_t workers) {
    while (threads_.size() < workers) threads_.emplace_back([this] { loop(); });
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        ++active_;
      }
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
      done_.notify_all();
    }
  }

  // Takes chunks until none are left.
  void work() {
    for (;;) {
      const int64_t i = next_.fetch_add(1);
      if (i >= chunks_) return;
      std::exception_ptr error;
      try {
        (*job_)(i);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && !error_) error_ = error;
      if (--remaining_ == 0) done_.notify_all();
    }
  }

  const pid_t owner_ = getpid();
  std::mutex busy_;   // held by the thread running a job
  std::mutex mutex_;  // guards everything below but next_
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int64_t remaining_ = 0;
  int active_ = 0;  // workers inside work()
  std::exception_ptr error_;
  uint64_t generation_ = 0;
};

}  // namespace

int64_t parallel_chunks(int64_t begin, int64_t end, int64_t grain_size, int threads) {
  const int64_t n = end - begin;
  if (n <= 0) return 0;
  // One chunk per thread at most, fewer when grain_size says the range is too small to split further.
  int64_t chunks = std::max<int64_t>(1, threads);
  if (grain_size > 0) chunks = std::min(chunks, divup(n, grain_size));
  return std::min(chunks, n);
}

void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const std::function<void(int64_t, int64_t)>& f) {
  if (begin >= end) return;
  const int64_t chunks = in_chunk ? 1 : parallel_chunks(begin, end, grain_size, at::get_num_threads());
  if (chunks <= 1) {
    f(begin, end);
    return;
  }
  // Rounded up, so the last chunk may be short or, with lo >= end, empty (skipped in the job).
  const int64_t size = divup(end - begin, chunks);
  const std::function<void(int64_t)> job = [&](int64_t i) {
    const int64_t lo = begin + i * size;
    if (lo >= end) return;
    in_chunk = true;
    // LibTorch ops called inside a chunk run serially: the chunks already use every core.
    c10::ParallelGuard torch_serial(true);
    ThreadLocalSingleBlas one_blas_thread;
    try {
      f(lo, std::min(end, lo + size));
    } catch (...) {
      in_chunk = false;
      throw;
    }
    in_chunk = false;
  };
  // The pool is busy (another thread's kernel) or this is a forked child: the whole range runs here, serially.
  if (!Pool::instance().try_run(chunks, job)) f(begin, end);
}

}  // namespace egm
