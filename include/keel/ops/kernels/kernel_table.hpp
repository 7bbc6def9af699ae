// SPDX-License-Identifier: Apache-2.0
// The kernel table: the SIMD kernels of one Highway target as plain function
// pointers, so operator code never includes a per-target header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief The arguments of one batched matrix product tile range:
 * out[b] = beta * self[b] + alpha * (a[b] @ bm[b]) with element strides
 * (self strides may be zero: broadcast). a is M x K, bm is K x N.
 */
struct gemm_args {
  const float* a = nullptr;     ///< the left operands, batch x M x K
  const float* bm = nullptr;    ///< the right operands, batch x K x N
  const float* self = nullptr;  ///< the added term; null when beta == 0: self is never read
  float* out = nullptr;         ///< the results, batch x M x N
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
  std::int64_t a_stride[3] = {};     ///< a's strides in elements: batch, row, col
  std::int64_t b_stride[3] = {};     ///< bm's strides in elements: batch, row, col
  std::int64_t self_stride[3] = {};  ///< self's strides in elements (zero broadcasts): batch, row, col
  std::int64_t out_stride[3] = {};   ///< out's strides in elements: batch, row, col
  float alpha = 1, beta = 0;
};
/** @var gemm_args::batch
 *  @brief How many products. */
/** @var gemm_args::m
 *  @brief Rows of a and out. */
/** @var gemm_args::n
 *  @brief Columns of bm and out. */
/** @var gemm_args::k
 *  @brief Columns of a, rows of bm. */
/** @var gemm_args::alpha
 *  @brief The product's factor. */
/** @var gemm_args::beta
 *  @brief self's factor (0: self is not read). */

/**
 * @brief Bytes one call of a contiguous float32 add, addcmul or
 * float32 -> float16/bfloat16 conversion must touch (inputs read plus output
 * written; a broadcast input counts nothing) before its output is written
 * with non-temporal (streaming) stores.
 *
 * A call that large evicts its own output from the core's L2 (1-2 MiB on
 * current x86 server cores) before it finishes, so the output goes to memory
 * anyway; ordinary stores would first read every output line from DRAM
 * (read for ownership), a third more traffic for an add and half again for a
 * conversion. Smaller calls keep ordinary stores, so their output stays in
 * cache for the next operator (a 64K-element add touches 768 KiB).
 *
 * The decision is per kernel call, which is per chunk when an operation is
 * split across workers: a kernel sees only its chunk. So the element-wise
 * plan never cuts an operation of at least this many bytes into chunks
 * smaller than this: it streams however many workers share it. Operations
 * staged through small blocks (strided, or converting between types) call
 * kernels on short rows and keep ordinary stores: conservative, never wrong.
 * Streaming kernels end with a store fence (sfence), so their stores are
 * ordered before the call returns and the task is reported complete.
 */
inline constexpr std::size_t stream_store_min_bytes = std::size_t{4} << 20;

/**
 * @brief The pooling kernel's row scratch is the row width rounded up to a
 * multiple of this many floats (the widest float vector it reduces in: 2048
 * bits), so it can load whole vectors past the last column.
 */
inline constexpr std::size_t pool_row_pad_floats = 64;

/** @brief Floats of scratch adaptive_avg_pool2d_f32 needs for rows of `w` columns. */
constexpr std::size_t pool_row_scratch_floats(std::size_t w) noexcept {
  return (w + pool_row_pad_floats - 1) / pool_row_pad_floats * pool_row_pad_floats;
}

/**
 * @brief One SIMD target's kernels. Row kernels take element strides of 0
 * (broadcast) or 1 for inputs and write `n` contiguous outputs; the operator
 * layer stages anything else through small buffers. Get a table from
 * static_kernels() (keel/ops/kernels/static_dispatch.hpp) or
 * dynamic_kernels() (keel/ops/kernels/dynamic_dispatch.hpp).
 *
 * Ownership: a table of pointers to code, with static storage.
 * Thread safety: immutable; every kernel is reentrant. Exceptions: kernels never throw.
 */
