// SPDX-License-Identifier: Apache-2.0
// keel/core/biased_lock.hpp: the stream's update lock, which its
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

#include "keel/core/biased_lock.hpp"

using keel::detail::asymmetric_fence;
using keel::detail::biased_lock;
using keel::detail::biased_section;

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

TEST_CASE("biased lock: the owner's plain-store sections and other threads' locked sections exclude each other",
          "[core][biased_lock]") {
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

TEST_CASE("biased lock: ownership passes to the thread that sets it, the former owner then locks",
          "[core][biased_lock]") {
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

using keel::detail::self_biased_lock;

namespace {
// One section of a self_biased_lock, entered or locked as the ring does.
template <class F>
bool in_section(self_biased_lock& lock, F&& f) {
  if (lock.enter()) {
    f();
    lock.leave();
    return true;
  }
  lock.lock();
  f();
  lock.unlock();
  return false;
}
}  // namespace

TEST_CASE("self-biased lock: a thread that locks it bias_after times in a row becomes its owner",
          "[core][biased_lock]") {
  self_biased_lock lock;
  const bool fast = asymmetric_fence::available();
  CHECK(lock.bias_after() == self_biased_lock::initial_bias_after);
  int locked = 0;
  while (!in_section(lock, [] {}) && locked < 10 * static_cast<int>(self_biased_lock::initial_bias_after)) ++locked;
  if (fast) {
    CHECK(locked == static_cast<int>(self_biased_lock::initial_bias_after));  // then the entries are lock-free
    CHECK(lock.enter());
    lock.leave();
  } else {
    CHECK_FALSE(lock.enter());  // without the asymmetric fence it stays a spin lock
  }
}

TEST_CASE("self-biased lock: another thread ends the ownership once, and the next owner needs a longer streak",
          "[core][biased_lock]") {
  if (!asymmetric_fence::available()) return;  // no owner is ever chosen: nothing to end
  self_biased_lock lock;
  for (std::uint32_t i = 0; i < self_biased_lock::initial_bias_after; ++i) in_section(lock, [] {});
  REQUIRE(lock.enter());
  lock.leave();
  std::thread other([&] {
    CHECK_FALSE(in_section(lock, [] {}));  // waits the owner out, then ends the ownership
  });
  other.join();
  CHECK(lock.bias_after() == 2 * self_biased_lock::initial_bias_after);
  CHECK_FALSE(lock.enter());  // the former owner locks again
  // A streak as long as the first no longer makes an owner; twice as long does.
  std::uint32_t locked = 0;
  while (!in_section(lock, [] {}) && locked < 4 * self_biased_lock::initial_bias_after) ++locked;
  CHECK(locked == 2 * self_biased_lock::initial_bias_after);
}

TEST_CASE("self-biased lock: two threads taking turns stop paying for ownership, and the streak's growth is bounded",
          "[core][biased_lock]") {
  self_biased_lock lock;
  // Turns of one section each: no streak is ever long enough for an owner.
  std::atomic<int> turn{0};
  constexpr int rounds = 2000;
  auto take_turns = [&](int me) {
    int entered = 0;
    for (int i = 0; i < rounds; ++i) {
      while (turn.load(std::memory_order_acquire) != me) std::this_thread::yield();
      entered += in_section(lock, [] {});
      turn.store(1 - me, std::memory_order_release);
    }
    return entered;
  };
  int entered_b = 0;
  std::thread b([&] { entered_b = take_turns(1); });
  const int entered_a = take_turns(0);
  b.join();
  CHECK(entered_a == 0);
  CHECK(entered_b == 0);
  CHECK(lock.bias_after() == self_biased_lock::initial_bias_after);  // no ownership was ever ended
  // Ownership ended again and again doubles the streak up to its bound.
  if (asymmetric_fence::available()) {
    for (int handover = 0; handover < 12; ++handover) {
      std::thread owner([&] {
        for (std::uint32_t i = 0; i < lock.bias_after() + 1; ++i) in_section(lock, [] {});
      });
      owner.join();
      in_section(lock, [] {});  // this thread breaks in
    }
    CHECK(lock.bias_after() == self_biased_lock::max_bias_after);
  }
}

TEST_CASE("self-biased lock: the owner's entries and other threads' sections exclude each other",
          "[core][biased_lock]") {
  self_biased_lock lock;
  guarded_state state;
  constexpr int main_rounds = 400000;
  constexpr int other_rounds = 3000;
  std::atomic<bool> done{false};
  std::thread other([&] {
    for (int i = 0; i < other_rounds; ++i) {
      in_section(lock, [&] { state.visit(); });
      if (i % 64 == 0) std::this_thread::yield();  // lets the main thread win streaks and become the owner
    }
    done = true;
  });
  int entries = 0;
  std::uint64_t main_sections = 0;
  for (; main_sections < main_rounds || !done.load(); ++main_sections)
    entries += in_section(lock, [&] { state.visit(); });
  other.join();
  CHECK(state.overlaps.load() == 0);
  CHECK(state.count == main_sections + other_rounds);  // no increment lost to an overlap
  if (asymmetric_fence::available()) CHECK(entries > 0);
}

TEST_CASE("self-biased mutex: std::lock_guard and std::unique_lock sections exclude each other, owner or not",
          "[core][biased_lock]") {
  // The checked layer's device-books lock: code written against a mutex
  // (unique_lock that unlocks early and locks again) gets the owner's entry.
  keel::detail::self_biased_mutex m;
  guarded_state state;
  constexpr int main_rounds = 300000;
  constexpr int other_rounds = 3000;
  std::atomic<bool> done{false};
  std::thread other([&] {
    for (int i = 0; i < other_rounds; ++i) {
      std::unique_lock<keel::detail::self_biased_mutex> lock(m);
      state.visit();
      lock.unlock();
      lock.lock();  // a failed launch takes its count back under the lock again
      state.visit();
      if (i % 64 == 0) std::this_thread::yield();
    }
    done = true;
  });
  std::uint64_t main_sections = 0;
  for (; main_sections < main_rounds || !done.load(); ++main_sections) {
    std::lock_guard<keel::detail::self_biased_mutex> lock(m);
    state.visit();
  }
  other.join();
  CHECK(state.overlaps.load() == 0);
  CHECK(state.count == main_sections + 2 * other_rounds);
}

TEST_CASE("self-biased mutex: try_lock fails while another thread holds the lock, and the owner's try enters",
          "[core][biased_lock]") {
  keel::detail::self_biased_mutex m;
  {
    std::lock_guard<keel::detail::self_biased_mutex> held(m);  // no owner yet: a locked section
    bool other_got_it = true;
    std::thread other([&] {
      other_got_it = m.try_lock();
      if (other_got_it) m.unlock();
    });
    other.join();
    CHECK_FALSE(other_got_it);
  }
  // This thread wins a streak: the owner where the asymmetric fence exists,
  // whose try_lock enters without the lock; another thread's try after
  // the section takes it (and ends the ownership), then this one locks.
  for (std::uint32_t i = 0; i <= self_biased_lock::initial_bias_after; ++i) {
    std::lock_guard<keel::detail::self_biased_mutex> lock(m);
  }
  REQUIRE(m.try_lock());
  m.unlock();
  bool other_got_it = false;
  std::thread other([&] {
    other_got_it = m.try_lock();
    if (other_got_it) m.unlock();
  });
  other.join();
  CHECK(other_got_it);
  REQUIRE(m.try_lock());
  m.unlock();
}
