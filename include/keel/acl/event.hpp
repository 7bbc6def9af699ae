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
  static event_handle create_event(device_type& dev, keel::event_flags flags) {
    auto box = std::make_unique<event_box>();
    // ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE, ACL_EVENT_EXTERNAL
    // (hicann/runtime docs/zh/api_ref/07_event_management.md).
    const std::uint32_t flag = flags == keel::event_flags::external ? acl::event_flags::external
                               : flags == keel::event_flags::timing ? acl::event_flags::time_line
                                                              : acl::event_flags::sync;
    const api& a = entered(dev);
    // A default event comes from aclrtCreateEventExWithFlag where the runtime
    // has it: only those take the external record and wait operations
    // (event_operation::external), and they need no reset to be reused.
    if (flags == keel::event_flags::default_ && a.aclrtCreateEventExWithFlag) {
      dev.check(a.aclrtCreateEventExWithFlag(&box->native, flag), "aclrtCreateEventExWithFlag");
    } else {
      dev.check(a.aclrtCreateEventWithFlag(&box->native, flag), "aclrtCreateEventWithFlag");
    }
    box->dev = &dev;
    box->flags = flags;
    try {
      dev.events_.add(box->native, box.get());
    } catch (...) {
      a.aclrtDestroyEvent(box->native);
      throw;
    }
    return box.release();
  }
  static void destroy_event(event_handle e) noexcept {
    if (e->adopted) return;  // its maker destroys it; the record stays with the device
    e->dev->events_.remove(e->native, e);
    const auto destroy = entered(*e->dev).aclrtDestroyEvent.get();
    const status st = destroy != nullptr ? destroy(e->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyEvent", "the event could not be destroyed");
    delete e;
  }
  static keel::event_flags flags_of(event_handle e) noexcept { return e->flags; }

  // A foreign stream's record may lie in a capture keel did not begin; a
  // stream that waits on such an event may have joined it (stream_box::foreign).
  static void record(event_handle e, stream_handle s) {
    if (s->foreign.load(std::memory_order_relaxed)) mark(e->foreign);
    const api& a = entered(*s->dev);
    if (e->flags == keel::event_flags::external) {
      s->dev->check(a.aclrtRecordEventWithFlag(e->native, s->native, record_flags::external),
                    "aclrtRecordEventWithFlag");
    } else {
      s->dev->check(a.aclrtRecordEvent(e->native, s->native), "aclrtRecordEvent");
    }
  }
  static void wait(stream_handle s, event_handle e) {
    const api& a = entered(*s->dev);
    if (e->flags == keel::event_flags::external) {  // timeout must be 0 with the external flag
      const status st = a.aclrtStreamWaitEventWithFlag(s->native, e->native, 0, wait_flags::external);
      waited_on(s, e);
      s->dev->check(st, "aclrtStreamWaitEventWithFlag");
    } else {
      const status st = a.aclrtStreamWaitEvent(s->native, e->native);
      waited_on(s, e);
      s->dev->check(st, "aclrtStreamWaitEvent");
    }
  }
  /**
   * aclrtStreamWaitEventWithTimeout: the wait fails on the stream if the
   * record has not come in time. External events have no bounded wait in ACL
   * (their flag form takes timeout 0): refused.
   */
  static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
    static constexpr const char* api_name = "keel::stream::wait";
    if (e->flags == keel::event_flags::external)
      throw_error(keel::errc::not_supported, api_name,
                  "ACL has no bounded wait on an external event (aclrtStreamWaitEventWithFlag takes timeout 0)");
    const status st = entered(*s->dev).aclrtStreamWaitEventWithTimeout(s->native, e->native, timeout_ms(timeout));
    waited_on(s, e);
    s->dev->check(st, "aclrtStreamWaitEventWithTimeout");
  }
  // Once the wait is issued (a synchronize clears acl_work before it asks
  // ACL): s may have joined a foreign capture, and a wait (a bounded one
  // fails it) is work that may fail the ACL stream.
  static void waited_on(stream_handle s, event_handle e) noexcept {
    if (e->foreign.load(std::memory_order_relaxed)) mark(s->foreign);
    mark(s->acl_work);
  }
  static void reset(stream_handle s, event_handle e) {
    s->dev->check(entered(*s->dev).aclrtResetEvent(e->native, s->native), "aclrtResetEvent");
  }
  static bool query(event_handle e) {
    event_recorded_status st = event_recorded_status::not_ready;
    e->dev->check(entered(*e->dev).aclrtQueryEventStatus(e->native, &st), "aclrtQueryEventStatus");
    return st == event_recorded_status::complete;
  }
  static void synchronize(event_handle e) {
    e->dev->check(entered(*e->dev).aclrtSynchronizeEvent(e->native), "aclrtSynchronizeEvent");
  }
  /** aclrtSynchronizeEventWithTimeout (ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, errc::timeout). */
  static void synchronize_for(event_handle e, std::chrono::microseconds timeout) {
    e->dev->check(entered(*e->dev).aclrtSynchronizeEventWithTimeout(e->native, timeout_ms(timeout)),
                  "aclrtSynchronizeEventWithTimeout");
  }
  static float elapsed_ms(event_handle start, event_handle end) {
    float ms = 0;
    start->dev->check(entered(*start->dev).aclrtEventElapsedTime(&ms, start->native, end->native),
                      "aclrtEventElapsedTime");
    return ms;
  }

  static device_type& device_of(event_handle e) noexcept { return *e->dev; }

  /** The aclrtEvent under keel's record. */
  static acl::event_handle to_native(event_handle e) noexcept {
    mark(e->foreign);  // another library may record it in its capture now
    return e->native;
  }
  /**
   * The event form of the stream's from_native. ACL cannot be asked an
   * event's flags: a new record takes @p flags (default when not said); a
   * record keel has refuses other flags (they are read without a lock).
   */
  static event_handle from_native(device_type& dev, acl::event_handle native, adoption how, handle_tag<event_handle>,
                                  const char* api, std::optional<keel::event_flags> flags) {
    const event_handle e = dev.events_.find_or_make(
        native, how, api, "event",
        [&] {
          auto box = std::make_unique<event_box>();
          box->native = native;
          box->dev = &dev;
          box->flags = flags.value_or(keel::event_flags::default_);
          return box;
        },
        [&](const event_box& box) {
          if (flags && box.flags != *flags)
            throw_error(keel::errc::invalid_parameter, api,
                        "keel knows this aclrtEvent with other flags (forget_event it first if it was remade)");
        });
    mark(e->foreign);
    return e;
  }
  /** The owner gives the ACL event up: the record goes to the device, until forget_event. */
  static acl::event_handle release_native(event_handle e) noexcept {
    e->dev->events_.give_to_device(e);
    mark(e->foreign);
    return e->native;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
