// SPDX-License-Identifier: Apache-2.0
// The checked layer's event rules: a plain record inside a capture is an
// edge the capture remembers, a capturing stream waits only on events of its
// own capture (or external ones), a stream that waits on an event recorded in
// a capture joins it, only external events are reset, an event recorded in
// a capture is not queried or synchronized where the capture's mode refuses
// it. Included by checked/backend.hpp.
#pragma once

#include <algorithm>
#include <string>

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
  // One relaxed load on the record path; the store happens once per event.
  if (!eb.plain_recorded.load(std::memory_order_relaxed)) eb.plain_recorded.store(true, std::memory_order_relaxed);
  if (sb.redirect.load(std::memory_order_acquire) != 0) {
    books_lock lock(db.m);
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
    std::lock_guard<books_mutex> lock(db.m);
    eb.session.reset();
    eb.captured.store(false, std::memory_order_release);
  }
  if (db.order_tracking.load(std::memory_order_relaxed)) {
    // Under the lock, so that marks follow the records' order on the stream.
    std::lock_guard<books_mutex> lock(db.m);
    N::record(e, s);
    eb.order_stream = N::id_of(s);
    eb.order_mark = ++sb.records;
    return;
  }
  N::record(e, s);
}

template <class Native>
std::uint64_t backend<Native>::record_ordered(event_handle e, stream_handle s) {
  auto& db = N::books(N::device_of(s));
  db.order_tracking.store(true, std::memory_order_relaxed);
  record(e, s);
  std::lock_guard<books_mutex> lock(db.m);
  const auto& eb = N::books(e);
  // A record made into a capture orders nothing outside it: no wait reaches its mark.
  if (eb.captured.load(std::memory_order_relaxed) || eb.order_stream != N::id_of(s)) return ~std::uint64_t{0};
  return eb.order_mark;
}

template <class Native>
bool backend<Native>::waited_for(stream_handle s, stream_handle on, std::uint64_t mark) noexcept {
  const std::uint64_t on_id = N::id_of(on);
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  for (const auto& w : N::books(s).waited)
    if (w.first == on_id) return w.second >= mark;
  return false;
}

// A plain wait's order, for the pool's sharing rule; caller holds the
// device books' lock. Forgetting one (no room) only makes that rule stricter.
template <class Native>
void backend<Native>::note_waited(stream_handle s, const event_books<stream_handle>& eb) noexcept {
  if (eb.order_stream == 0 || eb.order_stream == N::id_of(s)) return;
  auto& waited = N::books(s).waited;
  for (auto& w : waited) {
    if (w.first != eb.order_stream) continue;
    w.second = std::max(w.second, eb.order_mark);
    return;
  }
  // A few streams are remembered (the oldest is forgotten first).
  if (waited.size() >= 16) waited.erase(waited.begin());
  try {
    waited.emplace_back(eb.order_stream, eb.order_mark);
  } catch (...) {
  }
}

