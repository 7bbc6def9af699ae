// SPDX-License-Identifier: Apache-2.0
// The one table of keel's operators. Each row names an operator (its keel
// name, which is also its header, its tag `<name>_op` and its prepare_<name>)
// and the aclnn operator that computes it on ACL. From the rows come:
// op_kind and op_name (here), the kernel kinds a launch carries
// ("keel.ops.<name>" for the host operators, launch.hpp; "aclnn<Aclnn>" on
// ACL), and the ACL bindings (acl/ops.hpp: aclnn<Aclnn>GetWorkspaceSize and
// aclnn<Aclnn> from the function table). A new operator is a row here, its
// header (plan, phase one, tag) and its kernel.
#pragma once

#include <cstdint>

/// X(name, Aclnn) for every operator, in op_kind order.
#define KEEL_OPS_OPERATORS(X)             \
  X(add, Add)                             \
  X(addcmul, Addcmul)                     \
  X(cast, Cast)                           \
  X(adaptive_avg_pool2d, AdaptiveAvgPool2d) \
  X(baddbmm, Baddbmm)                     \
  X(mul, Mul)

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/// @cond
#define KEEL_OPS_DETAIL_KIND(name, aclnn) name,
/// @endcond
/** @brief The operators keel implements (one per row of KEEL_OPS_OPERATORS). */
enum class op_kind : std::uint8_t { KEEL_OPS_OPERATORS(KEEL_OPS_DETAIL_KIND) };
#undef KEEL_OPS_DETAIL_KIND

/** @brief The operator's keel name ("add", "adaptive_avg_pool2d", ...). Throws: nothing. */
constexpr const char* op_name(op_kind op) noexcept {
  switch (op) {
#define KEEL_OPS_DETAIL_NAME(name, aclnn) \
  case op_kind::name: return #name;
    KEEL_OPS_OPERATORS(KEEL_OPS_DETAIL_NAME)
#undef KEEL_OPS_DETAIL_NAME
  }
  return "unknown";
}

/// @cond
#define KEEL_OPS_DETAIL_TAG(name, aclnn) struct name##_op;
/// @endcond
// The operators' tags for exec() and the executor caches (one per row; each
// is defined in its operator's header).
KEEL_OPS_OPERATORS(KEEL_OPS_DETAIL_TAG)
#undef KEEL_OPS_DETAIL_TAG

} KEEL_END_NAMESPACE  // namespace keel::ops
