// SPDX-License-Identifier: Apache-2.0
// The built-model layer of the backend requirement: a model built from
// persistent streams bound to it (CANN's aclmdlRIBuildBegin, BindStream,
// EndTask, BuildEnd, UnbindStream), with tasks that activate a bound stream
// (aclrtActiveStream) or switch to one when two device values compare true
// (aclrtSwitchStream). Builds on the capture layer: a built model is a
// model_handle that executes like a captured one.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/capture.hpp"
#include "keel/runtime/backend/detection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/** @brief How a switch task compares its two device values (CANN's aclrtCondition, same values). */
enum class compare_condition : std::int32_t {
  equal = 0,
  not_equal = 1,
  greater = 2,
  greater_or_equal = 3,
  less = 4,
  less_or_equal = 5,
};

/** @brief The type of a switch task's two device values (CANN's aclrtCompareDataType, same values). */
enum class compare_type : std::int32_t { int32 = 0, int64 = 1 };

/** @brief Whether a stream bound to a model being built runs when the model starts (CANN's ACL_MODEL_STREAM_FLAG_HEAD) or when a task activates it. */
enum class bound_stream : std::uint8_t { head, activated };

/// @cond
namespace detail::built_model_layer {
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B> using s = typename B::stream_handle;
template <class B> using m = typename B::model_handle;

template <class B> using create_persistent_stream = decltype(B::create_persistent_stream(std::declval<dev_ref<B>>()));
template <class B> using build_begin = decltype(B::build_begin(std::declval<dev_ref<B>>()));
template <class B> using bind_stream = decltype(B::bind_stream(std::declval<m<B>>(), std::declval<s<B>>(), bound_stream{}));
template <class B> using end_task = decltype(B::end_task(std::declval<m<B>>(), std::declval<s<B>>()));
template <class B> using activate = decltype(B::activate_stream(std::declval<s<B>>(), std::declval<s<B>>()));
template <class B>
using switch_stream = decltype(B::switch_stream(std::declval<s<B>>(), std::declval<const void*>(), compare_condition{},
                                                std::declval<const void*>(), compare_type{}, std::declval<s<B>>()));
template <class B> using build_end = decltype(B::build_end(std::declval<m<B>>()));
template <class B> using unbind_stream = decltype(B::unbind_stream(std::declval<m<B>>(), std::declval<s<B>>()));

template <class B>
struct status {
  static constexpr bool calls =
      is_detected_exact_v<s<B>, create_persistent_stream, B> && is_detected_exact_v<m<B>, build_begin, B> &&
      is_detected_v<bind_stream, B> && is_detected_v<end_task, B> && is_detected_v<activate, B> &&
      is_detected_v<switch_stream, B> && is_detected_v<build_end, B> && is_detected_v<unbind_stream, B>;
  static constexpr bool value = capture_layer::status<B>::value && calls;
};

template <class B>
struct check {
  static constexpr bool captures = capture_layer::check<B>::value;  // the capture layer's diagnostics come first
  static_assert(is_detected_exact_v<s<B>, create_persistent_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call create_persistent_stream(device_type&) -> stream_handle"));
  static_assert(is_detected_exact_v<m<B>, build_begin, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call build_begin(device_type&) -> model_handle"));
  static_assert(is_detected_v<bind_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call bind_stream(model_handle, stream_handle, bound_stream)"));
  static_assert(is_detected_v<end_task, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call end_task(model_handle, stream_handle)"));
  static_assert(is_detected_v<activate, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call activate_stream(stream_handle, stream_handle)"));
  static_assert(is_detected_v<switch_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call switch_stream(stream_handle, const void*, compare_condition, "
                                                         "const void*, compare_type, stream_handle)"));
  static_assert(is_detected_v<build_end, B>, KEEL_DETAIL_BACKEND_LACKS("built model", "call build_end(model_handle)"));
  static_assert(is_detected_v<unbind_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("built model", "call unbind_stream(model_handle, stream_handle)"));
  static constexpr bool value = status<B>::value;
};
}  // namespace detail::built_model_layer
/// @endcond

/**
 * @brief The built-model layer (on top of the capture layer): what
 * basic_model_builder needs.
 *
 * Static calls: `create_persistent_stream(device_type&)` → stream_handle (a
 * stream that can be bound; CANN's ACL_STREAM_PERSISTENT), `build_begin(device_type&)`
 * → model_handle, `bind_stream(m, s, bound_stream)`, `end_task(m, s)`,
 * `activate_stream(s, target)`, `switch_stream(s, left, condition, right,
 * type, target)`, `build_end(m)`, `unbind_stream(m, s)`. Destroying a built
 * model (destroy_model) unbinds the streams still bound to it.
 */
template <class B>
inline constexpr bool is_built_model_backend_v = detail::built_model_layer::status<B>::value;

KEEL_END_NAMESPACE  // namespace keel
