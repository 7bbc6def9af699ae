// SPDX-License-Identifier: Apache-2.0
// Baselines for the ops benchmarks, compiled in their own unit with -O3 and
// the build machine's full instruction set (-march=native when the compiler
// takes it), so each keel figure is compared with the best plain C++, Eigen
// and OpenBLAS can do here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel_bench::baseline {

/** STREAM triad on floats, a[i] = b[i] + s * c[i], over [begin, end). */
void triad(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end);
/** The obvious add(alpha) loop. */
void add_scalar_loop(float* out, const float* a, const float* b, float alpha, std::size_t n);
/** The obvious f32 -> f16 loop through _Float16 where the compiler has it (RNE bit trick otherwise). */
void cast_f16_scalar_loop(std::uint16_t* out, const float* in, std::size_t n);

bool have_eigen();
void add_eigen(float* out, const float* a, const float* b, float alpha, std::size_t n);
void addcmul_eigen(float* out, const float* s, const float* t1, const float* t2, float value, std::size_t n);
void cast_f16_eigen(std::uint16_t* out, const float* in, std::size_t n);
void cast_bf16_eigen(std::uint16_t* out, const float* in, std::size_t n);

bool have_openblas();
/** out[b] = out[b] + a[b] @ bm[b] with OpenBLAS sgemm on `threads` threads. */
void sgemm_batched(float* out, const float* a, const float* bm, int batch, int m, int n, int k, int threads);
/** The kernel OpenBLAS chose (its core name), or "" without OpenBLAS. */
const char* openblas_core();

}  // namespace keel_bench::baseline
