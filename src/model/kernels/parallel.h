// egm's own fork-join loop for the CPU attention and dropout kernels.
//
// Why not at::parallel_for: LibTorch's PyPI build parallelises with OpenMP, and
// at::parallel_for is a header template that only runs in parallel when the
// *calling* unit is compiled with OpenMP (-fopenmp). egm is not (and Clang's
// OpenMP runtime is not the libgomp LibTorch ships), so every at::parallel_for
// in egm's kernels ran f(begin, end) on one thread whatever --threads said
// (results/BENCHMARKS.md, issue 14). This loop keeps at::parallel_for's
// contract on a small pool of std::threads: the range is split into
// min(at::get_num_threads(), ceil(n / grain)) contiguous chunks, the caller
// runs the first, and the call returns when all are done.
//
// Inside a chunk, LibTorch ops run serially (c10::ParallelGuard, as inside
// at::parallel_for) and MKL runs each call on the calling thread, so the
// per-(batch, head) matrix products do not fan out again. A call made from a
// chunk, or while another thread is using the pool, runs serially on its
// thread, as does one in a process forked after the pool started. The first
// exception thrown by a chunk is rethrown to the caller.
#pragma once

#include <cstdint>
#include <functional>

namespace egm {

void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const std::function<void(int64_t, int64_t)>& f);

// The chunks parallel_for would cut [begin, end) into with `threads` threads:
// the same split as at::parallel_for's OpenMP path.
int64_t parallel_chunks(int64_t begin, int64_t end, int64_t grain_size, int threads);

}  // namespace egm
