// SPDX-License-Identifier: Apache-2.0
// The memory layer of the backend requirement: device and pinned host
// allocations released in stream order. Builds on the stream layer.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::memory_layer {
template <class B> using buffer_handle = typename B::buffer_handle;
template <class B> using s = typename B::stream_handle;
template <class B> using b = typename B::buffer_handle;

template <class B> using allocate = decltype(B::allocate(std::declval<s<B>>(), std::size_t{}, memory_kind{}));
template <class B> using free_async = std::enable_if_t<noexcept(B::free_async(std::declval<b<B>>()))>;
template <class B> using data = decltype(B::data(std::declval<b<B>>()));
template <class B> using size = decltype(B::size(std::declval<b<B>>()));
template <class B> using keep_alive = decltype(B::keep_alive(std::declval<b<B>>()));

template <class B>
struct status {
  using handle = detected_or_none_t<buffer_handle, B>;
  static constexpr bool has_buffer_handle = is_native_handle_v<handle>;
  static constexpr bool types = stream_layer::status<B>::types && has_buffer_handle;
  static constexpr bool calls = is_detected_exact_v<handle, allocate, B> && is_detected_v<free_async, B> &&
                                is_detected_v<data, B> && is_detected_v<size, B> && is_detected_v<keep_alive, B>;
  static constexpr bool value = stream_layer::status<B>::value && types && calls;
};

template <class B>
struct check {
  using st = status<B>;
  static constexpr bool streams = stream_layer::check<B>::value;  // the stream layer's diagnostics come first
  static_assert(st::has_buffer_handle,
                KEEL_DETAIL_BACKEND_LACKS("memory", "type buffer_handle (a trivially copyable native handle)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_exact_v<typename st::handle, allocate, B>,
                KEEL_DETAIL_BACKEND_LACKS("memory", "call allocate(stream_handle, size_t, memory_kind) -> buffer_handle"));
  static_assert(!t || is_detected_v<free_async, B>,
                KEEL_DETAIL_BACKEND_LACKS("memory", "call free_async(buffer_handle) noexcept"));
  static_assert(!t || is_detected_v<data, B>, KEEL_DETAIL_BACKEND_LACKS("memory", "call data(buffer_handle)"));
  static_assert(!t || is_detected_v<size, B>, KEEL_DETAIL_BACKEND_LACKS("memory", "call size(buffer_handle)"));
  static_assert(!t || is_detected_v<keep_alive, B>,
                KEEL_DETAIL_BACKEND_LACKS("memory", "call keep_alive(buffer_handle) -> shared_ptr sharing the allocation"));
  static constexpr bool value = st::value;
};
}  // namespace detail::memory_layer
/// @endcond

/**
 * @brief The memory layer (on top of the stream layer): what basic_buffer needs.
 *
 * Types: `buffer_handle` (trivially copyable, value-initialised to "no buffer").
 *
 * Static calls: `allocate(stream_handle, bytes, memory_kind)` → buffer_handle
 * (its release is ordered on that stream), `free_async(b) noexcept`,
 * `data(b)`, `size(b)`, `keep_alive(b)` → `std::shared_ptr<void>` sharing the
 * allocation.
 */
template <class B>
inline constexpr bool is_memory_backend_v = detail::memory_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The memory layer as a C++20 concept (see is_memory_backend_v). */
template <class B>
concept memory_backend = is_memory_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_memory_backend = memory_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the memory layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_MEMORY_BACKEND ::keel::detail::diagnosed_memory_backend
#else
#define KEEL_MEMORY_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
