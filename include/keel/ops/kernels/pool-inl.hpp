// SPDX-License-Identifier: Apache-2.0
// Per-target adaptive average pooling of one (H, W) plane, PyTorch's window
// bounds: rows [floor(i*H/oh), ceil((i+1)*H/oh)), columns likewise.
// Re-included once per Highway target: no include guard, a toggle guard.

#if defined(KEEL_OPS_KERNELS_POOL_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_POOL_INL_HPP_
#undef KEEL_OPS_KERNELS_POOL_INL_HPP_
#else
#define KEEL_OPS_KERNELS_POOL_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/cache_control.h>

#include <hwy/highway.h>

#include "keel/ops/kernels/kernel_table.hpp"

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Column sums of rows [hs, he) for the G (1, 2 or 4) vectors at x[0..G),
// each with its own accumulator: G independent chains of adds instead of
// one, so the loop runs at load throughput rather than add latency. Named
// accumulators, not an array: GCC 12 keeps an array of vectors indexed in a
// loop on the stack, and every add then goes through memory.
template <std::size_t G, class D>
HWY_INLINE void pool_column_sums(D d, const float* in, std::ptrdiff_t row_stride, std::size_t hs, std::size_t he,
                                 const std::size_t* x, float* scratch) {
  static_assert(G == 1 || G == 2 || G == 4, "one, two or four vectors");
  const std::size_t x0 = x[0], x1 = x[G > 1 ? 1 : 0], x2 = x[G > 2 ? 2 : 0], x3 = x[G > 2 ? 3 : 0];
  const float* row = in + static_cast<std::ptrdiff_t>(hs) * row_stride;
  auto a0 = hn::LoadU(d, row + x0);
  auto a1 = a0, a2 = a0, a3 = a0;
  if constexpr (G > 1) a1 = hn::LoadU(d, row + x1);
  if constexpr (G > 2) {
    a2 = hn::LoadU(d, row + x2);
    a3 = hn::LoadU(d, row + x3);
  }
  for (std::size_t r = hs + 1; r < he; ++r) {
    row += row_stride;
    a0 = hn::Add(a0, hn::LoadU(d, row + x0));
    if constexpr (G > 1) a1 = hn::Add(a1, hn::LoadU(d, row + x1));
    if constexpr (G > 2) {
      a2 = hn::Add(a2, hn::LoadU(d, row + x2));
      a3 = hn::Add(a3, hn::LoadU(d, row + x3));
    }
  }
  hn::StoreU(a0, d, scratch + x0);
  if constexpr (G > 1) hn::StoreU(a1, d, scratch + x1);
  if constexpr (G > 2) {
    hn::StoreU(a2, d, scratch + x2);
    hn::StoreU(a3, d, scratch + x3);
  }
}

// The sum of scratch[begin, end) with four partial sums: the windows are
// short, so one serial chain of dependent adds would bound the kernel by FP
// add latency.
HWY_INLINE float window_sum(const float* scratch, std::size_t begin, std::size_t end) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t c = begin;
  for (; c + 4 <= end; c += 4) {
    s0 += scratch[c];
    s1 += scratch[c + 1];
    s2 += scratch[c + 2];
    s3 += scratch[c + 3];
  }
  for (; c < end; ++c) s0 += scratch[c];
  return (s0 + s1) + (s2 + s3);
}

// PyTorch's window bounds along one axis of n inputs and o > 0 outputs,
// begin(i) = floor(i*n/o) and end(i) = ceil((i+1)*n/o), stepped through
// i = 0, 1, ... with one division in all: it keeps i*n and (i+1)*n as
// quotient and remainder by o. Two 64-bit divisions per window cost more
// than summing a small window, and a division per output row puts its
// latency in front of that row's loads.
class window_walk {
 public:
  window_walk(std::size_t n, std::size_t o) noexcept : o_(o), step_q_(n / o), step_r_(n % o) { find_end(); }
  std::size_t begin() const noexcept { return begin_q_; }
  std::size_t end() const noexcept { return end_q_ + (end_r_ != 0 ? 1 : 0); }
  void next() noexcept {
    begin_q_ = end_q_;
    begin_r_ = end_r_;
    find_end();
  }

 private:
  void find_end() noexcept {
    end_q_ = begin_q_ + step_q_;
    end_r_ = begin_r_ + step_r_;
    if (end_r_ >= o_) {
      end_r_ -= o_;
      ++end_q_;
    }
  }
  std::size_t o_, step_q_, step_r_;
  std::size_t begin_q_ = 0, begin_r_ = 0, end_q_ = 0, end_r_ = 0;
};

#if HWY_TARGET != HWY_SCALAR  // one-lane vectors have nothing to pair (nor ConcatEven)
// One level of the pairwise tree over two vectors that follow each other in
// the row: lane j of the result is lanes 2j and 2j + 1 of (lo, hi) added.
// ConcatEven and ConcatOdd keep the lanes in row order.
template <class D>
HWY_INLINE hn::Vec<D> add_adjacent_pairs(D d, hn::Vec<D> lo, hn::Vec<D> hi) {
  return hn::Add(hn::ConcatEven(d, hi, lo), hn::ConcatOdd(d, hi, lo));
}

// Uniform column windows of kw = 2^levels columns, kw dividing w: the
// window sums of the row of column sums in scratch by a pairwise tree, in
// place. The lanes past column w, up to the next whole vector, hold zeros
// or an earlier row's partial sums: windows of their own, never stored.
// Each level adds adjacent lanes of two vectors at once, so level l leaves
// the sums of 2^l columns; a window never mixes with its neighbours because
// it starts at a multiple of kw. This is the order the scalar tree
// ((a0+a1)+(a2+a3))+... sums in, a few vector operations per vector of the
// row where a horizontal sum per window took a shuffle chain and a scalar
// division each. Then one vector division per vector of means.
template <class D>
HWY_INLINE void pool_uniform_windows(D d, float* scratch, std::size_t w, std::size_t levels, float count,
                                     float* out, std::size_t ow) {
  const std::size_t lanes = hn::Lanes(d);
  std::size_t vectors = (w + lanes - 1) / lanes;
  const auto zero = hn::Zero(d);
  for (std::size_t level = 0; level < levels; ++level) {
    std::size_t j = 0;
    for (; 2 * j + 1 < vectors; ++j) {
      const auto lo = hn::LoadU(d, scratch + 2 * j * lanes);
      const auto hi = hn::LoadU(d, scratch + (2 * j + 1) * lanes);
      hn::StoreU(add_adjacent_pairs(d, lo, hi), d, scratch + j * lanes);
    }
    if (2 * j < vectors) {  // an odd vector out pairs with zeros
      hn::StoreU(add_adjacent_pairs(d, hn::LoadU(d, scratch + 2 * j * lanes), zero), d, scratch + j * lanes);
      ++j;
    }
    vectors = j;
  }
  const auto divisor = hn::Set(d, count);
  std::size_t o = 0;
  for (; o + lanes <= ow; o += lanes) hn::StoreU(hn::Div(hn::LoadU(d, scratch + o), divisor), d, out + o);
  if (o < ow) {  // the last means: a whole vector into a buffer, as out ends at ow
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(hn::Div(hn::LoadU(d, scratch + o), divisor), d, tail);
    for (std::size_t m = 0; o < ow; ++o, ++m) out[o] = tail[m];
  }
}
#endif

