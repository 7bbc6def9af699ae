// SPDX-License-Identifier: Apache-2.0
// A mutex for a lock taken on a hot path whose sections are usually short
// but may be long (the checked layer's device books: a captured launch takes
// it for a few dozen instructions, a capture end holds it across the
// runtime's own call): uncontended, lock and unlock are one atomic operation
// each, inline, where std::mutex calls into the C library for both; a
// contended lock sleeps on a condition variable instead of spinning.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

// Ownership: none (a lock). Thread safety: lock/try_lock/unlock from any
// thread (Lockable); not recursive; unlock by the holder only. Exceptions:
// lock() throws std::system_error only where std::mutex would (its
// contended path uses one); try_lock and unlock throw nothing.
//
// The state is 0 (free), 1 (held) or 2 (held, and a thread may be waiting).
// A waiter marks 2 and sleeps under wait_m_, which it holds from that mark
// until the wait releases it; an unlock that finds 2 takes wait_m_ (so it
// cannot notify before the waiter sleeps) and wakes one waiter, which marks
// 2 again when it takes the lock (it cannot know whether others wait).
class lean_mutex {
 public:
  lean_mutex() = default;
  lean_mutex(const lean_mutex&) = delete;
  lean_mutex& operator=(const lean_mutex&) = delete;

  void lock() {
    int expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_contended();
  }
  bool try_lock() noexcept {
    int expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) wake_one();
  }

 private:
  KEEL_NOINLINE void lock_contended() {
    // A short spin first: most sections are a few dozen instructions.
    for (int spins = 0; spins < 64; ++spins) {
      if (state_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
    }
    std::unique_lock<std::mutex> hold(wait_m_);
    while (state_.exchange(2, std::memory_order_acquire) != 0) wait_cv_.wait(hold);
  }
  KEEL_NOINLINE void wake_one() noexcept {
    std::lock_guard<std::mutex> hold(wait_m_);
    wait_cv_.notify_one();
  }

  std::atomic<int> state_{0};
  std::mutex wait_m_;
  std::condition_variable wait_cv_;
};

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE
