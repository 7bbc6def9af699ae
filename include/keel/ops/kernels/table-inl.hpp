// SPDX-License-Identifier: Apache-2.0
// Every per-target kernel of keel::ops and the function that gathers them
// into a kernel_table. This is the file a dispatch translation unit names as
// HWY_TARGET_INCLUDE; see keel/ops/kernels/dynamic_dispatch.hpp.

#if defined(KEEL_OPS_KERNELS_TABLE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_TABLE_INL_HPP_
#undef KEEL_OPS_KERNELS_TABLE_INL_HPP_
#else
#define KEEL_OPS_KERNELS_TABLE_INL_HPP_
#endif

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

#include "keel/ops/kernels/cast-inl.hpp"
#include "keel/ops/kernels/elementwise-inl.hpp"
#include "keel/ops/kernels/gemm-inl.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/kernels/pool-inl.hpp"

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {

// Returns by value: a function-local static here would be a static object
// between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE, which Highway forbids.
inline kernel_table make_kernel_table() {
  kernel_table t;
  t.target = hwy::TargetName(HWY_TARGET);
  t.fused_multiply_add = HWY_NATIVE_FMA != 0;
  t.add_f32 = &add_f32;
  t.add_i32 = &add_i32;
  t.add_i64 = &add_i64;
  t.mul_f32 = &mul_f32;
  t.mul_i32 = &mul_i32;
  t.mul_i64 = &mul_i64;
  t.addcmul_f32 = &addcmul_f32;
  t.f32_to_f16 = &f32_to_f16;
  t.f16_to_f32 = &f16_to_f32;
  t.f32_to_bf16 = pick_f32_to_bf16();
  t.bf16_to_f32 = &bf16_to_f32;
  t.adaptive_avg_pool2d_f32 = &adaptive_avg_pool2d_f32;
  t.gemm_tile_count = &gemm_tile_count;
  t.gemm_workspace_floats = &gemm_workspace_floats;
  t.gemm_f32 = &gemm_f32;
  return t;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
