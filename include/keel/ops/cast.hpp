// SPDX-License-Identifier: Apache-2.0
// cast: out = self converted to out's dtype (Tensor.to), phase one and the one-call form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "keel/core/error.hpp"
#include "keel/ops/detail/checks.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/detail/run_now.hpp"
#include "keel/ops/detail/shared_plan.hpp"
#include "keel/ops/operator_layer.hpp"
#include "keel/ops/detail/elementwise_plan.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief Phase one of out = self.to(out.dtype) for any pair of keel dtypes:
 * round to nearest even into float16 and bfloat16 (NaN and infinities
 * kept), float to integer truncates toward zero (NaN gives 0 and values out
 * of range saturate, where PyTorch is undefined; uint8 wraps through int64 as
 * PyTorch), integers wrap, anything to bool is `!= 0` (NaN is true, -0 is
 * false). Shapes must be equal. Matches Tensor.to(dtype) (PyTorch 1.13 CPU)
 * bit for bit wherever C++ defines the conversion; no arithmetic, so no
 * rounding choice. Refuses: a shape mismatch; partial overlap.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_cast(const kernel_table& k, const tensor& self, const tensor& out,
                             const prepare_options& options = {}) {
  const char* api = "keel::ops::cast";
  detail::check_present(api, self, "self");
  detail::check_present(api, out, "out");
  detail::shape_buf want;
  want.n = self.dim();
  for (std::size_t i = 0; i < want.n; ++i) want.d[i] = self.size(i);
  detail::check_out_shape(api, out, want, "self's shape");
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", true);
  auto p = std::make_shared<detail::elementwise_plan>(op_kind::cast, k, out, std::initializer_list<const tensor*>{&self},
                                                      out.type(), options.workers);
  detail::record_call(p->call, op_kind::cast, self, out);
  return executor(std::move(p), options);
}

/** @brief prepare_cast then run on the calling thread. */
inline void cast(const kernel_table& k, const tensor& self, const tensor& out) { detail::run_now(prepare_cast(k, self, out)); }

/// @brief The tag of cast (out = self converted to out's dtype) for exec() and executor_cache.
struct cast_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::cast;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& out) {
    return prepare_cast(k, self, out, o);
  }
  static void check(const tensor& self, const tensor& out) {
    const char* api = "keel::ops::cast";
    detail::check_present(api, self, "self");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& out) {
    check(self, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self);
    p->call.rebind(self, out);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self})) check(self, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self}, nullptr);
  }
  /// @endcond
};

/**
 * @brief prepare_cast on another operator layer's target (an acl::device:
 * aclnnCast): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_cast(Target& target, const tensor& self, const tensor& out,
                        const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<cast_op>(target, options, self, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