struct kernel_table {
  const char* target = "";  ///< Highway's name of the target, e.g. "AVX3"
  /// Whether the kernels' multiply-adds round once: add_f32's a + alpha*b
  /// (like ATen's vec::fmadd), addcmul_f32's (value*t1)*t2 + s (like ATen's
  /// addcmul as GCC builds it), gemm_f32's accumulation and its epilogue
  /// alpha*acc + beta*self. True on targets with FMA; elsewhere each product
  /// is rounded before its add. The kernels make this choice themselves
  /// (kernels/rounding-inl.hpp): the includer's -ffp-contract, -O level and
  /// -march do not change a bit of any result.
  bool fused_multiply_add = false;

  /// out = a + alpha * b, float32, with element strides sa, sb (0 broadcasts) and contiguous out.
  void (*add_f32)(float* out, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb, float alpha,
                  std::size_t n) = nullptr;
  /// out = a + alpha * b, int32 (wrapping), strides as add_f32.
  void (*add_i32)(std::int32_t* out, const std::int32_t* a, std::ptrdiff_t sa, const std::int32_t* b,
                  std::ptrdiff_t sb, std::int32_t alpha, std::size_t n) = nullptr;
  /// out = a + alpha * b, int64 (wrapping), strides as add_f32.
  void (*add_i64)(std::int64_t* out, const std::int64_t* a, std::ptrdiff_t sa, const std::int64_t* b,
                  std::ptrdiff_t sb, std::int64_t alpha, std::size_t n) = nullptr;
  /// out = a * b, float32 (one rounding: nothing to fuse), strides as add_f32.
  void (*mul_f32)(float* out, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb,
                  std::size_t n) = nullptr;
  /// out = a * b, int32 (wrapping), strides as add_f32.
  void (*mul_i32)(std::int32_t* out, const std::int32_t* a, std::ptrdiff_t sa, const std::int32_t* b,
                  std::ptrdiff_t sb, std::size_t n) = nullptr;
  /// out = a * b, int64 (wrapping), strides as add_f32.
  void (*mul_i64)(std::int64_t* out, const std::int64_t* a, std::ptrdiff_t sa, const std::int64_t* b,
                  std::ptrdiff_t sb, std::size_t n) = nullptr;
  /// out = s + value * t1 * t2, float32, with element strides ss, s1, s2 (0 broadcasts).
  void (*addcmul_f32)(float* out, const float* s, std::ptrdiff_t ss, const float* t1, std::ptrdiff_t s1,
                      const float* t2, std::ptrdiff_t s2, float value, std::size_t n) = nullptr;

  // Contiguous conversions, round to nearest even, NaN and infinities kept.
  /// float32 to IEEE binary16 bits.
  void (*f32_to_f16)(std::uint16_t* out, const float* in, std::size_t n) = nullptr;
  /// IEEE binary16 bits to float32 (exact).
  void (*f16_to_f32)(float* out, const std::uint16_t* in, std::size_t n) = nullptr;
  /// float32 to bfloat16 bits.
  void (*f32_to_bf16)(std::uint16_t* out, const float* in, std::size_t n) = nullptr;
  /// bfloat16 bits to float32 (exact).
  void (*bf16_to_f32)(float* out, const std::uint16_t* in, std::size_t n) = nullptr;

  /// One (H, W) plane with unit column stride and the given row stride into a
  /// contiguous (oh, ow) plane; scratch holds pool_row_scratch_floats(w) floats.
  void (*adaptive_avg_pool2d_f32)(const float* in, std::size_t h, std::size_t w, std::ptrdiff_t row_stride,
                                  float* out, std::size_t oh, std::size_t ow, float* scratch) = nullptr;

  // Batched GEMM over tiles [begin, end) of gemm_tile_count(args); each
  // call needs gemm_workspace_floats() floats of scratch.
  /// How many tiles the product of @p args splits into.
  std::size_t (*gemm_tile_count)(const gemm_args& args) = nullptr;
  /// Floats of scratch one gemm_f32 call needs.
  std::size_t (*gemm_workspace_floats)() = nullptr;
  /// Computes tiles [tile_begin, tile_end) of the product, with scratch of gemm_workspace_floats() floats.
  void (*gemm_f32)(const gemm_args& args, std::size_t tile_begin, std::size_t tile_end, float* scratch) = nullptr;
};

} KEEL_END_NAMESPACE  // namespace keel::ops
