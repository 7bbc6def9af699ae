// SPDX-License-Identifier: Apache-2.0
// addcmul: out = self + value * tensor1 * tensor2 (torch.addcmul), phase one and the one-call form.
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
 * @brief Phase one of out = self + value * tensor1 * tensor2
 * (torch.addcmul): broadcasting over all three, in place allowed.
 *
 * Promotion: the common dtype is result_type(self, tensor1, tensor2), which
 * must be floating; every operand is converted to it, then computed in
 * float32; value stays float32 (ATen's value.to<float>() for the half
 * types). Rounding: value * tensor1 is rounded, then (value * tensor1) *
 * tensor2 + self is one fused multiply-add on targets with FMA, two
 * roundings elsewhere, whatever the includer's flags: what ATen's
 * `self + value * t1 * t2` gives as GCC builds PyTorch's vectorized CPU
 * kernels (-ffp-contract=fast). The result is rounded once into the common
 * dtype, then converted to out's. Matches PyTorch 1.13 on CPU bit for bit on
 * FMA targets; its float16 addcmul is not implemented there, and its mixed
 * dtype calls stop on an internal assertion (keel follows the definition:
 * operands converted to the common dtype).
 * Refuses: an integral or bool common dtype (or int16); a bool value; an out
 * dtype the result cannot be cast to; partial overlap of out with an input.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_addcmul(const kernel_table& k, const tensor& self, const tensor& tensor1, const tensor& tensor2,
                                const scalar& value, const tensor& out, const prepare_options& options = {}) {
  const char* api = "keel::ops::addcmul";
  detail::check_present(api, self, "self");
  detail::check_present(api, tensor1, "tensor1");
  detail::check_present(api, tensor2, "tensor2");
  detail::check_present(api, out, "out");
  const auto shape = detail::broadcast_shapes(api, {{&self, "self"}, {&tensor1, "tensor1"}, {&tensor2, "tensor2"}});
  detail::check_out_shape(api, out, shape, "the broadcast shape of self, tensor1 and tensor2");
  const auto rt = result_type({&self, &tensor1, &tensor2});
  if (!rt || !is_floating(*rt)) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"self, tensor1 and tensor2 promote to ", rt ? dtype_name(*rt) : "int16",
                                    "; keel's addcmul supports float32, float16 and bfloat16"});
  }
  if (value.type() == dtype::boolean) throw_error(errc::invalid_parameter, api, "value is bool; it must be a number");
  if (!can_cast(*rt, out.type())) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"result type ", dtype_name(*rt), " can't be cast to out's dtype ", dtype_name(out.type())});
  }
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", true);
  detail::check_overlap(api, out, tensor1, "tensor1", true);
  detail::check_overlap(api, out, tensor2, "tensor2", true);
  auto p = std::make_shared<detail::elementwise_plan>(
      op_kind::addcmul, k, out, std::initializer_list<const tensor*>{&self, &tensor1, &tensor2}, *rt,
      options.workers);
  p->bind(value);
  detail::record_call(p->call, op_kind::addcmul, self, tensor1, tensor2, value, out);
  return executor(std::move(p), options);
}

/** @brief prepare_addcmul then run on the calling thread. */
inline void addcmul(const kernel_table& k, const tensor& self, const tensor& t1, const tensor& t2, const scalar& value,
                    const tensor& out) {
  detail::run_now(prepare_addcmul(k, self, t1, t2, value, out));
}

/// @brief The tag of addcmul (out = self + value * t1 * t2) for exec() and executor_cache.
struct addcmul_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::addcmul;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& t1, const tensor& t2, const scalar& value, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(t1), k.add(t2), k.add(value), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& t1,
                          const tensor& t2, const scalar& value, const tensor& out) {
    return prepare_addcmul(k, self, t1, t2, value, out, o);
  }
  static void check(const tensor& self, const tensor& t1, const tensor& t2, const tensor& out) {
    const char* api = "keel::ops::addcmul";
    detail::check_present(api, self, "self");
    detail::check_present(api, t1, "tensor1");
    detail::check_present(api, t2, "tensor2");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, t1, "tensor1", true);
    detail::check_overlap(api, out, t2, "tensor2", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& t1,
                                            const tensor& t2, const scalar& value, const tensor& out) {
    check(self, t1, t2, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, t1), e.bind(3, t2);
    e.bind(value);
    p->call.rebind(self, t1, t2, value, out);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& t1,
                     const tensor& t2, const scalar& value, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self, &t1, &t2})) check(self, t1, t2, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self, &t1, &t2}, &value);
  }
  /// @endcond
};


/**
 * @brief prepare_addcmul on another operator layer's target (an acl::device:
 * aclnnAddcmul): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_addcmul(Target& target, const tensor& self, const tensor& tensor1, const tensor& tensor2, const scalar& value, const tensor& out,
                        const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<addcmul_op>(target, options, self, tensor1, tensor2, value, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
