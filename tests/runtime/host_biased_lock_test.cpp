// SPDX-License-Identifier: Apache-2.0
// keel/host/detail/biased_lock.hpp: the stream's update lock, which its
// owner enters with plain stores and every other thread locks. The sections
// must exclude each other whichever way they were entered, and ownership
// must pass from thread to thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "keel/host/detail/biased_lock.hpp"

using keel::host::detail::asymmetric_fence;
using keel::host::detail::biased_lock;
using keel::host::detail::biased_section;

namespace {
// What sections guard: a plain counter (a lost increment shows an overlap
// even where the race is too short to catch otherwise) and an occupancy
// count that must read 0 on entry.
struct guarded_state {
  std::uint64_t count = 0;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  void visit() {
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t seen = count;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    count = seen + 1;
    inside.fetch_sub(1, std::memory_order_relaxed);
  }
};
}  // namespace

TEST_CASE("host biased lock: the owner's plain-store sections and other threads' locked sections exclude each other",
          "[runtime][host][fence]") {
  biased_lock lock;
  guarded_state state;
  constexpr int owner_rounds = 2000000;
  constexpr int other_rounds = 5000;
  std::atomic<bool> owner_ready{false};
  std::atomic<int> owner_entries{0};
  std::thread owner([&] {
    {
      std::lock_guard<biased_lock> hold(lock);
      lock.set_owner();
    }
    owner_ready = true;
    for (int i = 0; i < owner_rounds; ++i) {
      if (lock.enter()) {
        owner_entries.fetch_add(1, std::memory_order_relaxed);
        state.visit();
        lock.leave();
      } else {
        std::lock_guard<biased_lock> hold(lock);
        state.visit();
      }
    }
  });
  while (!owner_ready) std::this_thread::yield();
  std::vector<std::thread> others;
  for (int t = 0; t < 2; ++t) {
    others.emplace_back([&] {
      for (int i = 0; i < other_rounds; ++i) {
        std::lock_guard<biased_lock> hold(lock);
        state.visit();
      }
    });
  }
  owner.join();
  for (auto& th : others) th.join();
  CHECK(state.overlaps.load() == 0);
  CHECK(state.count == owner_rounds + 2 * other_rounds);
  if (asymmetric_fence::available()) {
    CHECK(owner_entries.load() > 0);  // the fast path was taken, not only the lock
  } else {
    CHECK(owner_entries.load() == 0);  // no owner without the asymmetric fence: a plain spin lock
  }
}

TEST_CASE("host biased lock: ownership passes to the thread that sets it; the former owner then locks",
          "[runtime][host][fence]") {
  biased_lock lock;
  {
    biased_section first(lock);  // no owner yet: a locked section
  }
  CHECK_FALSE(lock.enter());
  {
    std::lock_guard<biased_lock> hold(lock);
    lock.set_owner();
  }
  const bool fast = asymmetric_fence::available();
  CHECK(lock.enter() == fast);
  if (fast) lock.leave();
  std::atomic<bool> other_entered{false};
  std::thread other([&] {
    {
      std::lock_guard<biased_lock> hold(lock);  // breaks in: waits the owner out with membarrier()
      lock.set_owner();
    }
    other_entered = lock.enter() == fast;
    if (fast) lock.leave();
  });
  other.join();
  CHECK(other_entered.load());
  CHECK_FALSE(lock.enter());  // no longer the owner
  {
    biased_section again(lock);  // a locked section, which waits out the new owner
  }
}
