// SPDX-License-Identifier: Apache-2.0
// Events: creation with CANN's flags (timed, external), destruction, record,
// reset, query, synchronize and elapsed time. Each aclrtEvent is a host
// backend event.
#include <chrono>
#include <cstdint>
#include <mutex>

#include "detail/capture_rules.hpp"
#include "detail/ipc_event.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

hb::event_handle event_of(aclrtEvent e, const char* function) {
  if (e == nullptr) throw_rule(errc::null_parameter, function, "event is null");
  if (is_ipc_event(e))  // the calls that take one hand it to ipc_event.cpp first
    throw_status(ACL_ERROR_INVALID_PARAM, std::string(function) + " takes no ACL_EVENT_IPC event");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().events.count(e)) throw_rule(errc::invalid_handle, function, "event is not a live aclrtEvent");
  return static_cast<hb::event_handle>(e);
}

std::int32_t event_device(hb::event_handle e) noexcept { return device_id(hb::device_of(e)); }

// CANN's multi-device rule (dev_guide/05_multi_device_programming.md): an
// event records and is waited on by streams of its own device only.
void require_event_on_stream_device(hb::event_handle e, hb::stream_handle s) {
  const std::int32_t event_on = event_device(e), stream_on = stream_device(s);
  if (event_on != stream_on)
    throw_status(ACL_ERROR_RT_STREAM_CONTEXT, "the event is on device " + std::to_string(event_on) +
                                                  ", the stream on device " + std::to_string(stream_on));
}

void require_ex_sync_event(aclrtEvent e, const char* function) {
  bool ex = false;
  {
    std::lock_guard<std::mutex> lock(book().m);
    ex = book().ex_events.count(e) != 0;
  }
  if (!ex || hb::flags_of(static_cast<hb::event_handle>(e)) != keel::event_flags::default_)
    throw_rule(errc::invalid_parameter, function,
               "an external record or wait takes an event aclrtCreateEventExWithFlag made with ACL_EVENT_SYNC "
               "(or one made with ACL_EVENT_EXTERNAL)");
}

namespace {
aclError create_event(aclrtEvent* event, keel::event_flags flags, const char* api, bool ex = false) {
  return guarded(api, call::create_event, [&] {
    require(event, api, "event");
    hb::event_handle e = hb::create_event(dev(), flags);
    std::lock_guard<std::mutex> lock(book().m);
    try {
      book().events.insert(e);
      if (ex) book().ex_events.insert(e);
    } catch (...) {
      book().events.erase(e);
      hb::destroy_event(e);
      throw;
    }
    *event = e;
  });
}
keel::event_flags flags_from(std::uint32_t flag, bool allow_external, const char* api) {
  if (flag == ACL_EVENT_EXTERNAL) {
    if (!allow_external) throw_rule(errc::invalid_parameter, api, "ACL_EVENT_EXTERNAL is not accepted here");
    return keel::event_flags::external;
  }
  if ((flag & ACL_EVENT_EXTERNAL) != 0)
    throw_rule(errc::invalid_parameter, api, "ACL_EVENT_EXTERNAL cannot be combined with other flags");
  const std::uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                              ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_IPC;
  if ((flag & ~known) != 0) throw_rule(errc::invalid_parameter, api, "unknown event flag bits");
  return (flag & ACL_EVENT_TIME_LINE) != 0 ? keel::event_flags::timing : keel::event_flags::default_;
}
}  // namespace

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

namespace {
// A plain record, in the emulation's capture books too: an ACL_EVENT_EXTERNAL
// event's record is a task of the stream (its signal), any other event's
// record is where the capture's streams may join (cann_rules::note_record).
void record_with_rules(aclrtEvent event, hb::event_handle e, aclrtStream stream, hb::stream_handle s) {
  cann_rules::check_issue(stream);
  hb::record(e, s);
  if (hb::flags_of(e) == keel::event_flags::external) {
    cann_rules::note_task(stream);
  } else {
    cann_rules::note_record(event, stream);
  }
}
}  // namespace

extern "C" {

// aclrtCreateEvent's events can be timed (07_event_management.md).
aclError aclrtCreateEvent(aclrtEvent* event) {
  return create_event(event, keel::event_flags::timing, "aclrtCreateEvent");
}
aclError aclrtCreateEventWithFlag(aclrtEvent* event, std::uint32_t flag) {
  keel::event_flags flags{};
  const aclError e = guarded("aclrtCreateEventWithFlag", call::other,
                             [&] { flags = flags_from(flag, true, "aclrtCreateEventWithFlag"); });
  return e != ACL_SUCCESS ? e : create_event(event, flags, "aclrtCreateEventWithFlag");
}
aclError aclrtCreateEventExWithFlag(aclrtEvent* event, std::uint32_t flag) {
  if ((flag & ACL_EVENT_IPC) != 0) return create_ipc_event(event, flag, "aclrtCreateEventExWithFlag");
  keel::event_flags flags{};
  const aclError e = guarded("aclrtCreateEventExWithFlag", call::other,
                             [&] { flags = flags_from(flag, false, "aclrtCreateEventExWithFlag"); });
  return e != ACL_SUCCESS ? e : create_event(event, flags, "aclrtCreateEventExWithFlag", true);
}
aclError aclrtDestroyEvent(aclrtEvent event) {
  if (is_ipc_event(event)) return destroy_ipc_event(event);
  return guarded("aclrtDestroyEvent", call::other, [&] {
    hb::event_handle e = event_of(event, "aclrtDestroyEvent");
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().events.erase(event);
      book().ex_events.erase(event);
    }
    hb::destroy_event(e);
    cann_rules::note_event_destroyed(event);
  });
}
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  if (is_ipc_event(event)) return record_ipc_event(event, stream, "aclrtRecordEvent");
  return guarded("aclrtRecordEvent", call::other, [&] {
    hb::event_handle e = event_of(event, "aclrtRecordEvent");
    hb::stream_handle s = stream_of(stream, "aclrtRecordEvent");
    require_event_on_stream_device(e, s);
    record_with_rules(event, e, stream, s);
  });
}
aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, std::uint32_t flag) {
  static constexpr const char* api = "aclrtRecordEventWithFlag";
  return guarded(api, call::other, [&] {
    hb::event_handle e = event_of(event, api);
    hb::stream_handle s = stream_of(stream, api);
    require_event_on_stream_device(e, s);
    if (flag != ACL_EVENT_RECORD_DEFAULT && flag != ACL_EVENT_RECORD_EXTERNAL)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_EVENT_RECORD_DEFAULT or ACL_EVENT_RECORD_EXTERNAL");
    // ACL_EVENT_RECORD_EXTERNAL signals an ACL_EVENT_EXTERNAL event; on an
    // ACL_EVENT_SYNC event of aclrtCreateEventExWithFlag it is a model's
    // record visible outside the model (capture only).
    if (flag == ACL_EVENT_RECORD_EXTERNAL && hb::flags_of(e) != keel::event_flags::external) {
      require_ex_sync_event(event, api);
      cann_rules::check_issue(stream);
      hb::record_external(e, s);
      cann_rules::note_task(stream);
      return;
    }
    record_with_rules(event, e, stream, s);
  });
}
aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  return guarded("aclrtResetEvent", call::other, [&] {
    hb::stream_handle s = stream_of(stream, "aclrtResetEvent");
    hb::event_handle e = event_of(event, "aclrtResetEvent");
    cann_rules::check_issue(stream);
    hb::reset(s, e);
    cann_rules::note_task(stream);
  });
}
aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  if (is_ipc_event(event)) return query_ipc_event(event, status, "aclrtQueryEventStatus");
  return guarded("aclrtQueryEventStatus", call::other, [&] {
    require(status, "aclrtQueryEventStatus", "status");
    hb::event_handle e = event_of(event, "aclrtQueryEventStatus");
    cann_rules::check_unsafe_event(event, this_thread_state().capture_mode, "querying an event recorded in a capture");
    *status = hb::query(e) ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  });
}
aclError aclrtSynchronizeEvent(aclrtEvent event) {
  if (is_ipc_event(event)) return synchronize_ipc_event(event, "aclrtSynchronizeEvent");
  return guarded("aclrtSynchronizeEvent", call::other, [&] {
    hb::event_handle e = event_of(event, "aclrtSynchronizeEvent");
    cann_rules::check_unsafe_event(event, this_thread_state().capture_mode,
                                   "synchronizing an event recorded in a capture");
    hb::synchronize(e);
  });
}
aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeEventWithTimeout";
  return guarded(api, call::event_sync, [&] {
    hb::event_handle e = event_of(event, api);
    cann_rules::check_unsafe_event(event, this_thread_state().capture_mode,
                                   "synchronizing an event recorded in a capture");
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::synchronize_for(e, budget);
    } else {
      hb::synchronize(e);
    }
  });
}
// The microsecond its last record completed, on the host's monotonic clock
// (CANN: since the device's system started). The stamp is taken for events
// that can be timed (aclrtCreateEvent, ACL_EVENT_TIME_LINE), as for
// aclrtEventElapsedTime.
aclError aclrtEventGetTimestamp(aclrtEvent event, std::uint64_t* timestamp) {
  static constexpr const char* api = "aclrtEventGetTimestamp";
  return guarded(api, call::other, [&] {
    require(timestamp, api, "timestamp");
    hb::event_handle e = event_of(event, api);
    if (hb::flags_of(e) != keel::event_flags::timing)
      throw_status(ACL_ERROR_INVALID_PARAM, "the event cannot be timed (aclrtCreateEvent or ACL_EVENT_TIME_LINE)");
    const auto mark = e->last_record();
    if (!mark || !mark->done.load(std::memory_order_acquire))
      throw_status(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "the event has no completed record");
    *timestamp = static_cast<std::uint64_t>(mark->stamp_ns.load(std::memory_order_relaxed)) / 1000u;
  });
}
aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return guarded("aclrtEventElapsedTime", call::other, [&] {
    require(ms, "aclrtEventElapsedTime", "ms");
    *ms = hb::elapsed_ms(event_of(startEvent, "aclrtEventElapsedTime"), event_of(endEvent, "aclrtEventElapsedTime"));
  });
}

}  // extern "C"