template <class Native>
void backend<Native>::wait(stream_handle s, event_handle e) {
  static constexpr const char* api = "keel::stream::wait";
  auto& sb = N::books(s);
  auto& eb = N::books(e);
  auto& db = N::books(N::device_of(s));
  if (N::flags_of(e) == event_flags::external) {
    if (sb.redirect.load(std::memory_order_acquire) != 0) {
      books_lock lock(db.m);
      if (!sb.session) refuse_if_updating(s, task_kind::event, api);
      if (sb.session) return issue_locked(lock, s, task_kind::event, api, [&] { N::captured_wait(s, e); });
    }
    return N::wait(s, e);
  }
  if (sb.redirect.load(std::memory_order_acquire) != 0 || eb.captured.load(std::memory_order_acquire)) {
    std::lock_guard<books_mutex> lock(db.m);
    if (!sb.session) refuse_if_updating(s, task_kind::event, api);
    const bool from_capture = eb.captured.load(std::memory_order_relaxed) && eb.session && eb.session->active;
    if (sb.session) {
      capture_books<stream_handle>& c = *sb.session;
      check_may_issue(db, s, api);
      if (c.group_open && db.group_stream == s)
        ::keel::detail::throw_composed(errc::capture_violation, api,
                                       {"only operator launches may be marked into a task group, not an event wait; ",
                                        detail::describe_capture(c, N::id_of(s))});
      // rule wait_on_other_capture: the emulation decides it too (tests/witness/ disables it here)
      if (!from_capture || eb.session.get() != &c)
        ::keel::detail::throw_composed(
            errc::capture_violation, api,
            {"a capturing stream may wait only on events recorded in the same capture, on external "
             "events, or, with event_operation::external, on a record made outside the model; ",
             detail::describe_capture(c, N::id_of(s))});
      N::captured_wait(s, e);
      // Join: the waiting lane depends on the recording lane up to there.
      auto& src = c.lanes[eb.lane];
      src.joined = std::max(src.joined, eb.position);
      return;
    }
    if (from_capture) return fork_locked(db, s, e, api);
  }
  if (db.order_tracking.load(std::memory_order_relaxed)) {
    std::lock_guard<books_mutex> lock(db.m);
    N::wait(s, e);
    note_waited(s, eb);
    return;
  }
  N::wait(s, e);
}

// The rules of an external operation (07_event_management.md,
// aclrtRecordEventWithFlag / aclrtStreamWaitEventWithFlag): a default event,
// a capturing stream, no plain record of the event before, and one capture
// either records or waits on the event externally, never both. Issues the
// operation into the capture; a refused one changes nothing.
template <class Native>
template <class Issue>
void backend<Native>::external_operation(event_handle e, stream_handle s, bool record, const char* api,
                                         Issue&& issue_native) {
  const char* what = record ? "an external record" : "an external wait";
  if (N::flags_of(e) != event_flags::default_)
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {what, " (event_operation::external) takes an event made with the default flags; ",
         (N::flags_of(e) == event_flags::external ? "an external event's plain record and wait already cross models"
                                                  : "a timing event cannot cross models")});
  auto& sb = N::books(s);
  auto& eb = N::books(e);
  auto& db = N::books(N::device_of(s));
  books_lock lock(db.m);
  if (!sb.session) {
    refuse_if_updating(s, task_kind::event, api);
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {what,
                                    " (event_operation::external) is made only on a capturing stream (or one bound "
                                    "to a model being built); ",
                                    detail::describe_stream(N::id_of(s)), " is not capturing: record or wait plainly"});
  }
  if (eb.plain_recorded.load(std::memory_order_relaxed))
    ::keel::detail::throw_composed(errc::invalid_state, api,
                                   {what,
                                    " (event_operation::external) takes an event no plain record has recorded "
                                    "(CANN refuses it); use another event"});
  auto& uses = eb.external_uses;
  uses.erase(std::remove_if(uses.begin(), uses.end(), [](const auto& u) { return u.first.expired(); }), uses.end());
  for (const auto& u : uses) {
    if (u.first.lock() == sb.session && u.second != record)
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"one capture may not both record and wait on the same event externally; this capture ",
           (u.second ? "records" : "waits on"), " it already; ", detail::describe_capture(*sb.session, N::id_of(s))});
  }
  const bool known = std::any_of(uses.begin(), uses.end(), [&](const auto& u) { return u.first.lock() == sb.session; });
  if (!known) uses.emplace_back(sb.session, record);
  try {
    issue_locked(lock, s, task_kind::event, api, std::forward<Issue>(issue_native));
  } catch (...) {
    if (!known) uses.pop_back();
    throw;
  }
}

template <class Native>
void backend<Native>::record_external(event_handle e, stream_handle s) {
  external_operation(e, s, true, "keel::event::record", [&] { N::captured_record_external(e, s); });
}

template <class Native>
void backend<Native>::wait_external(stream_handle s, event_handle e) {
  external_operation(e, s, false, "keel::stream::wait", [&] { N::captured_wait_external(s, e); });
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
