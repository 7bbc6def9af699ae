// SPDX-License-Identifier: Apache-2.0
// Stress on the host backend's update rules. The stress test every backend
// runs is in keel/testing/conformance/task_group.hpp.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

// Updates take no device-wide lock: the rules between updaters, captures and
// launches from other threads rest on each stream's update lock and each
// group's claim. Threads race on purpose here; every outcome must be either
// success or the rule's error (ThreadSanitizer runs check the rest).
TEST_CASE("stress: updaters, a capturer and other threads race on one group and one update stream - host only",
          "[runtime][stress][host]") {
  keel::host::stream exec{keel_test::test_device()};
  keel::host::stream u{keel_test::test_device()}, u2{keel_test::test_device()};
  std::atomic<int> slot{0};
  keel::host::model model;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{exec};
    keel::host::task_group_scope mark{exec};
    exec.launch(keel_test::store_kind, &keel_test::store_kernel, &slot, 0);
    group = mark.end();
    model = capture.end();
  }
  std::atomic<bool> stop{false};
  std::atomic<int> updates{0}, refusals{0}, unexpected{0};
  const auto classify = [&](const keel::error& e) {
    const std::string what = e.what();
    if (keel_test::contains(what, "already being updated") || keel_test::contains(what, "already updating") ||
        keel_test::contains(what, "not capturing") || keel_test::contains(what, "is updating") ||
        keel_test::contains(what, "changed capture state") || keel_test::contains(what, "is not updating") ||
        keel_test::contains(what, "has 1 tasks and the update issued"))
      ++refusals;
    else
      ++unexpected;
  };
  const auto updater = [&](keel::host::stream& on, int base) {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      try {
        keel::host::update_scope update{on, group};
        on.launch(keel_test::store_kind, &keel_test::store_kernel, &slot, base + i % 100);
        update.end();
        ++updates;
      } catch (const keel::error& e) {
        classify(e);
      }
    }
  };
  std::thread a([&] { updater(u, 1000); });
  std::thread b([&] { updater(u2, 2000); });
  std::thread capturer([&] {  // captures on the update stream when it can
    while (!stop.load(std::memory_order_relaxed)) {
      try {
        keel::host::capture_scope capture{u};
        (void)capture.end();
      } catch (const keel::error& e) {
        classify(e);
      }
    }
  });
  std::thread launcher([&] {  // eager work, or a task staged into whichever update is open
    while (!stop.load(std::memory_order_relaxed)) {
      try {
        u.launch(keel_test::store_kind, &keel_test::store_kernel, &slot, 7);
      } catch (const keel::error& e) {
        classify(e);
      }
    }
  });
  // At least 300 ms, and on until an update got through (at most 20 s): on
  // a loaded machine (ctest -j2 beside another suite, seven threads on two
  // cores) the launcher, which stages a task into any update open on u, and
  // the capturer can refuse every update for a while; an update that never
  // gets through in 20 s is a starvation bug, not load.
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < start + std::chrono::milliseconds(300) ||
         (updates.load() == 0 && std::chrono::steady_clock::now() < start + std::chrono::seconds(20))) {
    model.execute(exec);
    exec.synchronize();
  }
  stop = true;
  for (auto* t : {&a, &b, &capturer, &launcher}) t->join();
  u.synchronize();
  u2.synchronize();
  INFO("updates: " << updates << ", refusals: " << refusals);
  CHECK(unexpected == 0);
  CHECK(updates > 0);
  CHECK_FALSE(u.capture_status().updating);
  CHECK_FALSE(u.capture_status().capturing());
}
