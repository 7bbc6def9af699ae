// SPDX-License-Identifier: Apache-2.0
// The conditional layer of the backend requirement: conditions (an 8-byte
// device value a model owns, CANN's aclmdlRICondHandle), conditional tasks
// that run body models by it (aclmdlRIAddCondTask: IF, WHILE, SWITCH), and
// captures into a body (aclmdlRICaptureToModelRIBegin). Builds on the
// capture layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/capture.hpp"
#include "keel/runtime/backend/detection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/** @brief What a conditional task does with its condition (CANN's aclmdlRICondTaskType, same values). */
enum class conditional_kind : std::int32_t {
  if_ = 0,      ///< value != 0 runs body 0; with two bodies, value == 0 runs body 1
  while_ = 1,   ///< body 0 runs while value != 0 (checked before each run)
  switch_ = 2,  ///< body `value` runs; a value past the last body runs none
};

/** @brief The name of a conditional kind ("if", "while", "switch"), for introspection and dumps. Throws: nothing. */
constexpr std::string_view to_string(conditional_kind k) noexcept {
  switch (k) {
    case conditional_kind::if_: return "if";
    case conditional_kind::while_: return "while";
    case conditional_kind::switch_: return "switch";
  }
  return "unknown";
}

/// @cond
namespace detail::conditional_layer {
template <class B> using s = typename B::stream_handle;
template <class B> using m = typename B::model_handle;
template <class B> using c = typename B::condition_handle;
template <class B> using make_condition = decltype(B::make_condition(std::declval<s<B>>(), std::uint32_t{}, bool{}));
template <class B> using condition_value = decltype(B::condition_value(std::declval<c<B>>()));
template <class B>
using add_conditional = decltype(B::add_conditional(std::declval<s<B>>(), std::declval<c<B>>(), conditional_kind{},
                                                    std::size_t{}, std::declval<m<B>*>()));
template <class B>
using capture_into_begin = decltype(B::capture_into_begin(std::declval<s<B>>(), std::declval<m<B>>(), capture_mode{}));
template <class B> using capture_into_end = decltype(B::capture_into_end(std::declval<s<B>>()));
template <class B>
using capture_into_discard = std::enable_if_t<noexcept(B::capture_into_discard(std::declval<s<B>>(), std::declval<m<B>>()))>;

template <class B>
struct check {
  static constexpr bool captures = capture_layer::check<B>::value;  // the capture layer's diagnostics come first
  static_assert(is_detected_v<make_condition, B>,
                KEEL_DETAIL_BACKEND_LACKS("conditional", "type condition_handle and call make_condition(stream_handle, std::uint32_t, bool)"));
  static_assert(is_detected_exact_v<std::uint64_t*, condition_value, B>,
                KEEL_DETAIL_BACKEND_LACKS("conditional", "call condition_value(condition_handle) -> std::uint64_t*"));
  static_assert(is_detected_v<add_conditional, B>,
                KEEL_DETAIL_BACKEND_LACKS("conditional", "call add_conditional(stream_handle, condition_handle, "
                                                         "conditional_kind, std::size_t, model_handle*)"));
  static_assert(is_detected_v<capture_into_begin, B> && is_detected_v<capture_into_end, B> &&
                    is_detected_v<capture_into_discard, B>,
                KEEL_DETAIL_BACKEND_LACKS("conditional", "calls capture_into_begin(stream_handle, model_handle, "
                                                         "capture_mode), capture_into_end(stream_handle), "
                                                         "capture_into_discard(stream_handle, model_handle) noexcept"));
  static constexpr bool value = captures;
};
}  // namespace detail::conditional_layer
/// @endcond

/**
 * @brief The conditional layer (on top of the capture layer): what
 * basic_condition, add_conditional and basic_body_capture_scope need.
 *
 * Types: `condition_handle`. Static calls: `make_condition(s, default,
 * assign_default)` on a capturing stream, `condition_value(c)` →
 * std::uint64_t*, `add_conditional(s, c, kind, n, model_handle* bodies)`,
 * `capture_into_begin(s, body, mode)`, `capture_into_end(s)`,
 * `capture_into_discard(s, body) noexcept`.
 */
template <class B>
inline constexpr bool is_conditional_backend_v =
    is_capture_backend_v<B> && keel::detail::is_detected_v<detail::conditional_layer::make_condition, B> &&
    keel::detail::is_detected_v<detail::conditional_layer::add_conditional, B> &&
    keel::detail::is_detected_v<detail::conditional_layer::capture_into_begin, B>;

KEEL_END_NAMESPACE  // namespace keel
