// SPDX-License-Identifier: Apache-2.0
// The kernel table: the SIMD kernels of one Highway target as plain function
// pointers, so operator code never includes a per-target header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::ops {

/**
 * @brief The arguments of one batched matrix product tile range:
 * out[b] = beta * self[b] + alpha * (a[b] @ bm[b]) with element strides
 * (self strides may be zero: broadcast). a is M x K, bm is K x N.
 */
struct gemm_args {
  const float* a = nullptr;
  const float* bm = nullptr;
  const float* self = nullptr;  // null when beta == 0: self is never read
  float* out = nullptr;
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
  std::int64_t a_stride[3] = {};     // batch, row, col
  std::int64_t b_stride[3] = {};
  std::int64_t self_stride[3] = {};
  std::int64_t out_stride[3] = {};
  float alpha = 1, beta = 0;
};

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

  // out = a + alpha * b
  void (*add_f32)(float* out, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb, float alpha,
                  std::size_t n) = nullptr;
  void (*add_i32)(std::int32_t* out, const std::int32_t* a, std::ptrdiff_t sa, const std::int32_t* b,
                  std::ptrdiff_t sb, std::int32_t alpha, std::size_t n) = nullptr;
  void (*add_i64)(std::int64_t* out, const std::int64_t* a, std::ptrdiff_t sa, const std::int64_t* b,
                  std::ptrdiff_t sb, std::int64_t alpha, std::size_t n) = nullptr;
  // out = s + value * t1 * t2
  void (*addcmul_f32)(float* out, const float* s, std::ptrdiff_t ss, const float* t1, std::ptrdiff_t s1,
                      const float* t2, std::ptrdiff_t s2, float value, std::size_t n) = nullptr;

  // Contiguous conversions, round to nearest even, NaN and infinities kept.
  void (*f32_to_f16)(std::uint16_t* out, const float* in, std::size_t n) = nullptr;
  void (*f16_to_f32)(float* out, const std::uint16_t* in, std::size_t n) = nullptr;
  void (*f32_to_bf16)(std::uint16_t* out, const float* in, std::size_t n) = nullptr;
  void (*bf16_to_f32)(float* out, const std::uint16_t* in, std::size_t n) = nullptr;

  // One (H, W) plane with unit column stride and the given row stride into a
  // contiguous (oh, ow) plane; scratch holds pool_row_scratch_floats(w) floats.
  void (*adaptive_avg_pool2d_f32)(const float* in, std::size_t h, std::size_t w, std::ptrdiff_t row_stride,
                                  float* out, std::size_t oh, std::size_t ow, float* scratch) = nullptr;

  // Batched GEMM over tiles [begin, end) of gemm_tile_count(args); each
  // call needs gemm_workspace_floats() floats of scratch.
  std::size_t (*gemm_tile_count)(const gemm_args& args) = nullptr;
  std::size_t (*gemm_workspace_floats)() = nullptr;
  void (*gemm_f32)(const gemm_args& args, std::size_t tile_begin, std::size_t tile_end, float* scratch) = nullptr;
};

}  // namespace keel::ops
