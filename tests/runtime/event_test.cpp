// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

TEST_CASE("event: RAII checklist, every field after moves", "[runtime][event]") {
  keel::host::event empty;
  CHECK_FALSE(empty);
  keel::host::event a{test_device(), keel::event_flags::timing};
  auto* const native = a.get();
  CHECK(a.flags() == keel::event_flags::timing);
  keel::host::event b{std::move(a)};
  CHECK(b.get() == native);
  CHECK_FALSE(a);
  KEEL_REQUIRE_ERROR(a.query(), errc::invalid_handle, "moved from");
  keel::host::event c{test_device()};
  auto* const native_c = c.get();
  c = std::move(b);
  CHECK(c.get() == native);
  CHECK(c.flags() == keel::event_flags::timing);
  swap(b, c);
  CHECK(b.get() == native);
  CHECK_FALSE(c);
  auto* raw = b.release();
  CHECK_FALSE(b);
  auto adopted = keel::host::event::adopt(raw);
  CHECK(adopted.get() == native);
  auto view = keel::host::event_ref::adopt(adopted.get());
  CHECK(view.native_handle() == native);
  CHECK(view.flags() == keel::event_flags::timing);
  adopted.reset();
  CHECK_FALSE(adopted);
  (void)native_c;
  KEEL_REQUIRE_ERROR(keel::host::event_ref::adopt(nullptr), errc::null_parameter, "null event");
}

TEST_CASE("event: a waiting stream runs later work after the recorded position", "[runtime][event]") {
  keel::host::stream producer{test_device()}, consumer{test_device()};
  keel::host::event e{test_device()};
  keel_test::gate g;
  g.hold(producer);
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

TEST_CASE("event: waiting on a never-recorded default event does not block", "[runtime][event]") {
  keel::host::stream s{test_device()};
  keel::host::event e{test_device()};
  CHECK(e.query());
  s.wait(e);
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);
}

TEST_CASE("event: elapsed time between timing events", "[runtime][event]") {
  keel::host::stream s{test_device()};
  keel::host::event start{test_device(), keel::event_flags::timing}, stop{test_device(), keel::event_flags::timing};
  keel::host::event plain{test_device()};
  KEEL_REQUIRE_ERROR(keel::host::elapsed_time(start, stop), errc::invalid_state, "has not completed");
  start.record(s);
  s.launch_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  stop.record(s);
  stop.synchronize();
  const float ms = keel::host::elapsed_time(start, stop);
  CHECK(ms >= 1.5f);
  CHECK(ms < 1000.0f);
  plain.record(s);
  s.synchronize();
  KEEL_REQUIRE_ERROR(keel::elapsed_time<keel::host::backend>(start, plain), errc::invalid_parameter, "timing");
}

TEST_CASE("event: external events stay signalled until reset, and a wait may precede the record",
          "[runtime][event]") {
  keel::host::stream a{test_device()}, b{test_device()};
  keel::host::event ext{test_device(), keel::event_flags::external};
  CHECK_FALSE(ext.query());
  std::atomic<int> after{0};
  b.wait(ext);  // issued before any record: blocks until signalled
  b.launch_host([&] { ++after; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(after == 0);
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
  keel::host::event plain{test_device()};
  KEEL_REQUIRE_ERROR(b.reset_event(plain), errc::invalid_parameter, "only external events");
}

TEST_CASE("event: the device limits external events; a pool reuses them", "[runtime][event]") {
  keel::host::device dev{keel::host::device_options{1, 4, 2}};
  keel::host::stream s{dev};
  {
    keel::host::event e1{dev, keel::event_flags::external}, e2{dev, keel::event_flags::external};
    CHECK(dev.live_external_events() == 2);
    KEEL_REQUIRE_ERROR((keel::host::event{dev, keel::event_flags::external}), errc::resource_limit, "external events");
    keel::host::event fine{dev};  // default events are not limited
  }
  CHECK(dev.live_external_events() == 0);

  keel::host::external_event_pool pool{dev, 2};
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
  CHECK(dev.live_external_events() == 2);
  auto moved = std::move(again);
  CHECK_FALSE(again);
  CHECK(moved);
}

TEST_CASE("event: destroying an event a pending wait uses keeps it alive", "[runtime][event]") {
  keel::host::stream a{test_device()}, b{test_device()};
  keel_test::gate g;
  g.hold(a);
  int ran = 0;
  {
    keel::host::event e{test_device()};
    e.record(a);
    b.wait(e);
    b.launch_host([&] { ++ran; });
  }  // the handle is gone; the record and the wait still hold the event
  g.open();
  b.synchronize();
  CHECK(ran == 1);
}
