// SPDX-License-Identifier: Apache-2.0
// Header-only kernels for the one SIMD target the compiler flags allow
// (HWY_STATIC_TARGET): no dispatch TU needed, but a default x86-64 build gets
// Highway's SCALAR target; use dynamic_dispatch.hpp for run-time selection.
#pragma once

#include "keel/ops/kernels/highway_config.hpp"  // before any Highway header: see there
#include <hwy/highway.h>

#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/kernels/table-inl.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief The kernels compiled for HWY_STATIC_TARGET in this translation unit.
 * Do not include this header in the translation unit that defines
 * KEEL_OPS_DISPATCH_IMPLEMENTATION (it compiles the same kernels again);
 * that unit offers kernels_for_target(HWY_STATIC_TARGET) instead.
 * @note Thread-safe; Throws: nothing.
 */
inline const kernel_table& static_kernels() noexcept {
  static const kernel_table table = kernels::HWY_STATIC_DISPATCH(make_kernel_table)();
  return table;
}

} KEEL_END_NAMESPACE  // namespace keel::ops
