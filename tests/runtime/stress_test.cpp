// SPDX-License-Identifier: Apache-2.0
// A bounded stress test: several streams and models, random eager work,
// executions, cross-stream events and updates for about a second (less on
// ACL: each launch there is an aclnn phase one and two); every eager task runs
// exactly once and in order within its stream, every execution runs exactly
// once, and the last update wins.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

KEEL_BACKEND_TEST("stress: random executions and updates across streams", "[runtime][stress]") {
  KEEL_USING_BACKEND(TestType);
  constexpr int n_streams = 3, n_models = 2;
  std::vector<stream> streams;
  for (int i = 0; i < n_streams; ++i) streams.emplace_back(dev);
  stream updater{dev};
  event e{dev};

  std::array<std::uint64_t, n_streams> next{};  // touched only by each stream's worker
  std::array<std::uint64_t, n_streams> issued{};
  std::array<typename TestType::slot, n_models> slot{};
  std::array<std::atomic<long>, n_models> runs{};
  std::array<long, n_models> executes{};
  std::array<int, n_models> last_value{};
  std::atomic<int> out_of_order{0};

  std::vector<model> models;
  std::vector<task_group> groups;
  for (int k = 0; k < n_models; ++k) {
    capture_scope capture{streams[0]};
    streams[0].launch_host([&runs, k] { runs[static_cast<std::size_t>(k)].fetch_add(1); });
    task_group_scope mark{streams[0]};
    TestType::store(streams[0], &slot[static_cast<std::size_t>(k)], 0);
    groups.push_back(mark.end());
    models.push_back(capture.end());
  }

  std::mt19937 rng(12345);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(TestType::stress_ms);
  int ops = 0;
  while (ops < 40000 && std::chrono::steady_clock::now() < deadline) {
    ++ops;
    const auto i = static_cast<std::size_t>(rng() % n_streams);
    const auto k = static_cast<std::size_t>(rng() % n_models);
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        const std::uint64_t seq = issued[i]++;
        streams[i].launch_host([&next, &out_of_order, i, seq] {
          if (next[i] != seq) ++out_of_order;
          next[i] = seq + 1;
        });
        break;
      }
      case 3:
      case 4:
        // Where a model's kernels write plain memory, its replays stay on one stream.
        models[k].execute(streams[TestType::replays_may_overlap ? i : k % n_streams]);
        ++executes[k];
        break;
      case 5: {
        const int value = static_cast<int>(rng() % 1000) + 1;
        update_scope update{updater, groups[k]};
        TestType::store(updater, &slot[k], value);
        update.end();
        last_value[k] = value;
        break;
      }
      case 6:
        e.record(streams[i]);
        streams[(i + 1) % n_streams].wait(e);
        break;
      default:
        if (rng() % 16 == 0) streams[i].synchronize();
        break;
    }
  }
  updater.synchronize();
  for (auto& s : streams) s.synchronize();
  INFO("operations: " << ops);
  CHECK(out_of_order == 0);
  for (std::size_t i = 0; i < n_streams; ++i) CHECK(next[i] == issued[i]);
  for (std::size_t k = 0; k < n_models; ++k) {
    CHECK(runs[k] == executes[k]);
    models[k].execute(streams[0]);
    streams[0].synchronize();
    CHECK(TestType::load(slot[k]) == last_value[k]);
  }
}

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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
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
