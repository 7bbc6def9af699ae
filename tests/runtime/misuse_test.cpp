// SPDX-License-Identifier: Apache-2.0
// Careless and hostile use (issue 14), on every backend: each case here was a
// silent misbehaviour, a hang or undefined behaviour before, and is now an
// ordering that holds or a clear keel::error.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_support.hpp"

using keel::errc;
using namespace std::chrono_literals;

KEEL_BACKEND_TEST("event: a later record on another stream does not release a wait for an earlier one",
                  "[runtime][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream slow{dev}, fast{dev}, consumer{dev};
  event e{dev};
  keel_test::gate g;
  std::atomic<int> produced{0};
  int seen = -1;
  g.hold(slow.ref());
  slow.launch_host([&] { produced = 1; });
  e.record(slow);     // record #1: behind the gate
  consumer.wait(e);   // waits for record #1
  consumer.launch_host([&] { seen = produced.load(); });
  e.record(fast);     // record #2 on an idle stream completes at once
  fast.synchronize();
  CHECK(e.query());   // query and synchronize refer to the last record: #2
  e.synchronize();
  std::this_thread::sleep_for(5ms);
  CHECK(seen == -1);  // the consumer still waits for record #1
  g.open();
  consumer.synchronize();
  CHECK(seen == 1);
  slow.synchronize();
}

KEEL_BACKEND_TEST("event: synchronize and query refer to the record that was last when called",
                  "[runtime][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream fast{dev}, slow{dev};
  event e{dev};
  keel_test::gate g;
  e.record(fast);
  fast.synchronize();
  CHECK(e.query());
  g.hold(slow.ref());
  e.record(slow);  // the last record is now behind the gate
  CHECK_FALSE(e.query());
  std::atomic<bool> synced{false};
  std::thread waiter([&] {
    e.synchronize();
    synced = true;
  });
  std::this_thread::sleep_for(5ms);
  CHECK_FALSE(synced.load());
  g.open();
  waiter.join();
  CHECK(synced.load());
  CHECK(e.query());
  slow.synchronize();
}