#if HWY_TARGET != HWY_SCALAR && !HWY_MEM_OPS_MIGHT_FAULT
// A small plane with uniform windows, entirely in registers: rows of at most
// NV vectors (ResNet's 56, 28 and 14 columns on AVX-512), kw = 2^levels
// columns per window. Each output row's column sums stay in NV accumulators,
// the last loaded with a mask (a masked load reads only its lanes on this
// target, so no overlapping vector and no read past the row), then the same
// pairwise tree as pool_uniform_windows, and masked stores of the means.
// Per output row that is a few dozen instructions besides the loads: the
// generic path's scratch round trip and per-row bookkeeping made its loads
// run behind, at 0.75-0.85 of a plain read of the same bytes.
template <std::size_t NV, class D>
HWY_INLINE void pool_plane_in_registers(D d, const float* in, std::size_t h, std::size_t w,
                                        std::ptrdiff_t row_stride, float* out, std::size_t oh, std::size_t ow,
                                        std::size_t levels) {
  static_assert(NV >= 1 && NV <= 4, "one to four vectors per row");
  using V = hn::Vec<D>;
  const std::size_t lanes = hn::Lanes(d);
  const auto last = hn::FirstN(d, w - (NV - 1) * lanes);
  const auto zero = hn::Zero(d);
  auto load = [&](const float* row, std::size_t k) HWY_ATTR {
    return k + 1 < NV ? hn::LoadU(d, row + k * lanes) : hn::MaskedLoad(last, d, row + k * lanes);
  };
  window_walk row_windows(h, oh);
  for (std::size_t i = 0; i < oh; ++i, row_windows.next()) {
    const std::size_t hs = row_windows.begin(), he = row_windows.end();
    const float* row = in + static_cast<std::ptrdiff_t>(hs) * row_stride;
    V a0 = load(row, 0), a1 = zero, a2 = zero, a3 = zero;
    if constexpr (NV > 1) a1 = load(row, 1);
    if constexpr (NV > 2) a2 = load(row, 2);
    if constexpr (NV > 3) a3 = load(row, 3);
    for (std::size_t r = hs + 1; r < he; ++r) {
      row += row_stride;
      a0 = hn::Add(a0, load(row, 0));
      if constexpr (NV > 1) a1 = hn::Add(a1, load(row, 1));
      if constexpr (NV > 2) a2 = hn::Add(a2, load(row, 2));
      if constexpr (NV > 3) a3 = hn::Add(a3, load(row, 3));
    }
    // The tree: `count` vectors hold the row's sums of 2^level columns in
    // order; a level pairs them (an odd one out with zeros).
    std::size_t count = NV;
    for (std::size_t level = 0; level < levels; ++level) {
      if (count > 2) {
        a0 = add_adjacent_pairs(d, a0, a1);
        a1 = add_adjacent_pairs(d, a2, a3);  // a3 is zero when count is 3
        count = 2;
      } else if (count == 2) {
        a0 = add_adjacent_pairs(d, a0, a1);
        count = 1;
      } else {
        a0 = add_adjacent_pairs(d, a0, zero);
      }
    }
    const auto divisor = hn::Set(d, static_cast<float>((he - hs) << levels));
    float* dst = out + i * ow;
    if (ow <= lanes) {
      hn::BlendedStore(hn::Div(a0, divisor), hn::FirstN(d, ow), d, dst);
    } else {  // ow <= 2 * lanes: two vectors remain
      hn::StoreU(hn::Div(a0, divisor), d, dst);
      hn::BlendedStore(hn::Div(a1, divisor), hn::FirstN(d, ow - lanes), d, dst + lanes);
    }
  }
}
#endif

