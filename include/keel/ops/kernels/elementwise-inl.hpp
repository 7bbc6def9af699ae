// SPDX-License-Identifier: Apache-2.0
// Per-target row kernels for add (with alpha), mul and addcmul (with value).
// Re-included once per Highway target: no include guard, a toggle guard.

#if defined(KEEL_OPS_KERNELS_ELEMENTWISE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_ELEMENTWISE_INL_HPP_
#undef KEEL_OPS_KERNELS_ELEMENTWISE_INL_HPP_
#else
#define KEEL_OPS_KERNELS_ELEMENTWISE_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

#include "keel/ops/kernels/rounding-inl.hpp"
#include "keel/ops/kernels/stream-inl.hpp"

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// An input of a row kernel: unit stride (load) or stride zero (one value
// broadcast). Resolved at compile time so the inner loop has no branch.
template <bool Broadcast>
struct row_input;
template <>
struct row_input<false> {
  template <class D, class T>
  static HWY_INLINE hn::Vec<D> load(D d, const T* p, std::size_t i) {
    return hn::LoadU(d, p + i);
  }
};
template <>
struct row_input<true> {
  template <class D, class T>
  static HWY_INLINE hn::Vec<D> load(D d, const T* p, std::size_t) {
    return hn::Set(d, p[0]);
  }
};

// Whether this target has true masked loads and stores for lanes of T
// (AVX2's vmaskmov for 4- and 8-byte lanes, AVX-512's masks for every
// lane): masked-off lanes are neither read nor written, so a partial vector
// at the end of a buffer cannot fault. Elsewhere Highway 1.0.3 emulates
// MaskedLoad with a full load, which could read past the buffer.
template <class T>
inline constexpr bool has_masked_access =
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    sizeof(T) >= 4 || HWY_TARGET != HWY_AVX2;
#else
    false;
#endif

// An input of a partial vector: the first `count` lanes (zero elsewhere) or
// one broadcast value.
template <bool Broadcast, class D, class T>
HWY_INLINE hn::Vec<D> load_partial(D d, const T* p, std::size_t count) {
  if constexpr (Broadcast) {
    (void)count;
    return hn::Set(d, p[0]);
  } else if constexpr (has_masked_access<T>) {
    return hn::MaskedLoad(hn::FirstN(d, count), d, p);
  } else {
    HWY_ALIGN T t[HWY_MAX_BYTES / sizeof(T)] = {};
    std::memcpy(t, p, count * sizeof(T));
    return hn::Load(d, t);
  }
}

template <class D, class T>
HWY_INLINE void store_partial(hn::Vec<D> v, D d, T* p, std::size_t count) {
  if constexpr (has_masked_access<T>) {
    hn::BlendedStore(v, hn::FirstN(d, count), d, p);
  } else {
    HWY_ALIGN T t[HWY_MAX_BYTES / sizeof(T)];
    hn::Store(v, d, t);
    std::memcpy(p, t, count * sizeof(T));
  }
}

// Runs op over fewer than a vector of elements with the vector body's
// instructions (a scalar loop could round differently, e.g. FMA versus
// mul+add): masked where the target masks memory, through stack buffers
// elsewhere. A 4x2 tensor is all partial on AVX-512, so this is the tiny
// call's whole kernel.
template <bool BA, bool BB, class T, class Op>
HWY_INLINE void binary_partial(T* out, const T* a, const T* b, std::size_t count, const Op& op) {
  const hn::ScalableTag<T> d;
  store_partial(op(d, load_partial<BA>(d, a, count), load_partial<BB>(d, b, count)), d, out, count);
}

// Elements before `out` reaches vector alignment: peeling them makes every
// store aligned (and the loads too, when the inputs share out's alignment, as
// allocations of one size usually do); a 64-byte access that straddles two
// cache lines costs about twice one that does not.
template <class D, class T>
HWY_INLINE std::size_t head_count(D d, const T* out, std::size_t n) {
  const std::size_t bytes = hn::Lanes(d) * sizeof(T);
  const std::size_t mis = reinterpret_cast<std::uintptr_t>(out) % bytes;
  if (mis == 0 || mis % sizeof(T) != 0) return 0;
  return std::min(n, (bytes - mis) / sizeof(T));
}

// One vector to out + i: streaming (out + i aligned to the vector) or not.
template <bool NT, class D, class T>
HWY_INLINE void store_body(hn::Vec<D> v, D d, T* out) {
  if constexpr (NT) {
    stream_store(v, d, out);
  } else {
    hn::StoreU(v, d, out);
  }
}

