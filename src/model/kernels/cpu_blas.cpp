// The BLAS beneath LibTorch found by symbol (OpenBLAS or MKL), held to one
// thread inside the kernels, and its sgemm called directly per (batch, head).
#include "model/kernels/cpu_blas.h"

#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>

namespace egm {
namespace {

// The Fortran BLAS entry point, declared as ATen declares it (no hidden length arguments).
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using CoreNameFn = char* (*)();
using LocalThreadsFn = int (*)(int);

template <typename Fn>
Fn lookup(const char* name) {
  // RTLD_DEFAULT searches every library already loaded: the BLAS LibTorch links, without naming its file.
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

struct BlasSymbols {
  SgemmFn sgemm = lookup<SgemmFn>("sgemm_");
  SetThreadsFn set_threads = lookup<SetThreadsFn>("openblas_set_num_threads");
  GetThreadsFn get_threads = lookup<GetThreadsFn>("openblas_get_num_threads");
  CoreNameFn core_name = lookup<CoreNameFn>("openblas_get_corename");
  // MKL's C entry (the lower-case symbol is the Fortran one, which takes a pointer): sets this
  // thread's thread count (0 = back to the global one) and returns the previous setting.
  LocalThreadsFn mkl_local_threads = lookup<LocalThreadsFn>("MKL_Set_Num_Threads_Local");
};

const BlasSymbols& blas() {
  // Looked up once per process (thread-safe static); a missing symbol stays null and its feature is skipped.
  static const BlasSymbols symbols;
  return symbols;
}

}  // namespace

void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // An empty C: nothing to write.
  if (m == 0 || n == 0) return;
  if (const SgemmFn sgemm = blas().sgemm) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
    const int M = static_cast<int>(n), N = static_cast<int>(m), K = static_cast<int>(k);
    const int LDA = static_cast<int>(ldb), LDB = static_cast<int>(lda), LDC = static_cast<int>(ldc);
    if (K == 0) {  // BLAS leaves C untouched for k = 0 only when beta = 1; be explicit
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      return;
    }
    sgemm(&ta, &tb, &M, &N, &K, &alpha, b, &LDA, a, &LDB, &beta, c, &LDC);
    return;
  }
  // No BLAS symbol visible (e.g. a LibTorch with a private MKL): views and addmm_.
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  auto view = [&](const float* p, int64_t rows, int64_t cols, int64_t ld, bool trans) {
    torch::Tensor t = torch::from_blob(const_cast<float*>(p), {trans ? cols : rows, trans ? rows : cols}, {ld, 1}, f32);
    return trans ? t.t() : t;
  };
  torch::Tensor C = torch::from_blob(c, {m, n}, {ldc, 1}, f32);
  if (beta == 0.0f) C.zero_();
  C.addmm_(view(a, m, k, lda, trans_a), view(b, k, n, ldb, trans_b), beta == 0.0f ? 1.0f : beta, alpha);
}

void set_compute_threads(int threads) {
  threads = std::max(1, threads);
  torch::set_num_threads(threads);
  // OpenBLAS keeps its own pool beside LibTorch's: both get the same count, or they oversubscribe the cores.
  if (blas().set_threads) blas().set_threads(threads);
}

std::string blas_core_name() {
  const CoreNameFn name = blas().core_name;
  return name ? std::string(name()) : std::string();
}

std::string blas_kernel_warning() {
  const std::string core = blas_core_name();
  // OpenBLAS's fallbacks for a CPU model it does not recognise: SSE-era kernels.
  const bool generic = core == "Prescott" || core == "Core2" || core == "Katmai" || core == "Northwood";
  if (!generic) return {};
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  const char* suggestion = __builtin_cpu_supports("avx512f")  ? "SkylakeX"
                           : __builtin_cpu_supports("avx2") ? "Haswell"
                                                             : nullptr;
  if (!suggestion) return {};
  return "OpenBLAS chose its generic '" + core + "' kernels on a CPU with " +
         (std::string(suggestion) == "SkylakeX" ? "AVX-512" : "AVX2") +
         " (an unrecognised CPU model, e.g. under a hypervisor): matrix products run several times slower. "
         "Set OPENBLAS_CORETYPE=" + suggestion + " in the environment.";
#else
  return {};
#endif
}

SingleThreadedBlas::SingleThreadedBlas() {
  const BlasSymbols& s = blas();
  if (!s.set_threads || !s.get_threads) return;
  saved_ = s.get_threads();
  // One BLAS thread inside a kernel that already runs one task per core, or each call would spawn more.
  if (saved_ > 1) s.set_threads(1);
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (saved_ > 1) blas().set_threads(saved_);
}

ThreadLocalSingleBlas::ThreadLocalSingleBlas() {
  // MKL can limit the calling thread alone, which is what a pool worker needs.
  if (const LocalThreadsFn set = blas().mkl_local_threads) saved_ = set(1);
}

ThreadLocalSingleBlas::~ThreadLocalSingleBlas() {
  if (saved_ >= 0) blas().mkl_local_threads(saved_);
}

}  // namespace egm
