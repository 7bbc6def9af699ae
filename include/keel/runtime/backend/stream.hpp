// SPDX-License-Identifier: Apache-2.0
// The stream layer of the backend requirement: devices, in-order streams,
// host callables, kernel launches and copies. Every other layer builds on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/types.hpp"

/// @cond
// "keel: backend lacks the <layer> layer's <what>": every layer's diagnostics
// start alike, so a compile log names the layer and the call.
#define KEEL_DETAIL_BACKEND_LACKS(layer, what) "keel: backend lacks the " layer " layer's " what
/// @endcond

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::stream_layer {
template <class B> using device_type = typename B::device_type;
template <class B> using stream_handle = typename B::stream_handle;
template <class B> using launch_context = typename B::launch_context;
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B> using h = typename B::stream_handle;

template <class B> using create_stream = decltype(B::create_stream(std::declval<dev_ref<B>>()));
template <class B>
using destroy_stream = std::enable_if_t<noexcept(B::destroy_stream(std::declval<h<B>>()))>;
template <class B> using device_of = decltype(B::device_of(std::declval<h<B>>()));
template <class B> using id_of = decltype(B::id_of(std::declval<h<B>>()));
template <class B> using synchronize = decltype(B::synchronize(std::declval<h<B>>()));
template <class B> using query = decltype(B::query(std::declval<h<B>>()));
template <class B> using launch_host = decltype(B::launch_host(std::declval<h<B>>(), probe_host{}));
template <class B>
using launch_kernel = decltype(B::launch_kernel(std::declval<h<B>>(), kernel_kind{""}, probe_kernel{}));
template <class B>
using copy_async = decltype(B::copy_async(std::declval<h<B>>(), std::declval<void*>(), std::declval<const void*>(),
                                          std::size_t{}, copy_kind{}, std::shared_ptr<void>{},
                                          std::shared_ptr<void>{}));
template <class B>
using copy = decltype(B::copy(std::declval<h<B>>(), std::declval<void*>(), std::declval<const void*>(),
                              std::size_t{}, copy_kind{}));
template <class B> using synchronize_device = decltype(B::synchronize_device(std::declval<dev_ref<B>>()));
// Optional: basic_stream offers memset_async where the backend has it.
template <class B>
using memset_async = decltype(B::memset_async(std::declval<h<B>>(), std::declval<void*>(), int{}, std::size_t{},
                                              std::shared_ptr<void>{}));

// Each requirement as a constant, without a diagnostic (the traits use it).
template <class B>
struct status {
  using handle = detected_or_none_t<stream_handle, B>;
  static constexpr bool has_device_type = is_detected_v<device_type, B>;
  static constexpr bool has_stream_handle = is_native_handle_v<handle>;
  static constexpr bool has_launch_context = is_detected_v<launch_context, B>;
  static constexpr bool types = has_device_type && has_stream_handle && has_launch_context;
  static constexpr bool calls =
      is_detected_exact_v<handle, create_stream, B> && is_detected_v<destroy_stream, B> &&
      is_detected_exact_v<std::add_lvalue_reference_t<detected_or_none_t<device_type, B>>, device_of,
                          B> &&
      is_detected_v<id_of, B> && is_detected_v<synchronize, B> && is_detected_v<query, B> &&
      is_detected_v<launch_host, B> && is_detected_v<launch_kernel, B> && is_detected_v<copy_async, B> &&
      is_detected_v<copy, B> && is_detected_v<synchronize_device, B>;
  static constexpr bool value = types && calls;
};

// The same requirements, one static_assert each (a handle instantiates it).
// Calls are checked once the layer's types exist, so a backend missing a type
// reads one message, not one per call.
template <class B>
struct check {
  using st = status<B>;
  static_assert(st::has_device_type, KEEL_DETAIL_BACKEND_LACKS("stream", "type device_type"));
  static_assert(st::has_stream_handle,
                KEEL_DETAIL_BACKEND_LACKS("stream", "type stream_handle (a trivially copyable native handle)"));
  static_assert(st::has_launch_context,
                KEEL_DETAIL_BACKEND_LACKS("stream", "type launch_context (what a kernel body receives)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_exact_v<typename st::handle, create_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call create_stream(device_type&) -> stream_handle"));
  static_assert(!t || is_detected_v<destroy_stream, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call destroy_stream(stream_handle) noexcept"));
  static_assert(!t || is_detected_exact_v<std::add_lvalue_reference_t<typename B::device_type>, device_of, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call device_of(stream_handle) -> device_type&"));
  static_assert(!t || is_detected_v<id_of, B>, KEEL_DETAIL_BACKEND_LACKS("stream", "call id_of(stream_handle)"));
  static_assert(!t || is_detected_v<synchronize, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call synchronize(stream_handle)"));
  static_assert(!t || is_detected_v<query, B>, KEEL_DETAIL_BACKEND_LACKS("stream", "call query(stream_handle)"));
  static_assert(!t || is_detected_v<launch_host, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call launch_host(stream_handle, F) with F()"));
  static_assert(!t || is_detected_v<launch_kernel, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream",
                                          "call launch_kernel(stream_handle, kernel_kind, F) with F(launch_context&)"));
  static_assert(!t || is_detected_v<copy_async, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream",
                                          "call copy_async(stream_handle, void* dst, const void* src, size_t, "
                                          "copy_kind, shared_ptr<void> keep_dst, shared_ptr<void> keep_src)"));
  static_assert(!t || is_detected_v<copy, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream",
                                          "call copy(stream_handle, void* dst, const void* src, size_t, copy_kind)"));
  static_assert(!t || is_detected_v<synchronize_device, B>,
                KEEL_DETAIL_BACKEND_LACKS("stream", "call synchronize_device(device_type&)"));
  static constexpr bool value = st::value;
};
}  // namespace detail::stream_layer
/// @endcond

/**
 * @brief The stream layer: what basic_stream and basic_stream_ref need.
 *
 * Types: `device_type`, `stream_handle` (trivially copyable, value-initialised
 * to "no stream"), `launch_context` (what a kernel body receives).
 *
 * Static calls: `create_stream(device_type&)` → stream_handle,
 * `destroy_stream(h) noexcept` (waits for the stream's work), `device_of(h)` →
 * device_type&, `id_of(h)`, `synchronize(h)`, `query(h)`, `launch_host(h, F)`
 * with `F()`, `launch_kernel(h, kernel_kind, F)` with `F(launch_context&)`,
 * `copy_async(h, dst, src, bytes, copy_kind, keep_dst, keep_src)`,
 * `copy(h, dst, src, bytes, copy_kind)`, `synchronize_device(device_type&)`.
 *
 * Optional: `capture_status(h)` → capture_info (see stream_capture_status;
 * without it a stream reports that it is not capturing);
 * `memset_async(h, dst, int value, bytes, keep_dst)` (basic_stream's
 * memset_async, offered where the backend has it).
 */
template <class B>
inline constexpr bool is_stream_backend_v = detail::stream_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The stream layer as a C++20 concept (see is_stream_backend_v). */
template <class B>
concept stream_backend = is_stream_backend_v<B>;
/// @cond
namespace detail {
// What the handles are constrained on: checking it runs the layer's
// static_asserts, so a C++20 build names the missing call as C++17 does.
template <class B>
concept diagnosed_stream_backend = stream_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the stream layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_STREAM_BACKEND ::keel::detail::diagnosed_stream_backend
#else
#define KEEL_STREAM_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
