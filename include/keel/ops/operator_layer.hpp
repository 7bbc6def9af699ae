// SPDX-License-Identifier: Apache-2.0
// Which operator layer a phase-one target belongs to: a kernel table plans
// keel's host operators; a backend adds its own (acl/ops.hpp maps an
// acl::device to aclnn). prepare_*, the executor caches and exec() take any
// target this trait knows, so one generic function runs on every backend.
#pragma once

#include <type_traits>

#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/kernel_table.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief The operator layer of phase-one target @p Target (`type`), for the
 * targets that have one; specialise it beside a backend's layer. The layer
 * supplies plan_type, workspace_bytes(), launch(), prepare<Op>() and the
 * executor cache's key<Op>(), bind<Op>() and binds_at_launch<Op>.
 */
template <class Target, class = void>
struct operator_layer_for {};

/// A kernel table plans the host operators.
template <>
struct operator_layer_for<kernel_table> {
  /// The layer.
  using type = host_operators;
};

/// The layer of @p Target (cv-qualifiers ignored).
template <class Target>
using operator_layer_of_t = typename operator_layer_for<std::remove_cv_t<Target>>::type;

/// @cond
namespace detail {
template <class Target, class = void>
struct is_operator_target : std::false_type {};
template <class Target>
struct is_operator_target<Target, std::void_t<operator_layer_of_t<Target>>> : std::true_type {};
}  // namespace detail
/// @endcond

/// Whether @p Target is a phase-one target of some operator layer.
template <class Target>
inline constexpr bool is_operator_target_v = detail::is_operator_target<Target>::value;

/// The executor phase one on @p Target returns.
template <class Target>
using executor_for_t = basic_executor<operator_layer_of_t<Target>>;

/// @cond
namespace detail {
// A generic prepare_<op>(target, ...) is a candidate only for targets other
// than the kernel table (whose prepare_<op> is the host operator itself).
template <class Target>
using if_other_target_t = std::enable_if_t<
    is_operator_target_v<Target> && !std::is_same_v<std::remove_cv_t<Target>, kernel_table>, int>;
}  // namespace detail
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::ops
