// SPDX-License-Identifier: Apache-2.0
// Baselines for ops_bench.cpp; see ops_baselines.hpp. ops_baselines_native.cpp
// compiles this file a second time, for this CPU, into baseline::native.
#include "ops_baselines.hpp"

#include <cstring>

#ifdef KEEL_BENCH_WITH_EIGEN
#ifdef KEEL_BENCH_NATIVE_BASELINES
// Both units instantiate the same Eigen templates, each for its own
// instruction set. Under one name they would be one symbol with two bodies
// (an ODR violation) and the linker would keep either, so one unit's Eigen
// could run the other's code. Renaming the namespace in this unit keeps its
// instantiations its own; Eigen/Core is header-only, so nothing links
// against the original name.
#define Eigen keel_bench_eigen_native
#endif
#include <Eigen/Core>
#endif
#if defined(KEEL_BENCH_WITH_OPENBLAS) && !defined(KEEL_BENCH_NATIVE_BASELINES)
#include <cblas.h>
#endif

#ifdef KEEL_BENCH_NATIVE_BASELINES
namespace keel_bench::baseline::native {

__attribute__((noinline)) void triad(float* a, const float* b, const float* c, float s, std::size_t begin,
                                     std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}
#else
namespace keel_bench::baseline {
#endif

__attribute__((noinline)) void add_scalar_loop(float* out, const float* a, const float* b, float alpha, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + alpha * b[i];
}

__attribute__((noinline)) void mul_scalar_loop(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

__attribute__((noinline)) void cast_f16_scalar_loop(std::uint16_t* out, const float* in, std::size_t n) {
#ifdef __FLT16_MANT_DIG__
  for (std::size_t i = 0; i < n; ++i) {
    const _Float16 h = static_cast<_Float16>(in[i]);
    std::memcpy(out + i, &h, 2);
  }
#else
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t x;
    std::memcpy(&x, in + i, 4);
    out[i] = static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);  // (a bf16 stand-in)
  }
#endif
}

#ifdef KEEL_BENCH_WITH_EIGEN
#ifndef KEEL_BENCH_NATIVE_BASELINES
bool have_eigen() { return true; }
#endif
using array_map = Eigen::Map<Eigen::ArrayXf>;
using const_map = Eigen::Map<const Eigen::ArrayXf>;
__attribute__((noinline)) void add_eigen(float* out, const float* a, const float* b, float alpha, std::size_t n) {
  const auto s = static_cast<Eigen::Index>(n);
  array_map(out, s) = const_map(a, s) + alpha * const_map(b, s);
}
__attribute__((noinline)) void mul_eigen(float* out, const float* a, const float* b, std::size_t n) {
  const auto s = static_cast<Eigen::Index>(n);
  array_map(out, s) = const_map(a, s) * const_map(b, s);
}
__attribute__((noinline)) void addcmul_eigen(float* out, const float* s, const float* t1, const float* t2, float value,
                                             std::size_t n) {
  const auto len = static_cast<Eigen::Index>(n);
  array_map(out, len) = const_map(s, len) + value * const_map(t1, len) * const_map(t2, len);
}
__attribute__((noinline)) void cast_f16_eigen(std::uint16_t* out, const float* in, std::size_t n) {
  const auto len = static_cast<Eigen::Index>(n);
  Eigen::Map<Eigen::Array<Eigen::half, Eigen::Dynamic, 1>>(reinterpret_cast<Eigen::half*>(out), len) =
      const_map(in, len).cast<Eigen::half>();
}
__attribute__((noinline)) void cast_bf16_eigen(std::uint16_t* out, const float* in, std::size_t n) {
  const auto len = static_cast<Eigen::Index>(n);
  Eigen::Map<Eigen::Array<Eigen::bfloat16, Eigen::Dynamic, 1>>(reinterpret_cast<Eigen::bfloat16*>(out), len) =
      const_map(in, len).cast<Eigen::bfloat16>();
}
#else
#ifndef KEEL_BENCH_NATIVE_BASELINES
bool have_eigen() { return false; }
#endif
void add_eigen(float*, const float*, const float*, float, std::size_t) {}
void mul_eigen(float*, const float*, const float*, std::size_t) {}
void addcmul_eigen(float*, const float*, const float*, const float*, float, std::size_t) {}
void cast_f16_eigen(std::uint16_t*, const float*, std::size_t) {}
void cast_bf16_eigen(std::uint16_t*, const float*, std::size_t) {}
#endif

#ifdef KEEL_BENCH_NATIVE_BASELINES
// (OpenBLAS chooses its kernel at run time: one copy, in the other unit.)
#elif defined(KEEL_BENCH_WITH_OPENBLAS)
bool have_openblas() { return true; }
void sgemm_batched(float* out, const float* a, const float* bm, int batch, int m, int n, int k, int threads) {
  openblas_set_num_threads(threads);
  for (int b = 0; b < batch; ++b) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a + static_cast<std::size_t>(b) * m * k, k,
                bm + static_cast<std::size_t>(b) * k * n, n, 1.0f, out + static_cast<std::size_t>(b) * m * n, n);
  }
}
const char* openblas_core() { return openblas_get_corename(); }
#else
bool have_openblas() { return false; }
void sgemm_batched(float*, const float*, const float*, int, int, int, int, int) {}
const char* openblas_core() { return ""; }
#endif

}  // namespace keel_bench::baseline or keel_bench::baseline::native
