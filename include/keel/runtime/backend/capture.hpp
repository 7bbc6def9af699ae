// SPDX-License-Identifier: Apache-2.0
// The capture layer of the backend requirement: capturing a stream's work
// into a model and executing the model. Builds on the stream layer.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::capture_layer {
template <class B> using model_handle = typename B::model_handle;
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B> using s = typename B::stream_handle;
template <class B> using m = typename B::model_handle;

template <class B> using capture_status = decltype(B::capture_status(std::declval<s<B>>()));
template <class B> using thread_capture_status = decltype(B::thread_capture_status(std::declval<dev_ref<B>>()));
template <class B> using capture_begin = decltype(B::capture_begin(std::declval<s<B>>(), capture_mode{}));
template <class B> using capture_end = decltype(B::capture_end(std::declval<s<B>>()));
template <class B> using capture_discard = std::enable_if_t<noexcept(B::capture_discard(std::declval<s<B>>()))>;
template <class B> using destroy_model = std::enable_if_t<noexcept(B::destroy_model(std::declval<m<B>>()))>;
template <class B> using execute = decltype(B::execute(std::declval<m<B>>(), std::declval<s<B>>()));
template <class B> using task_count = decltype(B::task_count(std::declval<m<B>>()));
template <class B> using group_count = decltype(B::group_count(std::declval<m<B>>()));

template <class B>
struct status {
  using handle = detected_or_none_t<model_handle, B>;
  static constexpr bool has_model_handle = is_native_handle_v<handle>;
  static constexpr bool types = stream_layer::status<B>::types && has_model_handle;
  static constexpr bool calls =
      is_detected_exact_v<capture_info, capture_status, B> && is_detected_v<thread_capture_status, B> &&
      is_detected_v<capture_begin, B> && is_detected_exact_v<handle, capture_end, B> &&
      is_detected_v<capture_discard, B> && is_detected_v<destroy_model, B> && is_detected_v<execute, B> &&
      is_detected_v<task_count, B> && is_detected_v<group_count, B>;
  static constexpr bool value = stream_layer::status<B>::value && types && calls;
};

template <class B>
struct check {
  using st = status<B>;
  static constexpr bool streams = stream_layer::check<B>::value;  // the stream layer's diagnostics come first
  static_assert(st::has_model_handle,
                KEEL_DETAIL_BACKEND_LACKS("capture", "type model_handle (a trivially copyable native handle)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_exact_v<capture_info, capture_status, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call capture_status(stream_handle) -> capture_info"));
  static_assert(!t || is_detected_v<thread_capture_status, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call thread_capture_status(device_type&)"));
  static_assert(!t || is_detected_v<capture_begin, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call capture_begin(stream_handle, capture_mode)"));
  static_assert(!t || is_detected_exact_v<typename st::handle, capture_end, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call capture_end(stream_handle) -> model_handle"));
  static_assert(!t || is_detected_v<capture_discard, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call capture_discard(stream_handle) noexcept"));
  static_assert(!t || is_detected_v<destroy_model, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call destroy_model(model_handle) noexcept"));
  static_assert(!t || is_detected_v<execute, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call execute(model_handle, stream_handle)"));
  static_assert(!t || is_detected_v<task_count, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call task_count(model_handle)"));
  static_assert(!t || is_detected_v<group_count, B>,
                KEEL_DETAIL_BACKEND_LACKS("capture", "call group_count(model_handle)"));
  static constexpr bool value = st::value;
};
}  // namespace detail::capture_layer
/// @endcond

/**
 * @brief The capture layer (on top of the stream layer): what basic_model,
 * its view and basic_capture_scope need.
 *
 * Types: `model_handle` (trivially copyable, value-initialised to "no model").
 *
 * Static calls: `capture_status(stream_handle)` → capture_info,
 * `thread_capture_status(device_type&)`, `capture_begin(stream_handle,
 * capture_mode)`, `capture_end(stream_handle)` → model_handle,
 * `capture_discard(stream_handle) noexcept`, `destroy_model(m) noexcept`,
 * `execute(m, stream_handle)`, `task_count(m)`, `group_count(m)`.
 */
template <class B>
inline constexpr bool is_capture_backend_v = detail::capture_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The capture layer as a C++20 concept (see is_capture_backend_v). */
template <class B>
concept capture_backend = is_capture_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_capture_backend = capture_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the capture layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_CAPTURE_BACKEND ::keel::detail::diagnosed_capture_backend
#else
#define KEEL_CAPTURE_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
