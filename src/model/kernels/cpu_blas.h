// Direct access to the BLAS under LibTorch, for the CPU attention kernels that
// run many small matrix products in parallel (one per batch x head), and the
// thread settings that must agree between LibTorch and the BLAS.
//
// Why: LibTorch 1.13's bmm walks the batch serially and hands each small
// product to a multi-threaded BLAS, which wastes most of the time in thread
// hand-offs; and torch::set_num_threads does not reach OpenBLAS's own pool,
// so a "1 thread" run still used every core for matrix products.
#pragma once

#include <cstdint>
#include <string>

namespace egm {

// Row-major single-precision GEMM on the calling thread:
//   C[m x n] = alpha * op(A) * op(B) + beta * C
// op(A) is m x k (A stored k x m when trans_a), op(B) is k x n; ld* are row
// strides. Uses the process's BLAS (sgemm_) when it is visible, else LibTorch.
void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Intra-op threads for LibTorch and for OpenBLAS's own pool (when present).
void set_compute_threads(int threads);

// The OpenBLAS kernel family in use ("SkylakeX", "Haswell", "Prescott", ...),
// or "" when the BLAS is not OpenBLAS.
std::string blas_core_name();

// A warning when OpenBLAS picked a kernel far below what this CPU can run
// (e.g. "Prescott" on an AVX-512 machine: an unknown CPU model under a
// hypervisor), naming the OPENBLAS_CORETYPE setting that fixes it; "" if fine.
std::string blas_kernel_warning();

// While alive, OpenBLAS runs every call on the calling thread, so that
// products issued from several LibTorch worker threads at once do not fight
// over one BLAS thread pool.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_ = 0;
};

// While alive, MKL (when it is the BLAS) runs the calling thread's products on
// that thread only (MKL_Set_Num_Threads_Local): for egm's own worker threads
// (model/parallel.h), where MKL would otherwise start a team of its own per
// thread. Does nothing under other BLAS libraries.
class ThreadLocalSingleBlas {
 public:
  ThreadLocalSingleBlas();
  ~ThreadLocalSingleBlas();
  ThreadLocalSingleBlas(const ThreadLocalSingleBlas&) = delete;
  ThreadLocalSingleBlas& operator=(const ThreadLocalSingleBlas&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace egm
