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

#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace keel {
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sums the window's rows into scratch with full-width vector adds (the
// input is read exactly once when windows do not overlap, so the kernel runs
// at memory speed), then sums each column window of that one row.
inline void adaptive_avg_pool2d_f32(const float* in, std::size_t h, std::size_t w, std::ptrdiff_t row_stride,
                                    float* out, std::size_t oh, std::size_t ow, float* scratch) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  for (std::size_t i = 0; i < oh; ++i) {
    const std::size_t hs = i * h / oh;
    const std::size_t he = ((i + 1) * h + oh - 1) / oh;
    const float* row = in + static_cast<std::ptrdiff_t>(hs) * row_stride;
    // Ask for the next window's rows now: the column sums walk several rows
    // at once, a pattern the hardware prefetcher picks up late.
    const std::size_t next_end = std::min(h, he + (he - hs));
    for (std::size_t r = he; r < next_end; ++r) {
      const float* p = in + static_cast<std::ptrdiff_t>(r) * row_stride;
      for (std::size_t x = 0; x < w; x += 64 / sizeof(float)) hwy::Prefetch(p + x);
    }
    auto column_sums = [&](std::size_t x) HWY_ATTR {
      auto acc = hn::LoadU(d, row + x);
      for (std::size_t r = hs + 1; r < he; ++r) {
        acc = hn::Add(acc, hn::LoadU(d, in + static_cast<std::ptrdiff_t>(r) * row_stride + x));
      }
      hn::StoreU(acc, d, scratch + x);
    };
    std::size_t x = 0;
    for (; x + lanes <= w; x += lanes) column_sums(x);
    if (x < w && w >= lanes) {
      // The tail as one more full vector that overlaps the previous one: it
      // recomputes a few sums with the same inputs in the same order, so
      // they come out identical, and no lane reads past the row.
      column_sums(w - lanes);
      x = w;
    }
    for (; x < w; ++x) {
      float acc = row[x];
      for (std::size_t r = hs + 1; r < he; ++r) acc += in[static_cast<std::ptrdiff_t>(r) * row_stride + x];
      scratch[x] = acc;
    }
    for (std::size_t j = 0; j < ow; ++j) {
      const std::size_t ws = j * w / ow;
      const std::size_t we = ((j + 1) * w + ow - 1) / ow;
      // Four partial sums: the windows are short, so one serial chain of
      // dependent adds would bound the kernel by FP add latency.
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      std::size_t c = ws;
      for (; c + 4 <= we; c += 4) {
        s0 += scratch[c];
        s1 += scratch[c + 1];
        s2 += scratch[c + 2];
        s3 += scratch[c + 3];
      }
      for (; c < we; ++c) s0 += scratch[c];
      out[i * ow + j] = ((s0 + s1) + (s2 + s3)) / static_cast<float>((he - hs) * (we - ws));
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