// Runs op over n outputs with two inputs (stride 0 or 1 each). NT: stream
// the output (the caller checked use_stream), then fence.
template <bool BA, bool BB, bool NT, class T, class Op>
HWY_INLINE void binary_row(T* out, const T* a, const T* b, std::size_t n, const Op& op) {
  const hn::ScalableTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  if (NT || n >= 4 * lanes) {
    i = head_count(d, out, n);
    if (i != 0) binary_partial<BA, BB>(out, a, b, i, op);
  }
  // Two vectors per iteration keeps both load ports busy on L2-resident rows.
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = op(d, row_input<BA>::load(d, a, i), row_input<BB>::load(d, b, i));
    const auto x1 = op(d, row_input<BA>::load(d, a, i + lanes), row_input<BB>::load(d, b, i + lanes));
    store_body<NT>(x0, d, out + i);
    store_body<NT>(x1, d, out + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    store_body<NT>(op(d, row_input<BA>::load(d, a, i), row_input<BB>::load(d, b, i)), d, out + i);
  }
  if (i != n) binary_partial<BA, BB>(out + i, BA ? a : a + i, BB ? b : b + i, n - i, op);
  if constexpr (NT) stream_fence();
}

template <bool NT = false, class T, class Op>
HWY_INLINE void binary_row_dispatch(T* out, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb,
                                    std::size_t n, const Op& op) {
  if (sa != 0 && sb != 0) return binary_row<false, false, NT>(out, a, b, n, op);
  if (sa != 0) return binary_row<false, true, NT>(out, a, b, n, op);
  if (sb != 0) return binary_row<true, false, NT>(out, a, b, n, op);
  return binary_row<true, true, NT>(out, a, b, n, op);
}

// out = a + alpha * b, rounded once (fused) where the target has FMA, as
// ATen's vectorized add does (vec::fmadd), twice elsewhere; mul_add makes
// that the kernel's choice rather than the includer's -ffp-contract.
inline void add_f32(float* out, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb,
                          float alpha, std::size_t n) {
  const hn::ScalableTag<float> df;
  const auto valpha = hn::Set(df, alpha);
  const auto op = [valpha](auto, auto va, auto vb) HWY_ATTR { return mul_add(valpha, vb, va); };
  const std::size_t streams = 1 + (sa != 0) + (sb != 0);  // arrays the call reads or writes
  if (use_stream(out, n * sizeof(float) * streams)) {
    binary_row_dispatch<true>(out, a, sa, b, sb, n, op);
  } else {
    binary_row_dispatch(out, a, sa, b, sb, n, op);
  }
}

inline void add_i32(std::int32_t* out, const std::int32_t* a, std::ptrdiff_t sa, const std::int32_t* b,
                          std::ptrdiff_t sb, std::int32_t alpha, std::size_t n) {
  if (alpha == 1) {
    binary_row_dispatch(out, a, sa, b, sb, n, [](auto, auto va, auto vb) HWY_ATTR { return hn::Add(va, vb); });
    return;
  }
  const hn::ScalableTag<std::int32_t> di;
  const auto valpha = hn::Set(di, alpha);
  // Vector integer arithmetic wraps, as PyTorch's does.
  binary_row_dispatch(out, a, sa, b, sb, n,
                      [valpha](auto, auto va, auto vb) HWY_ATTR { return hn::Add(va, hn::Mul(vb, valpha)); });
}

inline void add_i64(std::int64_t* out, const std::int64_t* a, std::ptrdiff_t sa, const std::int64_t* b,
                          std::ptrdiff_t sb, std::int64_t alpha, std::size_t n) {
  if (alpha == 1) {
    binary_row_dispatch(out, a, sa, b, sb, n, [](auto, auto va, auto vb) HWY_ATTR { return hn::Add(va, vb); });
    return;
  }
  // Highway 1.0.3 multiplies 64-bit lanes only on AVX-512; a scaled int64 add
  // is rare enough for a scalar loop (unsigned, so overflow wraps defined).
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<std::uint64_t>(a[static_cast<std::ptrdiff_t>(i) * sa]);
    const auto y = static_cast<std::uint64_t>(b[static_cast<std::ptrdiff_t>(i) * sb]);
    out[i] = static_cast<std::int64_t>(x + y * static_cast<std::uint64_t>(alpha));
  }
}

// out = a * b: one multiply, one rounding, so nothing depends on FMA or on
// the includer's flags (there is no add to contract it with); partial
// vectors run the vector body's instructions as add's do.
inline void mul_f32(float* out, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb, std::size_t n) {
  const auto op = [](auto, auto va, auto vb) HWY_ATTR { return hn::Mul(va, vb); };
  const std::size_t streams = 1 + (sa != 0) + (sb != 0);  // arrays the call reads or writes
  if (use_stream(out, n * sizeof(float) * streams)) {
    binary_row_dispatch<true>(out, a, sa, b, sb, n, op);
  } else {
    binary_row_dispatch(out, a, sa, b, sb, n, op);
  }
}

inline void mul_i32(std::int32_t* out, const std::int32_t* a, std::ptrdiff_t sa, const std::int32_t* b,
                    std::ptrdiff_t sb, std::size_t n) {
  // Vector integer multiplication keeps the low 32 bits: it wraps, as PyTorch's does.
  binary_row_dispatch(out, a, sa, b, sb, n, [](auto, auto va, auto vb) HWY_ATTR { return hn::Mul(va, vb); });
}

