// SPDX-License-Identifier: Apache-2.0
// The external-event pool's lifetime on every backend: loans that
// outlive their pool.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "test_support.hpp"

using keel::errc;

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
