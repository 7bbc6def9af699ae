// SPDX-License-Identifier: Apache-2.0
// The event layer of the backend requirement: default, timing and external
// events recorded and waited on in stream order. Builds on the stream layer.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::event_layer {
template <class B> using event_handle = typename B::event_handle;
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B> using s = typename B::stream_handle;
template <class B> using e = typename B::event_handle;

template <class B> using create_event = decltype(B::create_event(std::declval<dev_ref<B>>(), event_flags{}));
template <class B> using destroy_event = std::enable_if_t<noexcept(B::destroy_event(std::declval<e<B>>()))>;
template <class B> using flags_of = decltype(B::flags_of(std::declval<e<B>>()));
template <class B> using record = decltype(B::record(std::declval<e<B>>(), std::declval<s<B>>()));
template <class B> using wait = decltype(B::wait(std::declval<s<B>>(), std::declval<e<B>>()));
template <class B> using reset = decltype(B::reset(std::declval<s<B>>(), std::declval<e<B>>()));
template <class B> using query = decltype(B::query(std::declval<e<B>>()));
template <class B> using synchronize = decltype(B::synchronize(std::declval<e<B>>()));
template <class B> using elapsed_ms = decltype(B::elapsed_ms(std::declval<e<B>>(), std::declval<e<B>>()));

template <class B>
struct status {
  using handle = detected_or_none_t<event_handle, B>;
  static constexpr bool has_event_handle = is_native_handle_v<handle>;
  static constexpr bool types = stream_layer::status<B>::types && has_event_handle;
  static constexpr bool calls = is_detected_exact_v<handle, create_event, B> && is_detected_v<destroy_event, B> &&
                                is_detected_v<flags_of, B> && is_detected_v<record, B> && is_detected_v<wait, B> &&
                                is_detected_v<reset, B> && is_detected_v<query, B> &&
                                is_detected_v<synchronize, B> && is_detected_v<elapsed_ms, B>;
  static constexpr bool value = stream_layer::status<B>::value && types && calls;
};

template <class B>
struct check {
  using st = status<B>;
  static constexpr bool streams = stream_layer::check<B>::value;  // the stream layer's diagnostics come first
  static_assert(st::has_event_handle,
                KEEL_DETAIL_BACKEND_LACKS("event", "type event_handle (a trivially copyable native handle)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_exact_v<typename st::handle, create_event, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call create_event(device_type&, event_flags) -> event_handle"));
  static_assert(!t || is_detected_v<destroy_event, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call destroy_event(event_handle) noexcept"));
  static_assert(!t || is_detected_v<flags_of, B>, KEEL_DETAIL_BACKEND_LACKS("event", "call flags_of(event_handle)"));
  static_assert(!t || is_detected_v<record, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call record(event_handle, stream_handle)"));
  static_assert(!t || is_detected_v<wait, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call wait(stream_handle, event_handle)"));
  static_assert(!t || is_detected_v<reset, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call reset(stream_handle, event_handle)"));
  static_assert(!t || is_detected_v<query, B>, KEEL_DETAIL_BACKEND_LACKS("event", "call query(event_handle)"));
  static_assert(!t || is_detected_v<synchronize, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call synchronize(event_handle)"));
  static_assert(!t || is_detected_v<elapsed_ms, B>,
                KEEL_DETAIL_BACKEND_LACKS("event", "call elapsed_ms(event_handle start, event_handle end)"));
  static constexpr bool value = st::value;
};
}  // namespace detail::event_layer
/// @endcond

/**
 * @brief The event layer (on top of the stream layer): what basic_event, its
 * view, elapsed_time and the external-event pool need.
 *
 * Types: `event_handle` (trivially copyable, value-initialised to "no event").
 *
 * Static calls: `create_event(device_type&, event_flags)` → event_handle,
 * `destroy_event(e) noexcept`, `flags_of(e)`, `record(e, stream_handle)`,
 * `wait(stream_handle, e)`, `reset(stream_handle, e)`, `query(e)`,
 * `synchronize(e)`, `elapsed_ms(start, end)`.
 */
template <class B>
inline constexpr bool is_event_backend_v = detail::event_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The event layer as a C++20 concept (see is_event_backend_v). */
template <class B>
concept event_backend = is_event_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_event_backend = event_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the event layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_EVENT_BACKEND ::keel::detail::diagnosed_event_backend
#else
#define KEEL_EVENT_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
