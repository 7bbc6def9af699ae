// SPDX-License-Identifier: Apache-2.0
// The task-group layer of the backend requirement: groups marked during
// capture and updated later on another stream. Builds on the capture layer.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/capture.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::task_group_layer {
template <class B> using group_handle = typename B::group_handle;
template <class B> using s = typename B::stream_handle;
template <class B> using g = typename B::group_handle;

template <class B> using group_begin = decltype(B::group_begin(std::declval<s<B>>()));
template <class B> using group_end = decltype(B::group_end(std::declval<s<B>>()));
template <class B> using group_abort = std::enable_if_t<noexcept(B::group_abort(std::declval<s<B>>()))>;
template <class B> using destroy_group = std::enable_if_t<noexcept(B::destroy_group(std::declval<g<B>>()))>;
template <class B> using group_size = decltype(B::group_size(std::declval<g<B>>()));
template <class B> using group_model_alive = decltype(B::group_model_alive(std::declval<g<B>>()));
template <class B> using update_begin = decltype(B::update_begin(std::declval<s<B>>(), std::declval<g<B>>()));
template <class B> using update_end = decltype(B::update_end(std::declval<s<B>>()));
template <class B> using update_abort = std::enable_if_t<noexcept(B::update_abort(std::declval<s<B>>()))>;

template <class B>
struct status {
  using handle = detected_or_none_t<group_handle, B>;
  static constexpr bool has_group_handle = is_native_handle_v<handle>;
  static constexpr bool types = capture_layer::status<B>::types && has_group_handle;
  static constexpr bool calls = is_detected_v<group_begin, B> && is_detected_exact_v<handle, group_end, B> &&
                                is_detected_v<group_abort, B> && is_detected_v<destroy_group, B> &&
                                is_detected_v<group_size, B> && is_detected_v<group_model_alive, B> &&
                                is_detected_v<update_begin, B> && is_detected_v<update_end, B> &&
                                is_detected_v<update_abort, B>;
  static constexpr bool value = capture_layer::status<B>::value && types && calls;
};

template <class B>
struct check {
  using st = status<B>;
  static constexpr bool captures = capture_layer::check<B>::value;  // the capture layer's diagnostics come first
  static_assert(st::has_group_handle,
                KEEL_DETAIL_BACKEND_LACKS("task group", "type group_handle (a trivially copyable native handle)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_v<group_begin, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call group_begin(stream_handle)"));
  static_assert(!t || is_detected_exact_v<typename st::handle, group_end, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call group_end(stream_handle) -> group_handle"));
  static_assert(!t || is_detected_v<group_abort, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call group_abort(stream_handle) noexcept"));
  static_assert(!t || is_detected_v<destroy_group, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call destroy_group(group_handle) noexcept"));
  static_assert(!t || is_detected_v<group_size, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call group_size(group_handle)"));
  static_assert(!t || is_detected_v<group_model_alive, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call group_model_alive(group_handle)"));
  static_assert(!t || is_detected_v<update_begin, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call update_begin(stream_handle, group_handle)"));
  static_assert(!t || is_detected_v<update_end, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call update_end(stream_handle)"));
  static_assert(!t || is_detected_v<update_abort, B>,
                KEEL_DETAIL_BACKEND_LACKS("task group", "call update_abort(stream_handle) noexcept"));
  static constexpr bool value = st::value;
};
}  // namespace detail::task_group_layer
/// @endcond

/**
 * @brief The task-group layer (on top of the capture layer): what
 * basic_task_group, its view, the task-group and update scopes and
 * basic_concurrent_update (which also needs the event layer) use.
 *
 * Types: `group_handle` (trivially copyable, value-initialised to "no group").
 *
 * Static calls: `group_begin(stream_handle)`, `group_end(stream_handle)` →
 * group_handle, `group_abort(stream_handle) noexcept`, `destroy_group(g)
 * noexcept`, `group_size(g)`, `group_model_alive(g)`,
 * `update_begin(stream_handle, g)`, `update_end(stream_handle)`,
 * `update_abort(stream_handle) noexcept`.
 *
 * Optional: `abandon_restores_group` (see abandon_restores_group_v).
 */
template <class B>
inline constexpr bool is_task_group_backend_v = detail::task_group_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The task-group layer as a C++20 concept (see is_task_group_backend_v). */
template <class B>
concept task_group_backend = is_task_group_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_task_group_backend = task_group_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the task-group layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_TASK_GROUP_BACKEND ::keel::detail::diagnosed_task_group_backend
#else
#define KEEL_TASK_GROUP_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
