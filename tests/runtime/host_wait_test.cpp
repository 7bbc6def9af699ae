// SPDX-License-Identifier: Apache-2.0
// How the host backend's threads wait (keel/host/detail/spin.hpp and
// keel/host/detail/worker_wake.hpp): a spin bounded by its budget, and a
// worker that spins, sleeps, is woken once per sleep and stops on request.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

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

TEST_CASE("host worker wake: the first submitter wakes a sleeping worker, the ones after it find it awake",
          "[runtime][host][wait]") {
  for (const bool light : {false, true}) {
    if (light && !keel::detail::asymmetric_fence::available()) continue;
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

TEST_CASE("host worker wake: a wake-up that finds no work leaves the worker woken by the next task",
          "[runtime][host][wait]") {
  // The stale wake-up: a submitter reads the flag of one sleep,
  // the worker finds that submitter's task without sleeping and goes to
  // sleep again, and only then does the submitter take the wake-up. The
  // worker wakes to an empty ring; it must say again that it sleeps before
  // it waits, or the next task finds the flag down and nobody wakes it.
  // after_publish() with nothing published is exactly that late submitter.
  for (const bool light : {false, true}) {
    if (light && !keel::detail::asymmetric_fence::available()) continue;
    worker_wake wake;
    std::atomic<int> published{0};
    std::atomic<bool> returned{false};
    bool result = false;
    std::thread worker([&] {
      result = wake.wait_for_work(microseconds{0}, light, [&] { return published.load(std::memory_order_seq_cst) > 0; });
      returned = true;
    });
    REQUIRE(eventually([&] { return wake.asleep(); }));
    wake.after_publish();  // the late submitter: its wake-up finds nothing to run
    // (Not checked here that the flag is down: the woken worker may already
    // have looked again and said it sleeps, which is the point of the fix.)
    // The worker has looked at the ring again and gone back to sleep, saying so.
    CHECK(eventually([&] { return wake.asleep(); }));
    CHECK_FALSE(returned.load());
    published.store(1, std::memory_order_seq_cst);  // the next task
    wake.after_publish();
    const bool woken = eventually([&] { return returned.load(); });
    CHECK(woken);
    if (!woken) wake.request_stop(true);  // a lost wake-up: free the worker so the test ends
    worker.join();
    CHECK(result);  // work is there, whether it woke the worker or the stop did
  }
}

TEST_CASE("host worker wake: a worker that sleeps at once loses no task to submitters racing it and late wake-ups",
          "[runtime][host][wait][stress]") {
  // The protocol alone, without a stream, so a round costs one sleep and one
  // wake-up: each submitter posts one task with a plain release store (what
  // a lightly published ring slot is), calls after_publish() and waits for
  // it, sometimes taking a second, late wake-up that finds nothing (a
  // submitter descheduled between reading the flag and taking it). The
  // worker sleeps whenever it finds nothing. A lost wake-up strands a task:
  // the submitter's deadline counts it and a stop request frees the worker.
  for (const bool light : {false, true}) {
    if (light && !keel::detail::asymmetric_fence::available()) continue;
    constexpr int submitters = 3;
    constexpr std::uint64_t tasks_each = 2000;
    worker_wake wake;
    std::atomic<std::uint64_t> posted[submitters] = {};
    std::atomic<std::uint64_t> done[submitters] = {};
    std::atomic<int> lost{0};
    std::thread worker([&] {
      std::uint64_t taken[submitters] = {};
      const auto ready = [&] {
        for (int k = 0; k < submitters; ++k)
          if (posted[k].load(std::memory_order_acquire) != taken[k]) return true;
        return false;
      };
      while (wake.wait_for_work(microseconds{0}, light, ready)) {
        for (int k = 0; k < submitters; ++k) {
          taken[k] = posted[k].load(std::memory_order_acquire);
          done[k].store(taken[k], std::memory_order_release);
        }
      }
    });
    std::vector<std::thread> threads;
    for (int k = 0; k < submitters; ++k) {
      threads.emplace_back([&, k] {
        std::minstd_rand rng(static_cast<unsigned>(k) + 7);
        for (std::uint64_t i = 1; i <= tasks_each; ++i) {
          if (light) {
            posted[k].store(i, std::memory_order_release);
          } else {
            posted[k].store(i, std::memory_order_seq_cst);  // the ring's publication without the fence
          }
          wake.after_publish();
          const auto deadline = steady_clock::now() + std::chrono::seconds(5);
          while (done[k].load(std::memory_order_acquire) < i) {
            if (steady_clock::now() > deadline) {
              lost.fetch_add(1);
              return;
            }
          }
          if (rng() % 4 == 0) wake.after_publish();  // late: the task has run already
          for (unsigned spin = rng() % 2000; spin > 0; --spin) std::atomic_signal_fence(std::memory_order_seq_cst);
        }
      });
    }
    for (auto& t : threads) t.join();
    wake.request_stop(true);
    worker.join();
    CHECK(lost.load() == 0);
    for (auto& d : done) CHECK(d.load() == tasks_each);
  }
}
