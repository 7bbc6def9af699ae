// SPDX-License-Identifier: Apache-2.0
// What the operators' plans share beside the checks: dtype conversion of
// blocks through the kernel table, row walks, and chunk sizing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "keel/ops/dtype.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

// Contiguous SIMD conversions where the table has them, scalar otherwise.
inline void convert_block(const kernel_table& k, void* dst, dtype dt, std::ptrdiff_t ds, const void* src, dtype st,
                          std::ptrdiff_t ss, std::size_t n) noexcept {
  if (ds == 1 && ss == 1) {
    if (dt == st) {
      std::memmove(dst, src, n * element_size(dt));  // in place, dst may equal src
      return;
    }
    if (st == dtype::float32 && dt == dtype::float16) {
      return k.f32_to_f16(static_cast<std::uint16_t*>(dst), static_cast<const float*>(src), n);
    }
    if (st == dtype::float16 && dt == dtype::float32) {
      return k.f16_to_f32(static_cast<float*>(dst), static_cast<const std::uint16_t*>(src), n);
    }
    if (st == dtype::float32 && dt == dtype::bfloat16) {
      return k.f32_to_bf16(static_cast<std::uint16_t*>(dst), static_cast<const float*>(src), n);
    }
    if (st == dtype::bfloat16 && dt == dtype::float32) {
      return k.bf16_to_f32(static_cast<float*>(dst), static_cast<const std::uint16_t*>(src), n);
    }
  }
  strided_convert(dst, dt, ds, src, st, ss, n);
}

// src (type st) -> via -> dst (type dt), rounding through `via` as PyTorch
// does when it converts an operand to the common dtype before computing in
// float32 (or a float32 result into the common dtype before out's). One
// conversion when via is either end; otherwise `scratch` holds the n
// intermediate elements (2 bytes each: via is float16 or bfloat16 here).
inline void convert_through(const kernel_table& k, void* dst, dtype dt, std::ptrdiff_t ds, const void* src, dtype st,
                            std::ptrdiff_t ss, std::size_t n, dtype via, void* scratch) noexcept {
  if (via == st || via == dt) return convert_block(k, dst, dt, ds, src, st, ss, n);
  convert_block(k, scratch, via, 1, src, st, ss, n);
  convert_block(k, dst, dt, ds, scratch, via, 1, n);
}

// Calls fn(pointer to first element of the row, element stride, length)
// for every innermost row of t, in row-major order.
template <class F>
void for_each_row(const tensor& t, F&& fn) {
  if (t.numel() == 0) return;
  const std::size_t nd = t.dim();
  const std::size_t es = element_size(t.type());
  if (nd == 0) return fn(t.first(), std::ptrdiff_t{0}, std::size_t{1});
  std::int64_t idx[tensor::max_dims] = {};
  const std::int64_t rows = t.numel() / t.size(nd - 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i + 1 < nd; ++i) off += idx[i] * t.stride(i);
    fn(t.first() + off * static_cast<std::int64_t>(es), static_cast<std::ptrdiff_t>(t.stride(nd - 1)),
       static_cast<std::size_t>(t.size(nd - 1)));
    for (std::size_t i = nd - 1; i-- > 0;) {
      if (++idx[i] < t.size(i)) break;
      idx[i] = 0;
    }
  }
}

// Splits `total` items into chunks for `workers` (a few per worker, so an
// uneven worker does not hold the others back), never under `min_items`.
inline std::size_t chunk_items(std::size_t total, std::size_t workers, std::size_t min_items) noexcept {
  if (workers <= 1 || total == 0) return std::max<std::size_t>(total, 1);
  // More parts than items (also when workers * 4 would wrap): one item each.
  if (workers > total / 4) return std::max<std::size_t>(min_items, 1);
  return std::max(min_items, (total + workers * 4 - 1) / (workers * 4));
}

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
