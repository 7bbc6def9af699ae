// SPDX-License-Identifier: Apache-2.0
// mul: out = self * other (torch.mul), phase one and the one-call form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "keel/core/error.hpp"
#include "keel/ops/detail/checks.hpp"
#include "keel/ops/detail/elementwise_plan.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/detail/run_now.hpp"
#include "keel/ops/detail/shared_plan.hpp"
#include "keel/ops/operator_layer.hpp"
#include "keel/ops/result_type.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief Phase one of out = self * other (torch.mul(self, other, out=out)):
 * broadcasting, out of exactly the broadcast shape; out may be self or
 * other (in place).
 *
 * Promotion (ATen's TensorIterator): the common dtype is result_type(self,
 * other) and both operands are converted to it. Floating common dtypes
 * compute in float32 (opmath) and round once into the common dtype, then
 * convert to out's; int32 and int64 multiply in their own type, wrapping.
 * Rounding: one multiply, so one rounding, on every target and whatever
 * flags the includer uses (there is no add to fuse it with). The product of
 * two float16 or two bfloat16 values is exact in float32, so rounding it
 * once into the half type is what PyTorch's half arithmetic gives too: bit
 * for bit with PyTorch 1.13 on CPU.
 * Refuses: a common dtype that is bool, int8, uint8 or int16 (torch.mul
 * takes them; keel's kernels do not); an out dtype the result cannot be cast
 * to (torch.can_cast); partial overlap of out with an input.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_mul(const kernel_table& k, const tensor& self, const tensor& other, const tensor& out,
                            const prepare_options& options = {}) {
  const char* api = "keel::ops::mul";
  const dtype compute = detail::check_binary_operands(api, "mul", self, other, out);
  detail::check_binary_out(api, compute, self, other, out);
  auto p = std::make_shared<detail::elementwise_plan>(op_kind::mul, k, out,
                                                      std::initializer_list<const tensor*>{&self, &other}, compute,
                                                      options.workers);
  detail::record_call(p->call, op_kind::mul, self, other, out);
  return executor(std::move(p), options);
}

/** @brief prepare_mul then run on the calling thread. */
inline void mul(const kernel_table& k, const tensor& self, const tensor& other, const tensor& out) {
  detail::run_now(prepare_mul(k, self, other, out));
}

/// @brief The tag of mul (out = self * other) for exec() and executor_cache.
struct mul_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::mul;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& other, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(other), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& other,
                          const tensor& out) {
    return prepare_mul(k, self, other, out, o);
  }
  static void check(const tensor& self, const tensor& other, const tensor& out) {
    const char* api = "keel::ops::mul";
    detail::check_present(api, self, "self");
    detail::check_present(api, other, "other");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, other, "other", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& other,
                                            const tensor& out) {
    check(self, other, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, other);
    p->call.rebind(self, other, out);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& other,
                     const tensor& out) {
    if (detail::needs_full_check(p, out, {&self, &other})) check(self, other, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self, &other}, nullptr);
  }
  /// @endcond
};

/**
 * @brief prepare_mul on another operator layer's target (an acl::device:
 * aclnnMul): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_mul(Target& target, const tensor& self, const tensor& other, const tensor& out,
                                   const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<mul_op>(target, options, self, other, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
