// SPDX-License-Identifier: Apache-2.0
// Run-time SIMD dispatch. Every translation unit may include this header for
// the declarations; exactly one per program defines
// KEEL_OPS_DISPATCH_IMPLEMENTATION before including it, and that one compiles
// every kernel once per Highway target and holds Highway's dispatch table.
//
// Why a macro: Highway's HWY_EXPORT table is a definition with internal
// linkage that must sit beside the per-target code it points to, so a header
// cannot emit it without compiling every kernel for every target in every
// translation unit (seconds each). One opted-in unit pays that once.
//
// @code
// // keel_ops_dispatch.cpp: the program's one dispatch unit
// #define KEEL_OPS_DISPATCH_IMPLEMENTATION
// #include <keel/ops/kernels/dynamic_dispatch.hpp>
// // anywhere else
// #include <keel/ops/kernels/dynamic_dispatch.hpp>
// ops::add(ops::dynamic_kernels(), self, other, 1.0f, out);
// @endcode
#pragma once

#include <cstdint>

#include "keel/ops/kernels/highway_config.hpp"  // before any Highway header: see there
#include "keel/ops/kernels/kernel_table.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief The kernels of the best Highway target this CPU supports.
 * Defined by the KEEL_OPS_DISPATCH_IMPLEMENTATION unit.
 * @note Thread-safe (chosen once); Throws: nothing.
 */
const kernel_table& dynamic_kernels() noexcept;

/**
 * @brief The kernels of one target, a single HWY_* bit as
 * hwy::SupportedAndGeneratedTargets() lists them; null when that target was
 * not compiled or this CPU lacks it. For tests and benchmarks that sweep targets.
 * @note Thread-safe; changes no global state (unlike
 * hwy::SetSupportedTargetsForTest). Throws: nothing.
 */
const kernel_table* kernels_for_target(std::int64_t target) noexcept;

} KEEL_END_NAMESPACE  // namespace keel::ops

#if defined(KEEL_OPS_DISPATCH_IMPLEMENTATION) && !defined(KEEL_OPS_DETAIL_DISPATCH_DEFINED)
#define KEEL_OPS_DETAIL_DISPATCH_DEFINED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "keel/ops/kernels/table-inl.hpp"
#include <hwy/foreach_target.h>  // re-includes table-inl.hpp once per target
#include <hwy/highway.h>

#include "keel/ops/kernels/table-inl.hpp"

#if HWY_ONCE
KEEL_BEGIN_NAMESPACE namespace ops {
namespace kernels {
HWY_EXPORT(make_kernel_table);

// HWY_DYNAMIC_DISPATCH names the table unqualified, so its callers live here.
kernel_table make_best_kernel_table() { return HWY_DYNAMIC_DISPATCH(make_kernel_table)(); }

// Null when `target` was not compiled into this unit.
kernel_table (*kernel_table_maker(std::int64_t target))() {
#if (HWY_TARGETS & (HWY_TARGETS - 1)) == 0
  return target == HWY_STATIC_TARGET ? &HWY_STATIC_DISPATCH(make_kernel_table) : nullptr;
#else
  if ((target & HWY_TARGETS) == 0) return nullptr;
  const std::int64_t mask = HWY_CHOSEN_TARGET_SHIFT(target) | HWY_CHOSEN_TARGET_MASK_SCALAR;
  const std::size_t index =
      hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<std::uint64_t>(mask & HWY_CHOSEN_TARGET_MASK_TARGETS));
  return HWY_DISPATCH_TABLE(make_kernel_table)[index];
#endif
}
}  // namespace kernels

const kernel_table& dynamic_kernels() noexcept {
  static const kernel_table table = kernels::make_best_kernel_table();
  return table;
}

const kernel_table* kernels_for_target(std::int64_t target) noexcept {
  // One table per compiled target, built on first use; the index arithmetic
  // is Highway's own ChosenTarget::GetIndex applied to a one-target mask.
  struct all_tables {
    kernel_table tables[HWY_MAX_DYNAMIC_TARGETS + 2];
    std::int64_t targets[HWY_MAX_DYNAMIC_TARGETS + 2] = {};
    all_tables() {
      std::size_t slot = 0;
      for (std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
        const auto fn = kernels::kernel_table_maker(t);
        if (fn == nullptr) continue;
        tables[slot] = fn();
        targets[slot] = t;
        ++slot;
      }
    }
  };
  static const all_tables all;
  if (target == 0) return nullptr;
  for (std::size_t i = 0; i < HWY_MAX_DYNAMIC_TARGETS + 2; ++i) {
    if (all.targets[i] == target) return &all.tables[i];
  }
  return nullptr;
}
} KEEL_END_NAMESPACE  // namespace keel::ops
#endif  // HWY_ONCE
#endif  // KEEL_OPS_DISPATCH_IMPLEMENTATION
