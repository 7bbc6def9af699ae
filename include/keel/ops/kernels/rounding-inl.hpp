// SPDX-License-Identifier: Apache-2.0
// Per-target multiply-add whose rounding is the kernel's choice, not the
// includer's compiler flags. Re-included once per Highway target: no include
// guard, a toggle guard.
//
// keel's kernels are headers compiled into the user's translation unit. With
// GCC's default -ffp-contract=fast (Clang's with -ffp-contract=fast) the
// compiler may fuse any multiply followed by an add into one FMA, Highway's
// Mul and Add included (on x86 they are plain vector arithmetic in the
// compiler's intrinsic headers), and whether it does depends on inlining and
// register pressure: the same source could round once on one path and twice
// on another, and differently under -ffp-contract=off. So every kernel
// product that feeds an add goes through mul_add() below: one rounding on
// targets with FMA (Highway's MulAdd, an FMA instruction), two elsewhere,
// with an empty asm between the multiply and the add that the compiler cannot
// see through and so cannot contract.

#if defined(KEEL_OPS_KERNELS_ROUNDING_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_ROUNDING_INL_HPP_
#undef KEEL_OPS_KERNELS_ROUNDING_INL_HPP_
#else
#define KEEL_OPS_KERNELS_ROUNDING_INL_HPP_
#endif

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// v, rounded as it is: the compiler must assume the empty asm changed it, so
// it cannot fuse the operation that produced v into the one that consumes
// it. Costs nothing but the register constraint (no instruction is emitted).
template <class V>
HWY_INLINE V rounded_barrier(V v) {
#if HWY_COMPILER_GCC  // GCC and Clang
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  asm("" : "+v"(v.raw));  // any EVEX register (zmm0-31)
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  asm("" : "+x"(v.raw));  // any SSE/AVX register
#elif HWY_ARCH_ARM && HWY_TARGET == HWY_NEON
  asm("" : "+w"(v.raw));
#else
  asm("" : "+m"(v.raw));  // EMU128 / SCALAR and other architectures: through memory
#endif
#endif
  // Other compilers (MSVC) do not contract across intrinsic calls.
  return v;
}

// m * x + a: rounded once where the target has FMA (fused_multiply_add in
// the kernel table), twice (multiply, then add) elsewhere, whatever the
// includer's -ffp-contract, -O level or -march.
template <class V>
HWY_INLINE V mul_add(V m, V x, V a) {
#if HWY_NATIVE_FMA
  return hn::MulAdd(m, x, a);
#else
  return hn::Add(rounded_barrier(hn::Mul(m, x)), rounded_barrier(a));
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
