// SPDX-License-Identifier: Apache-2.0
// Per-target contiguous conversions between float32 and the half types,
// round to nearest even, NaN and infinities kept.
// Re-included once per Highway target: no include guard, a toggle guard.

#if defined(KEEL_OPS_KERNELS_CAST_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_CAST_INL_HPP_
#undef KEEL_OPS_KERNELS_CAST_INL_HPP_
#else
#define KEEL_OPS_KERNELS_CAST_INL_HPP_
#endif

#include <cstddef>
#include <cstdint>

#include <hwy/highway.h>

#include "keel/ops/dtype.hpp"

// Highway 1.0.3 converts float16 in hardware only with F16C (x86 AVX2 and
// up) or on Arm; its emulation elsewhere truncates instead of rounding and
// turns infinity into a finite value, so those targets use keel's exact
// scalar conversion.
#undef KEEL_OPS_DETAIL_NATIVE_F16
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)) || HWY_ARCH_ARM
#define KEEL_OPS_DETAIL_NATIVE_F16 1
#else
#define KEEL_OPS_DETAIL_NATIVE_F16 0
#endif

HWY_BEFORE_NAMESPACE();
namespace keel {
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline void f32_to_f16(std::uint16_t* out, const float* in, std::size_t n) {
  std::size_t i = 0;
#if KEEL_OPS_DETAIL_NATIVE_F16
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  auto* o = reinterpret_cast<hwy::float16_t*>(out);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, in + i)), dh, o + i);
#endif
  for (; i < n; ++i) out[i] = float_to_half_bits(in[i]);
}

inline void f16_to_f32(float* out, const std::uint16_t* in, std::size_t n) {
  std::size_t i = 0;
#if KEEL_OPS_DETAIL_NATIVE_F16
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  const auto* p = reinterpret_cast<const hwy::float16_t*>(in);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, p + i)), df, out + i);
#endif
  for (; i < n; ++i) out[i] = half_bits_to_float(in[i]);
}

// Highway 1.0.3's DemoteTo(bfloat16) truncates; round to nearest even with
// integer arithmetic instead (add 0x7FFF plus the lowest kept bit), and keep
// NaN a NaN by setting its quiet bit rather than letting the carry make it
// infinite. The result is the upper half of each 32-bit lane: ConcatOdd of
// two vectors gathers those halves in order with one shuffle per output vector.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> bf16_round_bits(D df, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const hn::RebindToSigned<D> di;
  const auto rounded = hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u))));
  (void)df;
  // NaN: |bits| above the infinity pattern, as a signed compare (no float op).
  const auto is_nan = hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000));
  return hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Or(bits, hn::Set(du, 0x00400000u)), rounded);
}

inline void f32_to_bf16(std::uint16_t* out, const float* in, std::size_t n) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Repartition<std::uint16_t, decltype(df)> d16;  // twice the lanes
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto lo = bf16_round_bits(df, hn::LoadU(df, in + i));
    const auto hi = bf16_round_bits(df, hn::LoadU(df, in + i + lanes));
    hn::StoreU(hn::ConcatOdd(d16, hn::BitCast(d16, hi), hn::BitCast(d16, lo)), d16, out + i);
  }
#else
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  for (; i + lanes <= n; i += lanes) {
    const auto r = bf16_round_bits(df, hn::LoadU(df, in + i));
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(r))), du16, out + i);
  }
#endif
  for (; i < n; ++i) out[i] = float_to_bfloat16_bits(in[i]);
}

inline void bf16_to_f32(float* out, const std::uint16_t* in, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, in + i)))), df, out + i);
  }
  for (; i < n; ++i) out[i] = bfloat16_bits_to_float(in[i]);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
}  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