// Sums the window's rows into scratch with full-width vector adds (the
// input is read exactly once when windows do not overlap, so the kernel runs
// at memory speed), then sums each column window of that one row.
inline void adaptive_avg_pool2d_f32(const float* in, std::size_t h, std::size_t w, std::ptrdiff_t row_stride,
                                    float* out, std::size_t oh, std::size_t ow, float* scratch) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  // Vector k covers columns [x_k, x_k + lanes), x_k = min(k * lanes, w -
  // lanes): the last one overlaps the one before when lanes does not divide
  // w, recomputing a few sums with the same inputs in the same order (so
  // they come out identical) without reading past the row.
  const std::size_t vectors = w >= lanes ? (w + lanes - 1) / lanes : 0;
  auto x_of = [&](std::size_t k) { return std::min(k * lanes, w - lanes); };
  // Uniform column windows (w a whole number of windows of width kw, a power
  // of two): pool_uniform_windows reduces the row of column sums in whole
  // vectors. scratch holds pool_row_scratch_floats(w) floats, so the vectors
  // past column w stay inside it when a vector is at most that wide; they
  // are zeroed once here (the column sums write only [0, w)).
  const std::size_t kw = ow != 0 && w % ow == 0 ? w / ow : 0;
  const bool uniform = HWY_TARGET != HWY_SCALAR && lanes >= 2 && lanes <= pool_row_pad_floats && kw >= 2 &&
                       (kw & (kw - 1)) == 0;
  std::size_t levels = 0;
  if (uniform) {
    while ((std::size_t{1} << levels) < kw) ++levels;
    const std::size_t whole_vectors = (w + lanes - 1) / lanes;  // the row, padded to whole vectors
#if HWY_TARGET != HWY_SCALAR && !HWY_MEM_OPS_MIGHT_FAULT
    switch (whole_vectors) {
      case 1: return pool_plane_in_registers<1>(d, in, h, w, row_stride, out, oh, ow, levels);
      case 2: return pool_plane_in_registers<2>(d, in, h, w, row_stride, out, oh, ow, levels);
      case 3: return pool_plane_in_registers<3>(d, in, h, w, row_stride, out, oh, ow, levels);
      case 4: return pool_plane_in_registers<4>(d, in, h, w, row_stride, out, oh, ow, levels);
      default: break;
    }
#endif
    for (std::size_t c = w; c < whole_vectors * lanes; ++c) scratch[c] = 0.0f;
  }
  window_walk row_windows(h, oh);
  const window_walk first_col_window(w, ow);  // copied per row: no division there
  for (std::size_t i = 0; i < oh; ++i, row_windows.next()) {
    const std::size_t hs = row_windows.begin();
    const std::size_t he = row_windows.end();
    const float* row = in + static_cast<std::ptrdiff_t>(hs) * row_stride;
    // One stream of loads gets few lines in flight from the hardware
    // prefetcher alone; ask for the lines 8 KB ahead of each row read (as
    // addresses: they may lie past the plane, where a prefetch is harmless).
    for (std::size_t r = hs; r < he; ++r) {
      const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(in + static_cast<std::ptrdiff_t>(r) * row_stride) + 8192;
      for (std::size_t x = 0; x < w * sizeof(float); x += 64) hwy::Prefetch(reinterpret_cast<const void*>(p + x));
    }
    std::size_t k = 0;
    for (; k + 4 <= vectors; k += 4) {
      const std::size_t x[4] = {x_of(k), x_of(k + 1), x_of(k + 2), x_of(k + 3)};
      pool_column_sums<4>(d, in, row_stride, hs, he, x, scratch);
    }
    for (; k + 2 <= vectors; k += 2) {
      const std::size_t x[2] = {x_of(k), x_of(k + 1)};
      pool_column_sums<2>(d, in, row_stride, hs, he, x, scratch);
    }
    for (; k < vectors; ++k) {
      const std::size_t x[1] = {x_of(k)};
      pool_column_sums<1>(d, in, row_stride, hs, he, x, scratch);
    }
    if (vectors == 0) {  // a row narrower than one vector
      for (std::size_t x = 0; x < w; ++x) {
        float acc = row[x];
        for (std::size_t r = hs + 1; r < he; ++r) acc += in[static_cast<std::ptrdiff_t>(r) * row_stride + x];
        scratch[x] = acc;
      }
    }
    float* dst = out + i * ow;
    const std::size_t rows = he - hs;
#if HWY_TARGET != HWY_SCALAR
    if (uniform) {
      pool_uniform_windows(d, scratch, w, levels, static_cast<float>(rows * kw), dst, ow);
      continue;
    }
#endif
    window_walk col_windows = first_col_window;
    for (std::size_t j = 0; j < ow; ++j, col_windows.next()) {
      const std::size_t ws = col_windows.begin(), we = col_windows.end();
      dst[j] = window_sum(scratch, ws, we) / static_cast<float>(rows * (we - ws));
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
