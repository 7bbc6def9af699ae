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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

#include "keel/ops/dtype.hpp"
#include "keel/ops/kernels/stream-inl.hpp"

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

// AVX512-BF16 (vcvtne2ps2bf16) rounds to nearest even and quiets NaN
// exactly as keel does, but treats denormal inputs as zero; keel uses it on
// the AVX-512 targets when the CPU has it (Highway 1.0.3 does not know the
// extension), for blocks without denormals. GCC 10 and Clang 9 have the
// intrinsics.
#undef KEEL_OPS_DETAIL_AVX512BF16
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    ((defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define KEEL_OPS_DETAIL_AVX512BF16 1
#else
#define KEEL_OPS_DETAIL_AVX512BF16 0
#endif

#if KEEL_OPS_DETAIL_AVX512BF16 && !defined(KEEL_OPS_DETAIL_CPUID_BF16_DEFINED)
#define KEEL_OPS_DETAIL_CPUID_BF16_DEFINED
#include <cpuid.h>
#include <immintrin.h>
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::kernels::detail {
// CPUID leaf 7, sub-leaf 1, EAX bit 5. The OS saves AVX-512 state already:
// the AVX3 targets are chosen only then.
inline bool cpu_has_avx512bf16() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 1, a, b, c, d);
  return (a & (1u << 5)) != 0;
}
} KEEL_END_NAMESPACE  // namespace keel::ops::kernels::detail
#endif

HWY_BEFORE_NAMESPACE();
KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements to convert one by one before `in` reaches vector alignment, so
// that every vector load of the body is aligned: a 64-byte load that
// straddles two cache lines costs about twice one that does not, and the
// allocator hands out large buffers 16 bytes past a page boundary. Loads are
// aligned rather than stores because the input moves twice the bytes.
template <class D>
HWY_INLINE std::size_t cast_head(D d, const float* in, std::size_t n) {
  const std::size_t bytes = hn::Lanes(d) * sizeof(float);
  const std::size_t mis = reinterpret_cast<std::uintptr_t>(in) % bytes;
  if (mis == 0 || mis % sizeof(float) != 0) return 0;
  return std::min(n, (bytes - mis) / sizeof(float));
}

// NT: stream the output (the caller checked use_stream). The head then
// aligns `out` to the store instead of `in` to the load: the two cannot both
// be aligned in general, and streaming needs the store aligned.
template <bool NT>
HWY_INLINE void f32_to_f16_row(std::uint16_t* out, const float* in, std::size_t n) {
  std::size_t i = 0;
#if KEEL_OPS_DETAIL_NATIVE_F16
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  auto* o = reinterpret_cast<hwy::float16_t*>(out);
  if (NT || n >= 4 * lanes) {
    const std::size_t head = NT ? align_head(out, lanes * sizeof(std::uint16_t), n) : cast_head(df, in, n);
    for (; i < head; ++i) out[i] = float_to_half_bits(in[i]);
  }
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto lo = hn::DemoteTo(dh, hn::LoadU(df, in + i));
    const auto hi = hn::DemoteTo(dh, hn::LoadU(df, in + i + lanes));
    if constexpr (NT) {
      stream_store(lo, dh, o + i);
      stream_store(hi, dh, o + i + lanes);
    } else {
      hn::StoreU(lo, dh, o + i);
      hn::StoreU(hi, dh, o + i + lanes);
    }
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, in + i)), dh, o + i);
#endif
  for (; i < n; ++i) out[i] = float_to_half_bits(in[i]);
  if constexpr (NT) stream_fence();
}

inline void f32_to_f16(std::uint16_t* out, const float* in, std::size_t n) {
  if (KEEL_OPS_DETAIL_NATIVE_F16 && use_stream(out, n * (sizeof(float) + sizeof(std::uint16_t)))) {
    f32_to_f16_row<true>(out, in, n);
  } else {
    f32_to_f16_row<false>(out, in, n);
  }
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
// integer arithmetic instead (add 0x7FFF plus the lowest kept bit: the carry
// rounds up, ties go to the even neighbour). Denormals round like any other
// pattern (the AVX512-BF16 instruction would flush them). A NaN gets its
// quiet bit set instead of the rounding carry, which could overflow its
// payload into the sign. The bf16 bits are the upper half of each lane.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> bf16_round_bits(D df, hn::Vec<D> v) {
  (void)df;
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto rounded =
      hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
  // IsNaN is one classification (AVX-512's fpclass) rather than an AND and
  // an integer compare; it reads only the bits, never the MXCSR modes.
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Or(bits, hn::Set(du, 0x00400000u)), rounded);
}

// One vector of float32 lanes to as many bf16 lanes: the upper halves, each
// below 0x10000, so the unsigned saturating demote never saturates.
template <class D>
HWY_INLINE void bf16_store_one(D df, hn::Vec<D> v, std::uint16_t* out) {
  const hn::RebindToSigned<D> di;
  const hn::Rebind<std::uint16_t, D> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(bf16_round_bits(df, v)))), du16, out);
}

