// SPDX-License-Identifier: Apache-2.0
// The checked layer's event rules: a plain record inside a capture is an
// edge the capture remembers, a capturing stream waits only on events of its
// own capture (or external ones), a stream that waits on an event recorded in
// a capture joins it, only external events are reset, an event recorded in
// a capture is not queried or synchronized where the capture's mode refuses
// it. Included by checked/backend.hpp.
#pragma once

#include "keel/runtime/checked/backend.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond KEEL_BACKEND_OPERATIONS
template <class Native>
void backend<Native>::record(event_handle e, stream_handle s) {
  static constexpr const char* api = "keel::event::record";
  auto& sb = N::books(s);
  auto& eb = N::books(e);
  auto& db = N::books(N::device_of(s));
  if (sb.redirect.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(db.m);
    if (!sb.session) refuse_if_updating(s, task_kind::event, api);
    if (sb.session) {
      if (N::flags_of(e) == event_flags::external)  // a signal is a task of the model
        return issue_locked(lock, s, task_kind::event, api, [&] { N::captured_record(e, s); });
      capture_books<stream_handle>& c = *sb.session;
      check_may_issue(db, s, api);
      if (c.group_open && db.group_stream == s)
        ::keel::detail::throw_composed(errc::capture_violation, api,
                                       {"only operator launches may be marked into a task group, not an event record; ",
                                        detail::describe_capture(c, N::id_of(s))});
      N::captured_record(e, s);  // a plain record is an edge, not a task
      eb.session = sb.session;
      eb.lane = sb.lane;
      eb.position = c.lanes[sb.lane].count;
      eb.captured.store(true, std::memory_order_release);
      return;
    }
  }
  if (eb.captured.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(db.m);
    eb.session.reset();
    eb.captured.store(false, std::memory_order_release);
  }
  N::record(e, s);
}

template <class Native>
void backend<Native>::wait(stream_handle s, event_handle e) {
  static constexpr const char* api = "keel::stream::wait";
  auto& sb = N::books(s);
  auto& eb = N::books(e);
  auto& db = N::books(N::device_of(s));
  if (N::flags_of(e) == event_flags::external) {
    if (sb.redirect.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lock(db.m);
      if (!sb.session) refuse_if_updating(s, task_kind::event, api);
      if (sb.session) return issue_locked(lock, s, task_kind::event, api, [&] { N::captured_wait(s, e); });
    }
    return N::wait(s, e);
  }
  if (sb.redirect.load(std::memory_order_acquire) != 0 || eb.captured.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(db.m);
    if (!sb.session) refuse_if_updating(s, task_kind::event, api);
    const bool from_capture = eb.captured.load(std::memory_order_relaxed) && eb.session && eb.session->active;
    if (sb.session) {
      capture_books<stream_handle>& c = *sb.session;
      check_may_issue(db, s, api);
      if (c.group_open && db.group_stream == s)
        ::keel::detail::throw_composed(errc::capture_violation, api,
                                       {"only operator launches may be marked into a task group, not an event wait; ",
                                        detail::describe_capture(c, N::id_of(s))});
      if (!from_capture || eb.session.get() != &c)
        ::keel::detail::throw_composed(
            errc::capture_violation, api,
            {"a capturing stream may wait only on events recorded in the same capture (or on external "
             "events); ",
             detail::describe_capture(c, N::id_of(s))});
      N::captured_wait(s, e);
      // Join: the waiting lane depends on the recording lane up to there.
      auto& src = c.lanes[eb.lane];
      src.joined = std::max(src.joined, eb.position);
      return;
    }
    if (from_capture) return fork_locked(db, s, e, api);
  }
  N::wait(s, e);
}

template <class Native>
void backend<Native>::wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
  if (N::books(s).redirect.load(std::memory_order_acquire) != 0)
    ::keel::detail::throw_composed(errc::capture_violation, "keel::stream::wait",
                                   {"a wait with a timeout cannot be captured or staged into an update (stream #",
                                    N::id_of(s), " is capturing or updating); wait without a timeout"});
  N::wait_for(s, e, timeout);
}

template <class Native>
void backend<Native>::reset(stream_handle s, event_handle e) {
  static constexpr const char* api = "keel::stream::reset";
  if (N::flags_of(e) != event_flags::external)
    throw_error(errc::invalid_parameter, api, "only external events are reset; default and timing events are not");
  if (N::books(s).redirect.load(std::memory_order_acquire) == 0) return N::reset(s, e);
  issue(s, task_kind::event, api, [&] { N::captured_reset(s, e); });
}

template <class Native>
bool backend<Native>::query(event_handle e) {
  check_event_safe(e, "keel::event::query", "querying an event recorded inside the capture");
  return N::query(e);
}
template <class Native>
void backend<Native>::synchronize(event_handle e) {
  check_event_safe(e, "keel::event::synchronize", "synchronizing an event recorded inside the capture");
  N::synchronize(e);
}
template <class Native>
void backend<Native>::synchronize_for(event_handle e, std::chrono::microseconds timeout) {
  check_event_safe(e, "keel::event::synchronize", "synchronizing an event recorded inside the capture");
  N::synchronize_for(e, timeout);
}

template <class Native>
float backend<Native>::elapsed_ms(event_handle start, event_handle end) {
  if (N::flags_of(start) != event_flags::timing || N::flags_of(end) != event_flags::timing)
    throw_error(errc::invalid_parameter, "keel::event::elapsed_time",
                "both events must be created with event_flags::timing");
  return N::elapsed_ms(start, end);
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
