// SPDX-License-Identifier: Apache-2.0
// The stream-configuration layer of the backend requirement (optional, on top
// of the stream layer): streams made with flags and a priority, the
// runtime's own stream id, and destruction that discards the work not yet run.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/stream_options.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::stream_config_layer {
template <class B> using h = typename B::stream_handle;
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B>
using create_stream_with = decltype(B::create_stream_with(std::declval<dev_ref<B>>(), std::declval<const stream_options&>()));
template <class B> using options_of = decltype(B::options_of(std::declval<h<B>>()));
template <class B> using runtime_id_of = decltype(B::runtime_id_of(std::declval<h<B>>()));
template <class B> using priority_range = decltype(B::priority_range(std::declval<dev_ref<B>>()));
template <class B>
using destroy_stream_force = std::enable_if_t<noexcept(B::destroy_stream_force(std::declval<h<B>>()))>;

template <class B, bool = stream_layer::status<B>::types>
struct status : std::false_type {};
template <class B>
struct status<B, true>
    : std::bool_constant<is_detected_exact_v<h<B>, create_stream_with, B> &&
                         is_detected_exact_v<stream_options, options_of, B> &&
                         is_detected_exact_v<std::int32_t, runtime_id_of, B> &&
                         is_detected_exact_v<stream_priority_range, priority_range, B> &&
                         is_detected_v<destroy_stream_force, B>> {};

template <class B>
struct check {
  static constexpr bool base = stream_layer::check<B>::value;
  static constexpr bool t = stream_layer::status<B>::types;
  static_assert(!t || is_detected_exact_v<h<B>, create_stream_with, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream-config",
                                          "call create_stream_with(device_type&, const stream_options&) -> stream_handle"));
  static_assert(!t || is_detected_exact_v<stream_options, options_of, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream-config", "call options_of(stream_handle) -> stream_options"));
  static_assert(!t || is_detected_exact_v<std::int32_t, runtime_id_of, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream-config", "call runtime_id_of(stream_handle) -> int32_t"));
  static_assert(!t || is_detected_exact_v<stream_priority_range, priority_range, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream-config", "call priority_range(device_type&) -> stream_priority_range"));
  static_assert(!t || is_detected_v<destroy_stream_force, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream-config", "call destroy_stream_force(stream_handle) noexcept"));
  static constexpr bool value = status<B>::value;
};
}  // namespace detail::stream_config_layer
/// @endcond

/**
 * @brief The stream-configuration layer (optional, on top of the stream
 * layer): what `basic_stream{device, stream_options}`, `options()`,
 * `flags()`, `priority()`, `runtime_id()` and `discard()` need.
 *
 * Static calls: `create_stream_with(device_type&, const stream_options&)` →
 * stream_handle (aclrtCreateStreamWithConfig), `options_of(h)` →
 * stream_options (aclrtStreamGetFlags, aclrtStreamGetPriority),
 * `runtime_id_of(h)` → int32_t (aclrtStreamGetId), `priority_range(device_type&)`
 * → stream_priority_range (aclrtDeviceGetStreamPriorityRange), and
 * `destroy_stream_force(h) noexcept` (aclrtDestroyStreamForce: the work not yet
 * started is discarded, not waited for).
 */
template <class B>
inline constexpr bool is_stream_config_backend_v = detail::stream_config_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The stream-configuration layer as a C++20 concept (see is_stream_config_backend_v). */
template <class B>
concept stream_config_backend = is_stream_config_backend_v<B>;
#endif

KEEL_END_NAMESPACE  // namespace keel
