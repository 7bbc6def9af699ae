// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native event calls: aclrtCreateEventWithFlag with the
// flags keel's event kinds map to, records and waits (external events with
// their flag forms), queries, synchronization and timing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "keel/acl/detail/handles.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct event_calls : native_types {
  KEEL_DECL static event_handle create_event(device_type& dev, keel::event_flags flags);
  KEEL_DECL static void destroy_event(event_handle e) noexcept;
  static keel::event_flags flags_of(event_handle e) noexcept { return e->flags; }

  // A foreign stream's record may lie in a capture keel did not begin; a
  // stream that waits on such an event may have joined it (stream_box::foreign).
  KEEL_DECL static void record(event_handle e, stream_handle s);
  KEEL_DECL static void wait(stream_handle s, event_handle e);
  /**
   * aclrtStreamWaitEventWithTimeout: the wait fails on the stream if the
   * record has not come in time. External events have no bounded wait in ACL
   * (their flag form takes timeout 0): refused.
   */
  KEEL_DECL static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout);
  // Once the wait is issued (a synchronize clears acl_work before it asks
  // ACL): s may have joined a foreign capture, and a wait (a bounded one
  // fails it) is work that may fail the ACL stream.
  KEEL_DECL static void waited_on(stream_handle s, event_handle e) noexcept;
  KEEL_DECL static void reset(stream_handle s, event_handle e);
  KEEL_DECL static bool query(event_handle e);
  KEEL_DECL static void synchronize(event_handle e);
  /** aclrtSynchronizeEventWithTimeout (ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, errc::timeout). */
  KEEL_DECL static void synchronize_for(event_handle e, std::chrono::microseconds timeout);
  KEEL_DECL static float elapsed_ms(event_handle start, event_handle end);

  static device_type& device_of(event_handle e) noexcept { return *e->dev; }

  /** The aclrtEvent under keel's record. */
  KEEL_DECL static acl::event_handle to_native(event_handle e) noexcept;
  /**
   * The event form of the stream's from_native. ACL cannot be asked an
   * event's flags: a new record takes @p flags (default when not said); a
   * record keel has refuses other flags (they are read without a lock).
   */
  KEEL_DECL static event_handle from_native(device_type& dev, acl::event_handle native, adoption how, handle_tag<event_handle>,
                                  const char* api, std::optional<keel::event_flags> flags);
  /** The owner gives the ACL event up: the record goes to the device, until forget_event. */
  KEEL_DECL static acl::event_handle release_native(event_handle e) noexcept;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/event.ipp"
#endif
