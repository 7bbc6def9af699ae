// SPDX-License-Identifier: Apache-2.0
// Events on every backend (see test_support.hpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;

KEEL_BACKEND_TEST("event: RAII checklist, every field after moves", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  event empty;
  CHECK_FALSE(empty);
  event a{dev, keel::event_flags::timing};
  auto* const native = a.get();
  CHECK(a.flags() == keel::event_flags::timing);
  event b{std::move(a)};
  CHECK(b.get() == native);
  CHECK_FALSE(a);
  KEEL_REQUIRE_ERROR(a.query(), errc::invalid_handle, "moved from");
  event c{dev};
  c = std::move(b);
  CHECK(c.get() == native);
  CHECK(c.flags() == keel::event_flags::timing);
  swap(b, c);
  CHECK(b.get() == native);
  CHECK_FALSE(c);
  auto* raw = b.release();
  CHECK_FALSE(b);
  auto adopted = event::adopt(raw);
  CHECK(adopted.get() == native);
  auto view = event_ref::adopt(adopted.get());
  CHECK(view.native_handle() == native);
  CHECK(view.flags() == keel::event_flags::timing);
  adopted.reset();
  CHECK_FALSE(adopted);
  KEEL_REQUIRE_ERROR(event_ref::adopt(nullptr), errc::null_parameter, "null event");
}

KEEL_BACKEND_TEST("event: a waiting stream runs later work after the recorded position", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  stream producer{dev}, consumer{dev};
  event e{dev};
  keel_test::gate g;
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

KEEL_BACKEND_TEST("event: waiting on a never-recorded default event does not block", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  event e{dev};
  CHECK(e.query());
  s.wait(e);
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);
}

KEEL_BACKEND_TEST("event: elapsed time between timing events", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  event start{dev, keel::event_flags::timing}, stop{dev, keel::event_flags::timing};
  event plain{dev};
  if (TestType::is_host)  // ACL reports an unrecorded event as an invalid parameter
    KEEL_REQUIRE_ERROR(keel::elapsed_time(start.ref(), stop.ref()), errc::invalid_state, "has not completed");
  start.record(s);
  s.launch_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  stop.record(s);
  stop.synchronize();
  const float ms = keel::elapsed_time(start.ref(), stop.ref());
  CHECK(ms >= 1.5f);
  CHECK(ms < 1000.0f);
  plain.record(s);
  s.synchronize();
  KEEL_REQUIRE_ERROR(keel::elapsed_time(start.ref(), plain.ref()), errc::invalid_parameter, "timing");
}

KEEL_BACKEND_TEST("event: external events stay signalled until reset, and a wait may precede the record",
                  "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
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
  KEEL_REQUIRE_ERROR(b.reset_event(plain), errc::invalid_parameter, "only external events");
}

KEEL_BACKEND_TEST("event: external events are a limited resource", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  std::vector<event> events;
  bool limited = false;
  for (int i = 0; i < 1000 && !limited; ++i) {
    try {
      events.emplace_back(dev, keel::event_flags::external);
    } catch (const keel::error& e) {
      INFO(e.what());
      CHECK(keel_test::is(e.code(), errc::resource_limit));
      limited = true;
    }
  }
  CHECK(limited);
  events.pop_back();
  events.emplace_back(dev, keel::event_flags::external);  // one released, one available again
  event fine{dev};  // default events are not limited
}

KEEL_BACKEND_TEST("event: a pool reuses external events", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  external_event_pool pool{dev, 2};
  {
    auto loan = pool.acquire(s);
    loan.record(s);
    s.synchronize();
    CHECK(loan.query());
    auto second = pool.acquire(s);
    KEEL_REQUIRE_ERROR(pool.acquire(s), errc::resource_limit, "on loan");
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

KEEL_BACKEND_TEST("event: a pool destroyed before its loans: the loans still work, then destroy their events",
                  "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  // How many external events the device can still make (each made one is destroyed again).
  auto external_left = [&] {
    std::vector<event> made;
    for (int i = 0; i < 1000; ++i) {
      try {
        made.emplace_back(dev, keel::event_flags::external);
      } catch (const keel::error& e) {
        INFO(e.what());
        CHECK(keel_test::is(e.code(), errc::resource_limit));
        break;
      }
    }
    return made.size();
  };
  const std::size_t left_before = external_left();
  stream s{dev}, t{dev};
  auto pool = std::make_unique<external_event_pool>(dev, 3);
  auto loan = pool->acquire(s);
  { auto returned = pool->acquire(s); }
  CHECK(pool->idle() == 1);
  pool.reset();  // the idle event is destroyed; the loan keeps the books alive (ASan: no use after free)
  CHECK(loan);
  keel_test::gate g;
  g.hold(s.ref());
  int ran = 0;
  loan.record(s);
  t.wait(loan);
  t.launch_host([&] { ++ran; });
  g.open();
  t.synchronize();
  CHECK(ran == 1);
  CHECK(loan.query());
  auto moved = std::move(loan);
  { auto gone = std::move(moved); }  // returned to a closed pool: destroyed, not kept
  CHECK_FALSE(moved);
  s.synchronize();
  CHECK(external_left() == left_before);  // every event of the pool went back to the device
}

KEEL_BACKEND_TEST("event: destroying an event a pending wait uses keeps it alive", "[runtime][event]") {
  KEEL_USING_BACKEND(TestType);
  stream a{dev}, b{dev};
  keel_test::gate g;
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
