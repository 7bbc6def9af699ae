// SPDX-License-Identifier: Apache-2.0
// torch.result_type over keel's tensors: the common dtype every operator's
// promotion starts from.
#pragma once

#include <initializer_list>
#include <optional>

#include "keel/ops/dtype.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief torch.result_type over tensors (ATen's TensorIterator common dtype):
 * dimensioned tensors decide; zero-dim tensors count only when they are of a
 * higher category (bool < integer < floating). keel has no wrapped numbers:
 * scalar arguments (alpha, value, beta) never take part. Empty when the
 * result leaves keel's dtypes (int16, from int8 with uint8); an int16 on the
 * way is kept, so int8 and uint8 tensors with a 0-dim float32 give float32,
 * as in PyTorch.
 */
inline std::optional<dtype> result_type(std::initializer_list<const tensor*> tensors) noexcept {
  // A promotion result that may be int16 (which only int8 with uint8 makes).
  struct slot {
    bool set = false, int16 = false;
    dtype t = dtype::boolean;
    void add(dtype x) noexcept {
      if (!set) {
        set = true, t = x;
      } else if (int16) {  // int16 with bool, int8 or uint8 stays int16; wider types win
        if (x == dtype::int32 || x == dtype::int64 || is_floating(x)) int16 = false, t = x;
      } else if (auto p = promote_types(t, x)) {
        t = *p;
      } else {
        int16 = true;
      }
    }
    bool floating() const noexcept { return set && !int16 && is_floating(t); }
  };
  slot dim_result, zero_result;
  for (const tensor* t : tensors) (t->dim() == 0 ? zero_result : dim_result).add(t->type());
  slot r = dim_result.set ? dim_result : zero_result;
  // ATen's combine_categories(higher = dim, lower = zero-dim).
  if (dim_result.set && zero_result.set && !dim_result.floating()) {
    const bool dim_bool = !dim_result.int16 && dim_result.t == dtype::boolean;
    if (dim_bool || zero_result.floating()) {
      if (zero_result.int16) {
        r.add(dtype::int8), r.add(dtype::uint8);  // bool with int16: int16
      } else {
        r.add(zero_result.t);
      }
    }
  }
  if (!r.set || r.int16) return std::nullopt;
  return r.t;
}

} KEEL_END_NAMESPACE  // namespace keel::ops
