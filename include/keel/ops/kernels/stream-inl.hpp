// SPDX-License-Identifier: Apache-2.0
// Per-target helpers for kernels that write large outputs with non-temporal
// (streaming) stores; see keel::ops::stream_store_min_bytes.
// Re-included once per Highway target: no include guard, a toggle guard.

#if defined(KEEL_OPS_KERNELS_STREAM_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_STREAM_INL_HPP_
#undef KEEL_OPS_KERNELS_STREAM_INL_HPP_
#else
#define KEEL_OPS_KERNELS_STREAM_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

#include "keel/ops/kernels/kernel_table.hpp"

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether this target has non-temporal stores at all (x86 SIMD targets;
// Highway's Stream is an ordinary store elsewhere).
inline constexpr bool has_stream_stores =
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
    true;
#else
    false;
#endif

// Whether a call that touches `bytes` should stream its output to `out`:
// large enough (stream_store_min_bytes) and `out` aligned to its element,
// so that peeling elements can reach vector alignment.
template <class T>
HWY_INLINE bool use_stream(const T* out, std::size_t bytes) {
  return has_stream_stores && bytes >= stream_store_min_bytes &&
         reinterpret_cast<std::uintptr_t>(out) % sizeof(T) == 0;
}

// Elements of T before `p` reaches a multiple of `align` bytes (p is
// element-aligned), at most n.
template <class T>
HWY_INLINE std::size_t align_head(const T* p, std::size_t align, std::size_t n) {
  const std::size_t mis = reinterpret_cast<std::uintptr_t>(p) % align;
  return mis == 0 ? 0 : std::min(n, (align - mis) / sizeof(T));
}

// A non-temporal store of a whole vector to an address aligned to its size.
// Highway 1.0.3's x86 Stream writes 16 bytes for a vector narrower than
// that, so such vectors take an ordinary aligned store instead.
template <class D>
HWY_INLINE void stream_store(hn::Vec<D> v, D d, hn::TFromD<D>* HWY_RESTRICT aligned) {
  if constexpr (has_stream_stores && hn::MaxLanes(D()) * sizeof(hn::TFromD<D>) >= 16) {
    hn::Stream(v, d, aligned);
  } else {
    hn::Store(v, d, aligned);
  }
}

// Orders a streaming kernel's stores before anything that follows the call
// (an sfence on x86): another thread may read the output once the task is
// reported complete.
HWY_INLINE void stream_fence() {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  // hwy::FlushStream(), except that HWY_DISABLE_CACHE_CONTROL cannot turn
  // it off while Stream still streams.
  _mm_sfence();
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
