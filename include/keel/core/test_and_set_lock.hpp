// SPDX-License-Identifier: Apache-2.0
// A test-and-set lock for critical sections of a few dozen instructions
// (a pool hit, appending a captured launch's record), where a mutex's lock
// and unlock cost more than the section.
#pragma once

#include <atomic>
#include <thread>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

// Ownership: none (a lock). Thread safety: lock/try_lock/unlock from any
// thread (Lockable, so std::scoped_lock can take several); not recursive.
// Exceptions: none. The uncontended acquisition is one exchange, inline; a
// contended one spins, then yields.
class test_and_set_lock {
 public:
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_contended();
  }
  // Acquires only when free; the load first keeps a failing try from taking the line for writing.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  KEEL_NOINLINE void lock_contended() noexcept {
    for (int spins = 0;; ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }
  std::atomic<bool> locked_{false};
};

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE
