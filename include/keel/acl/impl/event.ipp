// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/event.hpp (event_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/event.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto event_calls::create_event(device_type& dev, keel::event_flags flags) -> event_handle {
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

KEEL_DECL void event_calls::destroy_event(event_handle e) noexcept {
  if (e->adopted) return;  // its maker destroys it; the record stays with the device
  e->dev->events_.remove(e->native, e);
  const auto destroy = entered(*e->dev).aclrtDestroyEvent.get();
  const status st = destroy != nullptr ? destroy(e->native) : 0;
  if (st != 0) report_error(make_status_code(st), "aclrtDestroyEvent", "the event could not be destroyed");
  delete e;
}

KEEL_DECL void event_calls::record(event_handle e, stream_handle s) {
  if (s->foreign.load(std::memory_order_relaxed)) mark(e->foreign);
  const api& a = entered(*s->dev);
  if (e->flags == keel::event_flags::external) {
    s->dev->check(a.aclrtRecordEventWithFlag(e->native, s->native, record_flags::external),
                  "aclrtRecordEventWithFlag");
  } else {
    s->dev->check(a.aclrtRecordEvent(e->native, s->native), "aclrtRecordEvent");
  }
}

KEEL_DECL void event_calls::wait(stream_handle s, event_handle e) {
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

KEEL_DECL void event_calls::wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
  static constexpr const char* api_name = "keel::stream::wait";
  if (e->flags == keel::event_flags::external)
    throw_error(keel::errc::not_supported, api_name,
                "ACL has no bounded wait on an external event (aclrtStreamWaitEventWithFlag takes timeout 0)");
  const status st = entered(*s->dev).aclrtStreamWaitEventWithTimeout(s->native, e->native, timeout_ms(timeout));
  waited_on(s, e);
  s->dev->check(st, "aclrtStreamWaitEventWithTimeout");
}

KEEL_DECL void event_calls::waited_on(stream_handle s, event_handle e) noexcept {
  if (e->foreign.load(std::memory_order_relaxed)) mark(s->foreign);
  mark(s->acl_work);
}

KEEL_DECL void event_calls::reset(stream_handle s, event_handle e) {
  s->dev->check(entered(*s->dev).aclrtResetEvent(e->native, s->native), "aclrtResetEvent");
}

KEEL_DECL auto event_calls::query(event_handle e) -> bool {
  event_recorded_status st = event_recorded_status::not_ready;
  e->dev->check(entered(*e->dev).aclrtQueryEventStatus(e->native, &st), "aclrtQueryEventStatus");
  return st == event_recorded_status::complete;
}

KEEL_DECL void event_calls::synchronize(event_handle e) {
  e->dev->check(entered(*e->dev).aclrtSynchronizeEvent(e->native), "aclrtSynchronizeEvent");
}

KEEL_DECL void event_calls::synchronize_for(event_handle e, std::chrono::microseconds timeout) {
  e->dev->check(entered(*e->dev).aclrtSynchronizeEventWithTimeout(e->native, timeout_ms(timeout)),
                "aclrtSynchronizeEventWithTimeout");
}

KEEL_DECL auto event_calls::elapsed_ms(event_handle start, event_handle end) -> float {
  float ms = 0;
  start->dev->check(entered(*start->dev).aclrtEventElapsedTime(&ms, start->native, end->native),
                    "aclrtEventElapsedTime");
  return ms;
}

KEEL_DECL auto event_calls::to_native(event_handle e) noexcept -> acl::event_handle {
  mark(e->foreign);  // another library may record it in its capture now
  return e->native;
}

KEEL_DECL auto event_calls::from_native(device_type& dev, acl::event_handle native, adoption how, handle_tag<event_handle>,
                                  const char* api, std::optional<keel::event_flags> flags) -> event_handle {
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

KEEL_DECL auto event_calls::release_native(event_handle e) noexcept -> acl::event_handle {
  e->dev->events_.give_to_device(e);
  mark(e->foreign);
  return e->native;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
