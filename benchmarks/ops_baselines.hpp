// SPDX-License-Identifier: Apache-2.0
// Baselines for the ops benchmarks, built twice (see benchmarks/CMakeLists.txt):
//
// - keel_bench::baseline: built with the flags of the rest of the benchmark
//   binary (-O3 for the compiler's default target, x86-64 here), which is
//   how a framework that ships one binary for every CPU builds its own
//   loops and its Eigen. keel's kernels come from the same binary and choose
//   their SIMD target at run time; that is the comparison the 64K targets
//   make ("beats the scalar loop and Eigen").
// - keel_bench::baseline::native: the same loops and Eigen built with -O3
//   -march=native, the best plain C++ and Eigen can do on this very CPU,
//   and the STREAM triad, the bandwidth reference of the 16M and pooling
//   targets. Reported beside the others so no figure hides the strongest
//   baseline.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel_bench::baseline {

/** The obvious add(alpha) loop. */
void add_scalar_loop(float* out, const float* a, const float* b, float alpha, std::size_t n);
/** The obvious multiply loop. */
void mul_scalar_loop(float* out, const float* a, const float* b, std::size_t n);
/** The obvious f32 -> f16 loop through _Float16 where the compiler has it (RNE bit trick otherwise). */
void cast_f16_scalar_loop(std::uint16_t* out, const float* in, std::size_t n);

bool have_eigen();
void add_eigen(float* out, const float* a, const float* b, float alpha, std::size_t n);
void mul_eigen(float* out, const float* a, const float* b, std::size_t n);
void addcmul_eigen(float* out, const float* s, const float* t1, const float* t2, float value, std::size_t n);
void cast_f16_eigen(std::uint16_t* out, const float* in, std::size_t n);
void cast_bf16_eigen(std::uint16_t* out, const float* in, std::size_t n);

bool have_openblas();
/** out[b] = out[b] + a[b] @ bm[b] with OpenBLAS sgemm on `threads` threads. */
void sgemm_batched(float* out, const float* a, const float* bm, int batch, int m, int n, int k, int threads);
/** The kernel OpenBLAS chose (its core name), or "" without OpenBLAS. */
const char* openblas_core();

namespace native {

/** STREAM triad on floats, a[i] = b[i] + s * c[i], over [begin, end). */
void triad(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end);
/** As baseline::add_scalar_loop, built for this CPU. */
void add_scalar_loop(float* out, const float* a, const float* b, float alpha, std::size_t n);
/** As baseline::mul_scalar_loop, built for this CPU. */
void mul_scalar_loop(float* out, const float* a, const float* b, std::size_t n);
/** As baseline::cast_f16_scalar_loop, built for this CPU. */
void cast_f16_scalar_loop(std::uint16_t* out, const float* in, std::size_t n);
/** As the baseline:: Eigen expressions, built for this CPU. */
void add_eigen(float* out, const float* a, const float* b, float alpha, std::size_t n);
void mul_eigen(float* out, const float* a, const float* b, std::size_t n);
void addcmul_eigen(float* out, const float* s, const float* t1, const float* t2, float value, std::size_t n);
void cast_f16_eigen(std::uint16_t* out, const float* in, std::size_t n);
void cast_bf16_eigen(std::uint16_t* out, const float* in, std::size_t n);

}  // namespace native
}  // namespace keel_bench::baseline
