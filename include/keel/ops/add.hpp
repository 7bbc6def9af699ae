// SPDX-License-Identifier: Apache-2.0
// add: out = self + alpha * other (torch.add), phase one and the one-call form.
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
#include "keel/ops/result_type.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief Phase one of out = self + alpha * other (torch.add(self, other,
 * alpha=alpha, out=out)): broadcasting, out of exactly the broadcast shape;
 * out may be self or other (in place).
 *
 * Promotion (ATen's TensorIterator): the common dtype is result_type(self,
 * other); both operands are converted to it, and so is alpha
 * (alpha.to<scalar_t>(): 1.0001 is 1 for a float16 or bfloat16 add).
 * Floating common dtypes compute in float32 (opmath) and round once into the
 * common dtype, then convert to out's; int32 and int64 compute in their own
 * type, wrapping. Rounding: self + alpha * other is one fused multiply-add on
 * targets with FMA (kernel_table::fused_multiply_add), as ATen's vec::fmadd;
 * two roundings on the others; the same whatever flags the includer uses.
 * Matches PyTorch 1.13 on CPU bit for bit on FMA targets, except where it
 * computes a float16 or bfloat16 add in c10::Half / c10::BFloat16 arithmetic
 * (float16, and the bfloat16 elements past its last full vector), which
 * rounds alpha * other first when alpha is not +-1; keel rounds once
 * everywhere (tests/ops/golden/README.md).
 * Refuses: a common dtype that is bool, int8, uint8 or int16; a bool alpha;
 * a floating alpha with integral operands; an out dtype the result cannot be
 * cast to (torch.can_cast); partial overlap of out with an input.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_add(const kernel_table& k, const tensor& self, const tensor& other, const scalar& alpha,
                            const tensor& out, const prepare_options& options = {}) {
  const char* api = "keel::ops::add";
  const dtype compute = detail::check_binary_operands(api, "add", self, other, out);
  if (alpha.type() == dtype::boolean) throw_error(errc::invalid_parameter, api, "alpha is bool; a boolean alpha needs a boolean result");
  if (!is_floating(compute) && alpha.is_floating()) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"alpha is floating but the inputs are integral (", dtype_name(compute), "); alpha must be integral"});
  }
  detail::check_binary_out(api, compute, self, other, out);
  auto p = std::make_shared<detail::elementwise_plan>(op_kind::add, k, out, std::initializer_list<const tensor*>{&self, &other},
                                                      compute, options.workers);
  p->bind(alpha);
  detail::record_call(p->call, op_kind::add, self, other, alpha, out);
  return executor(std::move(p), options);
}

/** @brief prepare_add then run on the calling thread. */
inline void add(const kernel_table& k, const tensor& self, const tensor& other, const scalar& alpha, const tensor& out) {
  detail::run_now(prepare_add(k, self, other, alpha, out));
}

/**
 * @brief Operator tags for exec() and executor_cache: each knows how to
 * prepare its operator, key it, re-check what depends on another call's
 * pointers (null tensors and overlap), and bind that call's memory and
 * scalars: into a copy of a cached plan (acquire()), or, for the
 * element-wise operators, into the launch itself (exec(): nothing copied).
 */
struct add_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::add;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& other, const scalar& alpha, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(other), k.add(alpha), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& other,
                          const scalar& alpha, const tensor& out) {
    return prepare_add(k, self, other, alpha, out, o);
  }
  static void check(const tensor& self, const tensor& other, const tensor& out) {
    const char* api = "keel::ops::add";
    detail::check_present(api, self, "self");
    detail::check_present(api, other, "other");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, other, "other", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& other,
                                            const scalar& alpha, const tensor& out) {
    check(self, other, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, other);
    e.bind(alpha);
    p->call.rebind(self, other, alpha, out);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& other,
                     const scalar& alpha, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self, &other})) check(self, other, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self, &other}, &alpha);
  }
  /// @endcond
};


/**
 * @brief prepare_add on another operator layer's target (an acl::device:
 * aclnnAdd): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_add(Target& target, const tensor& self, const tensor& other, const scalar& alpha, const tensor& out,
                        const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<add_op>(target, options, self, other, alpha, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
