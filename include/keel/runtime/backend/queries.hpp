// SPDX-License-Identifier: Apache-2.0
// Optional backend behaviour as queries with defaults: a backend states what
// differs from the default, and says nothing otherwise.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {
template <class B>
using abandon_restores_group_member = decltype(B::abandon_restores_group);
template <class B>
constexpr bool abandon_restores_group_query() {
  if constexpr (is_detected_v<abandon_restores_group_member, B>)
    return static_cast<bool>(B::abandon_restores_group);
  else
    return true;
}
template <class B>
using capture_status_call = decltype(B::capture_status(std::declval<typename B::stream_handle>()));
}  // namespace detail
/// @endcond

/**
 * @brief Whether abandoning an update (`update_abort`: `update_scope::cancel()`, an update scope left
 * without end()) leaves the task group as it was. Default true; a backend
 * whose runtime cannot cancel an update it was given declares
 * `static constexpr bool abandon_restores_group = false;`.
 */
template <class B>
inline constexpr bool abandon_restores_group_v = detail::abandon_restores_group_query<B>();

/**
 * @brief What a stream's capture status is: the backend's
 * `capture_status(h)`, or, for a backend without the capture layer, "not
 * capturing" (such a stream never captures). Throws what the backend's call throws.
 */
template <class B>
capture_info stream_capture_status(typename B::stream_handle h) {
  if constexpr (detail::is_detected_v<detail::capture_status_call, B>)
    return B::capture_status(h);
  else
    return capture_info{};
}

KEEL_END_NAMESPACE  // namespace keel
