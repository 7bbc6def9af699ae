// SPDX-License-Identifier: Apache-2.0
// The host backend's sleep/wake hand-off (keel/core/asymmetric_fence.hpp): a task
// published with only a compiler barrier must still wake a worker that is
// going to sleep. Under ThreadSanitizer the hand-off uses seq_cst operations
// instead, so the CI's tsan build covers that path and the others cover the
// asymmetric one.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "keel/core/asymmetric_fence.hpp"
#include "keel/host/detail/task.hpp"
#include "test_support.hpp"

using keel::detail::asymmetric_fence;

namespace {
// A two-thread rendezvous for litmus rounds: both sides spin on one counter.
class rendezvous {
 public:
  void arrive_and_wait(std::uint64_t round) {
    arrived_.fetch_add(1, std::memory_order_acq_rel);
    while (arrived_.load(std::memory_order_acquire) < 2 * round) {
    }
  }

 private:
  std::atomic<std::uint64_t> arrived_{0};
};
}  // namespace

TEST_CASE("host fence: a compiler barrier on one side and membarrier on the other forbid the store-load reordering",
          "[runtime][host][fence]") {
  if (!asymmetric_fence::available()) {
    // The fallback: rings publish with seq_cst stores, and the fast path is
    // off only where it must be (ThreadSanitizer, or a kernel or seccomp
    // filter that refuses the command).
    CHECK_FALSE(keel::host::detail::task_ring().light_publish());
#if !defined(KEEL_DETAIL_TSAN) && defined(__linux__)
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    const bool refused = commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
                         syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0;
    CHECK(refused);
#endif
    return;
  }
  // Dekker's litmus test: without a store-load barrier on both sides, x86
  // lets both loads see 0 (each store still in its core's store buffer).
  constexpr std::uint64_t rounds = 20000;
  std::atomic<int> x{0}, y{0};
  std::vector<int> seen_by_light(rounds), seen_by_heavy(rounds);
  rendezvous start, done;
  std::thread heavy_side([&] {
    for (std::uint64_t r = 0; r < rounds; ++r) {
      start.arrive_and_wait(r + 1);
      y.store(1, std::memory_order_relaxed);
      asymmetric_fence::heavy();
      seen_by_heavy[r] = x.load(std::memory_order_relaxed);
      done.arrive_and_wait(r + 1);
    }
  });
  for (std::uint64_t r = 0; r < rounds; ++r) {
    x.store(0, std::memory_order_relaxed);
    y.store(0, std::memory_order_relaxed);
    start.arrive_and_wait(r + 1);
    x.store(1, std::memory_order_relaxed);
    asymmetric_fence::light();
    seen_by_light[r] = y.load(std::memory_order_relaxed);
    done.arrive_and_wait(r + 1);
  }
  heavy_side.join();
  std::uint64_t both_missed = 0;
  for (std::uint64_t r = 0; r < rounds; ++r) both_missed += seen_by_light[r] == 0 && seen_by_heavy[r] == 0;
  CHECK(both_missed == 0);
}

TEST_CASE("host fence: a worker that sleeps at once is woken by every task, from any number of submitters",
          "[runtime][host][fence][stream]") {
  // A spin budget of 0 sends the worker to sleep the moment its ring is
  // empty, so nearly every task lands in the window where the worker has
  // said it sleeps but not yet looked at the ring once more. A lost wake-up
  // leaves a task unrun: the deadline below catches it without hanging.
  keel::host::device_options options;
  options.compute_workers = 1;
  options.spin_budget = std::chrono::microseconds{0};
  keel::host::device dev{options};
  keel::host::stream s{dev};
  constexpr int submitters = 3;
  constexpr int tasks_each = 1500;
  std::atomic<int> ran[submitters] = {};
  std::atomic<int> lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < submitters; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t) + 1);
      std::atomic<int>& mine = ran[t];
      for (int i = 0; i < tasks_each; ++i) {
        s.launch_host([&mine] { mine.fetch_add(1); });
        // Wait for this very task before issuing the next, with a random
        // pause so submissions hit the worker at different points of its
        // way to sleep.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (mine.load() <= i) {
          if (std::chrono::steady_clock::now() > deadline) {
            lost.fetch_add(1);
            return;
          }
        }
        for (unsigned spin = rng() % 2000; spin > 0; --spin) std::atomic_signal_fence(std::memory_order_seq_cst);
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(lost.load() == 0);
  s.synchronize();
  for (auto& count : ran) CHECK(count.load() == tasks_each);
}
