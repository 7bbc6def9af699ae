// SPDX-License-Identifier: Apache-2.0
// The native-handle part of the backend requirement (optional): the vendor's
// handle types (aclrtStream, aclrtEvent, ...) behind a backend's handles,
// and the conversions both ways. The handles' native_handle(), release(),
// from_native_handle() and native-handle ref constructors go through it.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What from_native_handle() and a `_ref`'s native constructor ask a
 * backend for: a record it keeps viewing (`view`: keel never destroys the
 * native handle) or one it owns from now on (`own`: destroying the keel
 * owner destroys the native handle).
 */
enum class adoption : std::uint8_t {
  view,  ///< a record keel views: the native handle is never destroyed by keel
  own,   ///< a record keel owns: destroying the owner destroys the native handle
};

/** @brief Selects the from_native overload for one handle type of a backend (the vendor's types may all be `void*`). */
template <class Handle>
struct handle_tag {};

/// @cond
namespace detail {

template <class B, class H>
using to_native_call = decltype(B::to_native(std::declval<H>()));

/**
 * The vendor's handle behind backend handle H of B, and the conversions.
 * A backend whose handles are the vendor's (or that has no vendor) supplies
 * nothing: the native handle is H itself. A backend with records of its own
 * (keel's ACL backend: a record per aclrtStream) supplies, per handle type H:
 *
 *   static N to_native(H) noexcept;                      // the vendor's handle
 *   static H from_native(device_type&, N, adoption, handle_tag<H>, const char* api, extra...);
 *   static N release_native(H) noexcept;                 // the owner gives N up
 *
 * (extra: an event's std::optional<event_flags>, what its adopter says it
 * was made with). from_native gets a non-null N and the API to name in its
 * errors (invalid_parameter when it refuses N); release_native leaves the backend's record
 * to the backend (a later from_native of N finds it again).
 */
template <class B, class H, class = void>
struct native_of {
  using type = H;
  static type to(H h) noexcept { return h; }
  template <class Device, class... Extra>
  static H from(Device&, type native, adoption, const char*, Extra&&...) {
    return native;
  }
  static type release(H h) noexcept { return h; }
};

template <class B, class H>
struct native_of<B, H, std::void_t<to_native_call<B, H>>> {
  using type = to_native_call<B, H>;
  static type to(H h) noexcept { return h == H{} ? type{} : B::to_native(h); }
  template <class Device, class... Extra>
  static H from(Device& dev, type native, adoption how, const char* api, Extra&&... extra) {
    return B::from_native(dev, native, how, handle_tag<H>{}, api, std::forward<Extra>(extra)...);
  }
  static type release(H h) noexcept { return h == H{} ? type{} : B::release_native(h); }
};

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