inline void mul_i64(std::int64_t* out, const std::int64_t* a, std::ptrdiff_t sa, const std::int64_t* b,
                    std::ptrdiff_t sb, std::size_t n) {
  // Highway 1.0.3 multiplies 64-bit lanes only on AVX-512: a scalar loop,
  // unsigned, so overflow wraps defined.
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<std::uint64_t>(a[static_cast<std::ptrdiff_t>(i) * sa]);
    const auto y = static_cast<std::uint64_t>(b[static_cast<std::ptrdiff_t>(i) * sb]);
    out[i] = static_cast<std::int64_t>(x * y);
  }
}

// out = s + (value * t1) * t2: value * t1 rounded, then the second product
// and the add rounded once (fused) where the target has FMA, twice
// elsewhere. That is what ATen's addcmul kernel (`self + value * t1 * t2` on
// Vectorized<float>) computes as GCC builds it for PyTorch's AVX2 and AVX-512
// kernels (-ffp-contract=fast contracts the last multiply and the add);
// mul_add makes it the kernel's choice rather than the includer's flags.
template <class V>
HWY_INLINE V addcmul_vector(V s, V value, V t1, V t2) {
  return mul_add(hn::Mul(value, t1), t2, s);
}

// Fewer than a vector of elements (see binary_partial).
template <bool BS, bool B1, bool B2>
HWY_INLINE void addcmul_partial(float* out, const float* s, const float* t1, const float* t2, float value,
                                std::size_t count) {
  const hn::ScalableTag<float> d;
  const auto vv = hn::Set(d, value);
  const auto r = addcmul_vector(load_partial<BS>(d, s, count), vv, load_partial<B1>(d, t1, count),
                                load_partial<B2>(d, t2, count));
  store_partial(r, d, out, count);
}

template <bool BS, bool B1, bool B2, bool NT>
HWY_INLINE void addcmul_row(float* out, const float* s, const float* t1, const float* t2, float value,
                            std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto vv = hn::Set(d, value);
  auto op = [&](std::size_t i) HWY_ATTR {
    return addcmul_vector(row_input<BS>::load(d, s, i), vv, row_input<B1>::load(d, t1, i),
                          row_input<B2>::load(d, t2, i));
  };
  std::size_t i = 0;
  if (NT || n >= 4 * lanes) {  // peel to out's alignment, as binary_row does
    const std::size_t head = head_count(d, out, n);
    if (head != 0) addcmul_partial<BS, B1, B2>(out, s, t1, t2, value, head);
    i = head;
  }
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = op(i);
    const auto x1 = op(i + lanes);
    store_body<NT>(x0, d, out + i);
    store_body<NT>(x1, d, out + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) store_body<NT>(op(i), d, out + i);
  if (i != n) addcmul_partial<BS, B1, B2>(out + i, BS ? s : s + i, B1 ? t1 : t1 + i, B2 ? t2 : t2 + i, value, n - i);
  if constexpr (NT) stream_fence();
}

template <bool NT>
HWY_INLINE void addcmul_dispatch(float* out, const float* s, std::ptrdiff_t ss, const float* t1, std::ptrdiff_t s1,
                                 const float* t2, std::ptrdiff_t s2, float value, std::size_t n) {
  const int mask = (ss == 0 ? 4 : 0) | (s1 == 0 ? 2 : 0) | (s2 == 0 ? 1 : 0);
  switch (mask) {
    case 0: return addcmul_row<false, false, false, NT>(out, s, t1, t2, value, n);
    case 1: return addcmul_row<false, false, true, NT>(out, s, t1, t2, value, n);
    case 2: return addcmul_row<false, true, false, NT>(out, s, t1, t2, value, n);
    case 3: return addcmul_row<false, true, true, NT>(out, s, t1, t2, value, n);
    case 4: return addcmul_row<true, false, false, NT>(out, s, t1, t2, value, n);
    case 5: return addcmul_row<true, false, true, NT>(out, s, t1, t2, value, n);
    case 6: return addcmul_row<true, true, false, NT>(out, s, t1, t2, value, n);
    default: return addcmul_row<true, true, true, NT>(out, s, t1, t2, value, n);
  }
}

inline void addcmul_f32(float* out, const float* s, std::ptrdiff_t ss, const float* t1, std::ptrdiff_t s1,
                              const float* t2, std::ptrdiff_t s2, float value, std::size_t n) {
  const std::size_t streams = 1 + (ss != 0) + (s1 != 0) + (s2 != 0);  // arrays the call reads or writes
  if (use_stream(out, n * sizeof(float) * streams)) {
    addcmul_dispatch<true>(out, s, ss, t1, s1, t2, s2, value, n);
  } else {
    addcmul_dispatch<false>(out, s, ss, t1, s1, t2, s2, value, n);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
