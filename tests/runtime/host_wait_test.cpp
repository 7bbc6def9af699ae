// SPDX-License-Identifier: Apache-2.0
// How the host backend's threads wait (keel/host/detail/spin.hpp and
// keel/host/detail/worker_wake.hpp): a spin bounded by its budget, and a
// worker that spins, sleeps, is woken once per sleep and stops on request.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/worker_wake.hpp"

using keel::host::detail::spin_until;
using keel::host::detail::worker_wake;
using std::chrono::microseconds;
using std::chrono::steady_clock;

namespace {
// Waits (bounded) until @p pred holds; false if it never did.
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}
}  // namespace

TEST_CASE("host spin: a spin gives up after its budget, not before, and stops at once when the condition holds",
          "[runtime][host][wait]") {
  int polls = 0;
  const auto start = steady_clock::now();
  CHECK_FALSE(spin_until(microseconds{2000}, [&] {
    ++polls;
    return false;
  }));
  CHECK(steady_clock::now() - start >= microseconds{2000});
  CHECK(polls > 1);

  polls = 0;
  CHECK(spin_until(microseconds{2000}, [&] { return ++polls == 3; }));
  CHECK(polls == 3);

  // A budget of 0 (or below) asks once.
  polls = 0;
  CHECK_FALSE(spin_until(microseconds{0}, [&] {
    ++polls;
    return false;
  }));
  CHECK(polls == 1);
  CHECK(spin_until(microseconds{-3}, [] { return true; }));
}

TEST_CASE("host spin: a condition another thread makes true ends the spin", "[runtime][host][wait]") {
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    flag.store(true, std::memory_order_release);
  });
  CHECK(spin_until(microseconds{5000000}, [&] { return flag.load(std::memory_order_acquire); }));
  setter.join();
}

TEST_CASE("host worker wake: work that is ready ends the wait without sleeping", "[runtime][host][wait]") {
  worker_wake wake;
  CHECK(wake.wait_for_work(microseconds{50}, false, [] { return true; }));
  CHECK(wake.wait_for_work(microseconds{0}, true, [] { return true; }));
  CHECK_FALSE(wake.asleep());
}

TEST_CASE("host worker wake: the first submitter wakes a sleeping worker; the ones after it find it awake",
          "[runtime][host][wait]") {
  for (const bool light : {false, true}) {
    if (light && !keel::host::detail::asymmetric_fence::available()) continue;
    worker_wake wake;
    std::atomic<bool> work{false};
    std::atomic<bool> returned{false};
    bool result = false;
    std::thread worker([&] {
      result = wake.wait_for_work(microseconds{0}, light, [&] { return work.load(std::memory_order_seq_cst); });
      returned = true;
    });
    REQUIRE(eventually([&] { return wake.asleep(); }));
    work.store(true, std::memory_order_seq_cst);  // what a ring's publication does
    wake.after_publish();
    // The wake-up is taken: the flag is down before the worker runs again,
    // so the tasks that follow pay neither the mutex nor a futex call.
    CHECK_FALSE(wake.asleep());
    for (int i = 0; i < 100; ++i) wake.after_publish();
    CHECK(eventually([&] { return returned.load(); }));
    worker.join();
    CHECK(result);
  }
}

TEST_CASE("host worker wake: a stop request wakes a sleeping worker, which reports that no work is left",
          "[runtime][host][wait]") {
  worker_wake wake;
  bool result = true;
  std::thread worker([&] { result = wake.wait_for_work(microseconds{20}, false, [] { return false; }); });
  REQUIRE(eventually([&] { return wake.asleep(); }));
  CHECK_FALSE(wake.stop_requested());
  wake.request_stop(true);
  worker.join();
  CHECK_FALSE(result);
  CHECK(wake.stop_requested());
  // A stop requested from inside the worker (no wake-up) ends its next wait.
  worker_wake own;
  own.request_stop(false);
  CHECK_FALSE(own.wait_for_work(microseconds{20}, false, [] { return false; }));
}
