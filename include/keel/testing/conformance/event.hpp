// SPDX-License-Identifier: Apache-2.0
// The event layer's conformance tests (they use streams too): ownership of
// events, waits and records, timing, external events and their pool, and a
// stream's error state.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>
#include <string>

#include "keel/runtime/runtime.hpp"
#include "keel/testing/conformance/support.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/// @cond
namespace event_tests {

template <class F>
void stream_a_failing_host_callable_puts_the_stream_in_its_error_state() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream s{dev};
  gate g;
  g.hold(s.ref());
  int after = 0;
  s.launch_host([] { throw std::runtime_error("kernel exploded"); });
  s.launch_host([&] { ++after; });  // skipped: issued after the failure, before the report
  event e{dev};
  e.record(s);  // control work still runs, so waiters elsewhere never deadlock
  g.open();
  e.synchronize();
  KEEL_TESTING_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");
  KEEL_TESTING_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");  // query keeps the state
  KEEL_TESTING_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "kernel exploded");
  CHECK(after == 0);
  // synchronize cleared the state: new work runs again.
  s.launch_host([&] { ++after; });
  s.synchronize();
  CHECK(after == 1);
  CHECK(s.query());
}

template <class F>
void event_raii_checklist_every_field_after_moves() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  event empty;
  CHECK_FALSE(empty);
  event a{dev, keel::event_flags::timing};
  using native_t = typename event::native_handle_type;
  const native_t native = a.native_handle();
  CHECK(native != native_t{});
  CHECK(a.flags() == keel::event_flags::timing);
  event b{std::move(a)};
  CHECK(b.native_handle() == native);
  CHECK_FALSE(a);
  KEEL_TESTING_REQUIRE_ERROR(a.query(), errc::invalid_handle, "moved from");
  event c{dev};
  c = std::move(b);
  CHECK(c.native_handle() == native);
  CHECK(c.flags() == keel::event_flags::timing);
  swap(b, c);
  CHECK(b.native_handle() == native);
  CHECK_FALSE(c);
  CHECK(b != c);
  const native_t raw = b.release();
  CHECK_FALSE(b);
  CHECK(raw == native);
  auto adopted = event::from_native_handle(dev, raw, keel::event_flags::timing);
  CHECK(adopted.native_handle() == native);
  event_ref view{dev, adopted.native_handle()};
  CHECK(view == adopted);
  CHECK(view.native_handle() == native);
  CHECK(view.flags() == keel::event_flags::timing);  // keel knows the event: its flags need not be said
  KEEL_TESTING_REQUIRE_ERROR((event_ref{dev, native, keel::event_flags::external}), errc::invalid_parameter,
                             "other flags");
  adopted.reset();
  CHECK_FALSE(adopted);
  KEEL_TESTING_REQUIRE_ERROR((event_ref{dev, native_t{}}), errc::null_parameter, "null event");
}

template <class F>
void event_a_waiting_stream_runs_later_work_after_the_recorded_position() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream producer{dev}, consumer{dev};
  event e{dev};
  gate g;
  g.hold(producer.ref());
  std::atomic<int> produced{0};
  int seen_by_consumer = -1;
  producer.launch_host([&] { produced = 42; });
  e.record(producer);
  CHECK_FALSE(e.query());
  consumer.wait(e);
  consumer.launch_host([&] { seen_by_consumer = produced; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(seen_by_consumer == -1);  // still waiting on the gate
  g.open();
  consumer.synchronize();
  CHECK(seen_by_consumer == 42);
  CHECK(e.query());
  e.synchronize();
}

template <class F>
void event_waiting_on_a_never_recorded_default_event_does_not_block() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream s{dev};
  event e{dev};
  CHECK(e.query());
  s.wait(e);
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);
}

template <class F>
void event_elapsed_time_between_timing_events() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream s{dev};
  event start{dev, keel::event_flags::timing}, stop{dev, keel::event_flags::timing};
  event plain{dev};
  if (F::is_host)  // ACL reports an unrecorded event as an invalid parameter
    KEEL_TESTING_REQUIRE_ERROR(keel::elapsed_time(start.ref(), stop.ref()), errc::invalid_state, "has not completed");
  start.record(s);
  s.launch_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  stop.record(s);
  stop.synchronize();
  const float ms = keel::elapsed_time(start.ref(), stop.ref());
  CHECK(ms >= 1.5f);
  CHECK(ms < 1000.0f);
  plain.record(s);
  s.synchronize();
  KEEL_TESTING_REQUIRE_ERROR(keel::elapsed_time(start.ref(), plain.ref()), errc::invalid_parameter, "timing");
}

