// SPDX-License-Identifier: Apache-2.0
// The context layer of the backend requirement (optional, on top of the
// stream layer): contexts (a device plus the per-thread "current" binding,
// CANN's aclrtContext), made, destroyed and made current on a thread.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::context_layer {
template <class B> using context_handle = typename B::context_handle;
template <class B> using c = typename B::context_handle;
template <class B> using dev_ref = std::add_lvalue_reference_t<typename B::device_type>;
template <class B> using create_context = decltype(B::create_context(std::declval<dev_ref<B>>()));
template <class B>
using destroy_context = std::enable_if_t<noexcept(B::destroy_context(std::declval<c<B>>()))>;
template <class B> using close_context = decltype(B::close_context(std::declval<c<B>>()));
template <class B> using context_device = decltype(B::context_device(std::declval<c<B>>()));
template <class B> using current_context = decltype(B::current_context(std::declval<dev_ref<B>>()));
template <class B> using set_current_context = decltype(B::set_current_context(std::declval<c<B>>()));
template <class B> using enter_context = decltype(B::enter_context(std::declval<dev_ref<B>>(), std::declval<c<B>>()));
template <class B>
using leave_context = std::enable_if_t<noexcept(
    B::leave_context(std::declval<dev_ref<B>>(), std::declval<c<B>>(), std::declval<c<B>>()))>;

template <class B>
struct status {
  using handle = detected_or_none_t<context_handle, B>;
  static constexpr bool has_context_handle = is_native_handle_v<handle>;
  static constexpr bool types = stream_layer::status<B>::types && has_context_handle;
  static constexpr bool calls = is_detected_exact_v<handle, create_context, B> && is_detected_v<destroy_context, B> &&
                                is_detected_v<close_context, B> && is_detected_v<context_device, B> &&
                                is_detected_exact_v<handle, current_context, B> &&
                                is_detected_v<set_current_context, B> &&
                                is_detected_exact_v<handle, enter_context, B> && is_detected_v<leave_context, B>;
  static constexpr bool value = types && calls;
};

template <class B>
struct check {
  using st = status<B>;
  static constexpr bool base = stream_layer::check<B>::value;
  static_assert(st::has_context_handle,
                KEEL_DETAIL_BACKEND_LACKS("context", "type context_handle (a trivially copyable native handle)"));
  static constexpr bool t = st::types;
  static_assert(!t || is_detected_exact_v<typename st::handle, create_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call create_context(device_type&) -> context_handle"));
  static_assert(!t || is_detected_v<destroy_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call destroy_context(context_handle) noexcept"));
  static_assert(!t || is_detected_v<close_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call close_context(context_handle)"));
  static_assert(!t || is_detected_v<context_device, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call context_device(context_handle) -> device_type&"));
  static_assert(!t || is_detected_exact_v<typename st::handle, current_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call current_context(device_type&) -> context_handle"));
  static_assert(!t || is_detected_v<set_current_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call set_current_context(context_handle)"));
  static_assert(!t || is_detected_exact_v<typename st::handle, enter_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context", "call enter_context(device_type&, context_handle) -> context_handle"));
  static_assert(!t || is_detected_v<leave_context, B>,
                KEEL_DETAIL_BACKEND_LACKS("context",
                                          "call leave_context(device_type&, context_handle, context_handle) noexcept"));
  static constexpr bool value = st::value;
};
}  // namespace detail::context_layer
/// @endcond

/**
 * @brief The context layer (optional, on top of the stream layer): what
 * basic_context, basic_context_ref and basic_context_scope need.
 *
 * Type: `context_handle` (trivially copyable, value-initialised to "none").
 * Static calls: `create_context(device_type&)` → context_handle
 * (aclrtCreateContext; the new context is not made current by keel),
 * `destroy_context(c) noexcept` (aclrtDestroyContext, deferred while a thread
 * has it current), `close_context(c)` (the same, refused while current),
 * `context_device(c)` → device_type&, `current_context(device_type&)` →
 * context_handle (aclrtGetCurrentContext; none: a value-initialised handle),
 * `set_current_context(c)` (aclrtSetCurrentContext, until another),
 * `enter_context(device_type&, c)` → the context current before (a scope's
 * entry) and `leave_context(device_type&, c, previous) noexcept` (its exit;
 * previous may be none).
 */
template <class B>
inline constexpr bool is_context_backend_v = detail::context_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The context layer as a C++20 concept (see is_context_backend_v). */
template <class B>
concept context_backend = is_context_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_context_backend = context_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the context layer (`class` before C++20; the handles also static_assert it). */
#define KEEL_CONTEXT_BACKEND ::keel::detail::diagnosed_context_backend
#else
#define KEEL_CONTEXT_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
