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

#include <hwy/cache_control.h>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace keel {
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

// Up to this many output columns have their window bounds computed once per
// plane rather than once per output row: two 64-bit divisions per window
// cost more than summing it.
constexpr std::size_t max_fast_windows = 64;

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
  // of two no wider than a vector): each vector of column sums holds whole
  // windows, and log2(kw) butterfly steps (lane l adds lane l ^ dist) leave
  // each window's sum in its first lane: a few shuffles and adds per vector
  // instead of a scalar loop and a horizontal sum per window.
  constexpr std::size_t max_lanes = HWY_MAX_BYTES / sizeof(float);
  const std::size_t kw = ow != 0 && w % ow == 0 ? w / ow : 0;
  const bool butterfly = vectors != 0 && kw >= 2 && kw <= lanes && (kw & (kw - 1)) == 0;
  HWY_ALIGN std::int32_t swap_index[6][max_lanes];  // kw <= 64 lanes: at most 6 steps
  std::size_t steps = 0;
  const std::size_t per_vector = butterfly ? lanes / kw : 0;  // windows per vector
  if (butterfly) {
    for (std::size_t dist = 1; dist < kw; dist *= 2, ++steps) {
      for (std::size_t l = 0; l < lanes; ++l) swap_index[steps][l] = static_cast<std::int32_t>(l ^ dist);
    }
  }
  std::size_t col_begin[max_fast_windows], col_end[max_fast_windows];
  if (ow <= max_fast_windows) {
    for (std::size_t j = 0; j < ow; ++j) {
      col_begin[j] = j * w / ow;
      col_end[j] = ((j + 1) * w + ow - 1) / ow;
    }
  }
  for (std::size_t i = 0; i < oh; ++i) {
    const std::size_t hs = i * h / oh;
    const std::size_t he = ((i + 1) * h + oh - 1) / oh;
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
    if (butterfly) {
      // x_k is a multiple of kw (kw divides both lanes and w), so a vector
      // never splits a window; the overlapping last vector recomputes whole
      // windows with the same tree over the same inputs, so identically.
      HWY_ALIGN float reduced[max_lanes];
      const auto count = static_cast<float>(rows * kw);
      for (std::size_t k = 0; k < vectors; ++k) {
        auto t = hn::LoadU(d, scratch + x_of(k));
        for (std::size_t st = 0; st < steps; ++st) {
          t = hn::Add(t, hn::TableLookupLanes(t, hn::SetTableIndices(d, swap_index[st])));
        }
        hn::Store(t, d, reduced);
        // The first window of vector k, x_of(k) / kw without a division.
        std::size_t j = std::min(k * per_vector, ow - per_vector);
        for (std::size_t m = 0; m < lanes; m += kw) dst[j++] = reduced[m] / count;
      }
      continue;
    }
    if (ow <= max_fast_windows) {
      for (std::size_t j = 0; j < ow; ++j) {
        dst[j] = window_sum(scratch, col_begin[j], col_end[j]) / static_cast<float>(rows * (col_end[j] - col_begin[j]));
      }
      continue;
    }
    for (std::size_t j = 0; j < ow; ++j) {
      const std::size_t ws = j * w / ow;
      const std::size_t we = ((j + 1) * w + ow - 1) / ow;
      dst[j] = window_sum(scratch, ws, we) / static_cast<float>(rows * (we - ws));
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
}  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