// NT: stream the output, aligned as f32_to_f16_row does.
template <bool NT>
HWY_INLINE void f32_to_bf16_row(std::uint16_t* out, const float* in, std::size_t n) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  if (NT || n >= 4 * lanes) {
    const std::size_t head = NT ? align_head(out, 2 * lanes * sizeof(std::uint16_t), n) : cast_head(df, in, n);
    for (; i < head; ++i) out[i] = float_to_bfloat16_bits(in[i]);
  }
  // Two vectors per step: ConcatOdd gathers both vectors' upper halves in
  // order with one two-table shuffle, cheaper than a shift and a pack each.
  const hn::Repartition<std::uint16_t, decltype(df)> d16;  // twice the lanes
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto lo = bf16_round_bits(df, hn::LoadU(df, in + i));
    const auto hi = bf16_round_bits(df, hn::LoadU(df, in + i + lanes));
    const auto packed = hn::ConcatOdd(d16, hn::BitCast(d16, hi), hn::BitCast(d16, lo));
    if constexpr (NT) {
      stream_store(packed, d16, out + i);
    } else {
      hn::StoreU(packed, d16, out + i);
    }
  }
#endif
  for (; i + lanes <= n; i += lanes) bf16_store_one(df, hn::LoadU(df, in + i), out + i);
  for (; i < n; ++i) out[i] = float_to_bfloat16_bits(in[i]);
  if constexpr (NT) stream_fence();
}

inline void f32_to_bf16(std::uint16_t* out, const float* in, std::size_t n) {
  if (HWY_TARGET != HWY_SCALAR && use_stream(out, n * (sizeof(float) + sizeof(std::uint16_t)))) {
    f32_to_bf16_row<true>(out, in, n);
  } else {
    f32_to_bf16_row<false>(out, in, n);
  }
}

#if KEEL_OPS_DETAIL_AVX512BF16
// The same conversion with AVX512-BF16: one instruction rounds and packs two
// vectors. A block holding a denormal (the instruction would flush it) goes
// through bf16_round_bits instead, so results match the portable kernel
// bit for bit whatever the data and the MXCSR modes.
// NT: stream the output (64-byte aligned by the head), then fence.
template <bool NT>
__attribute__((target(HWY_TARGET_STR ",avx512bf16"))) inline void f32_to_bf16_avx512bf16_row(std::uint16_t* out,
                                                                                           const float* in,
                                                                                           std::size_t n) {
  const hn::Full512<float> df;
  const hn::Repartition<std::uint16_t, decltype(df)> d16;
  constexpr std::size_t lanes = 16;
  std::size_t i = 0;
  if (NT || n >= 4 * lanes) {
    const std::size_t head = NT ? align_head(out, 64, n) : cast_head(df, in, n);
    for (; i < head; ++i) out[i] = float_to_bfloat16_bits(in[i]);
  }
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto lo = hn::LoadU(df, in + i);
    const auto hi = hn::LoadU(df, in + i + lanes);
    // fpclass 0x20: denormal (either sign).
    const __mmask16 denormal = _mm512_fpclass_ps_mask(lo.raw, 0x20) | _mm512_fpclass_ps_mask(hi.raw, 0x20);
    if (HWY_LIKELY(denormal == 0)) {
      const __m512bh packed = _mm512_cvtne2ps_pbh(hi.raw, lo.raw);
      __m512i bits;
      static_assert(sizeof(bits) == sizeof(packed), "one 512-bit vector");
      std::memcpy(&bits, &packed, sizeof(bits));
      if constexpr (NT) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i), bits);
      } else {
        _mm512_storeu_si512(out + i, bits);
      }
    } else {
      const auto packed =
          hn::ConcatOdd(d16, hn::BitCast(d16, bf16_round_bits(df, hi)), hn::BitCast(d16, bf16_round_bits(df, lo)));
      if constexpr (NT) {
        stream_store(packed, d16, out + i);
      } else {
        hn::StoreU(packed, d16, out + i);
      }
    }
  }
  for (; i + lanes <= n; i += lanes) bf16_store_one(df, hn::LoadU(df, in + i), out + i);
  for (; i < n; ++i) out[i] = float_to_bfloat16_bits(in[i]);
  if constexpr (NT) _mm_sfence();
}

__attribute__((target(HWY_TARGET_STR ",avx512bf16"))) inline void f32_to_bf16_avx512bf16(std::uint16_t* out,
                                                                                       const float* in,
                                                                                       std::size_t n) {
  if (use_stream(out, n * (sizeof(float) + sizeof(std::uint16_t)))) {
    f32_to_bf16_avx512bf16_row<true>(out, in, n);
  } else {
    f32_to_bf16_avx512bf16_row<false>(out, in, n);
  }
}
#endif

// The float32 -> bfloat16 kernel for this target on this CPU.
inline void (*pick_f32_to_bf16())(std::uint16_t*, const float*, std::size_t) {
#if KEEL_OPS_DETAIL_AVX512BF16
  if (detail::cpu_has_avx512bf16()) return &f32_to_bf16_avx512bf16;
#endif
  return &f32_to_bf16;
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
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