template <class F>
void event_external_events_stay_signalled_until_reset_and_a_wait_may_precede_the_record() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream a{dev}, b{dev};
  event ext{dev, keel::event_flags::external};
  CHECK(ext.flags() == keel::event_flags::external);
  CHECK_FALSE(ext.query());
  std::atomic<int> after{0};
  b.wait(ext);  // issued before any record: blocks until signalled
  b.launch_host([&] { ++after; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(after == 0);
  CHECK_FALSE(b.query());  // still waiting at the event
  ext.record(a);
  b.synchronize();
  CHECK(after == 1);
  CHECK(ext.query());
  b.wait(ext);  // still signalled: passes
  b.launch_host([&] { ++after; });
  b.synchronize();
  CHECK(after == 2);
  b.reset_event(ext);
  b.synchronize();
  CHECK_FALSE(ext.query());
  event plain{dev};
  KEEL_TESTING_REQUIRE_ERROR(b.reset_event(plain), errc::invalid_parameter, "only external events");
}

template <class F>
void event_external_events_are_a_limited_resource() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  std::vector<event> events;
  bool limited = false;
  for (int i = 0; i < 1000 && !limited; ++i) {
    try {
      events.emplace_back(dev, keel::event_flags::external);
    } catch (const keel::error& e) {
      INFO(e.what());
      CHECK(is(e.code(), errc::resource_limit));
      limited = true;
    }
  }
  CHECK(limited);
  events.pop_back();
  events.emplace_back(dev, keel::event_flags::external);  // one released, one available again
  event fine{dev};  // default events are not limited
}

template <class F>
void event_a_pool_reuses_external_events() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream s{dev};
  external_event_pool pool{dev, 2};
  {
    auto loan = pool.acquire(s);
    loan.record(s);
    s.synchronize();
    CHECK(loan.query());
    auto second = pool.acquire(s);
    KEEL_TESTING_REQUIRE_ERROR(pool.acquire(s), errc::resource_limit, "on loan");
    CHECK(pool.size() == 2);
    CHECK(pool.idle() == 0);
  }
  CHECK(pool.idle() == 2);
  auto again = pool.acquire(s);  // reused, and reset in stream order before handed out
  s.synchronize();
  CHECK(pool.size() == 2);  // no new event was made
  CHECK(pool.idle() == 1);
  CHECK_FALSE(again.query());
  auto moved = std::move(again);
  CHECK_FALSE(again);
  CHECK(moved);
}

template <class F>
void event_destroying_an_event_a_pending_wait_uses_keeps_it_alive() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_EVENTS(F);
  stream a{dev}, b{dev};
  gate g;
  g.hold(a.ref());
  int ran = 0;
  {
    event e{dev};
    e.record(a);
    b.wait(e);
    b.launch_host([&] { ++ran; });
  }  // the handle is gone; the record and the wait still hold the event
  g.open();
  b.synchronize();
  CHECK(ran == 1);
}

}  // namespace event_tests
/// @endcond

/**
 * @brief Registers the event layer's tests for fixture F, each named "<test> - <suffix>";
 * F supplies the stream and event layers. Tests that need asynchronous work are left out when
 * F::asynchronous is false. Call it before Catch2 runs (KEEL_BACKEND_CONFORMANCE does).
 */
template <class F>
void register_event_tests(const std::string& suffix) {
  KEEL_TESTING_ADD_ASYNC(F, event_tests::stream_a_failing_host_callable_puts_the_stream_in_its_error_state,
      "stream: a failing host callable puts the stream in its error state", "[runtime][stream]");
  KEEL_TESTING_ADD(F, event_tests::event_raii_checklist_every_field_after_moves,
      "event: RAII checklist, every field after moves", "[runtime][event]");
  KEEL_TESTING_ADD_ASYNC(F, event_tests::event_a_waiting_stream_runs_later_work_after_the_recorded_position,
      "event: a waiting stream runs later work after the recorded position", "[runtime][event]");
  KEEL_TESTING_ADD(F, event_tests::event_waiting_on_a_never_recorded_default_event_does_not_block,
      "event: waiting on a never-recorded default event does not block", "[runtime][event]");
  KEEL_TESTING_ADD(F, event_tests::event_elapsed_time_between_timing_events,
      "event: elapsed time between timing events", "[runtime][event]");
  KEEL_TESTING_ADD_ASYNC(F, event_tests::event_external_events_stay_signalled_until_reset_and_a_wait_may_precede_the_record,
      "event: external events stay signalled until reset, and a wait may precede the record", "[runtime][event]");
  KEEL_TESTING_ADD(F, event_tests::event_external_events_are_a_limited_resource,
      "event: external events are a limited resource", "[runtime][event]");
  KEEL_TESTING_ADD(F, event_tests::event_a_pool_reuses_external_events,
      "event: a pool reuses external events", "[runtime][event]");
  KEEL_TESTING_ADD_ASYNC(F, event_tests::event_destroying_an_event_a_pending_wait_uses_keeps_it_alive,
      "event: destroying an event a pending wait uses keeps it alive", "[runtime][event]");
}

} KEEL_END_NAMESPACE  // namespace keel::testing
