// SPDX-License-Identifier: Apache-2.0
// A spin lock with a lock-free entry for one thread, its owner: what lets the
// thread that began a task-group update stage its tasks and end the update
// without an atomic read-modify-write per call.
#pragma once

#include <atomic>
#include <thread>

#include "keel/host/detail/fence.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/task.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// Every thread may lock() it; one thread, the owner (set under the lock by
// set_owner()), may instead enter() a section with plain stores and loads.
// The two kinds of section exclude each other by Dekker's protocol over the
// asymmetric fence: the owner stores `owner_inside_`, then (compiler barrier)
// loads `foreign_`; a locker stores `foreign_`, then (membarrier) loads
// `owner_inside_` and waits for it to clear. Either the owner sees the locker
// and retreats to lock(), or the locker sees the owner and waits.
//
// The owner pays no atomic read-modify-write; any other locker pays a
// membarrier() (microseconds) while an owner is set, so ownership fits a
// lock that one thread takes almost always: the stream's update lock during
// an update, taken by its updating thread at each launch and at end(), and
// by other threads only when they break in (a launch from another thread, a
// capture beginning, the stream's destruction).
//
// Without the asymmetric fence (see asymmetric_fence) no owner is ever set
// and this is the plain spin lock.
class biased_lock {
 public:
  void lock() noexcept {
    lock_.lock();
    const std::thread::id owner = owner_.load(std::memory_order_relaxed);  // changes only under lock_
    if (owner != std::thread::id() && owner != std::this_thread::get_id()) {
      foreign_.store(true, std::memory_order_relaxed);
      asymmetric_fence::heavy();
      while (owner_inside_.load(std::memory_order_acquire)) cpu_relax();
      fenced_ = true;
    }
  }
  void unlock() noexcept {
    if (fenced_) {
      fenced_ = false;
      foreign_.store(false, std::memory_order_release);
    }
    lock_.unlock();
  }

  // Under the lock: the calling thread becomes the owner (where the
  // asymmetric fence is available). The owner stays until another thread
  // calls set_owner(); a stale owner that never enters costs nothing.
  void set_owner() noexcept {
    if (biasable_) owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }

  // The owner's lock-free entry: true if the caller is the owner and no
  // other thread holds the lock; then leave() ends the section. False: use
  // lock() instead.
  bool enter() noexcept {
    if (owner_.load(std::memory_order_relaxed) != std::this_thread::get_id()) return false;
    owner_inside_.store(true, std::memory_order_relaxed);
    asymmetric_fence::light();
    if (!foreign_.load(std::memory_order_acquire)) return true;
    owner_inside_.store(false, std::memory_order_release);
    return false;
  }
  void leave() noexcept { owner_inside_.store(false, std::memory_order_release); }

 private:
  spin_lock lock_;
  const bool biasable_ = asymmetric_fence::available();
  bool fenced_ = false;  // the holder of lock_ waited the owner out (guarded by lock_)
  std::atomic<std::thread::id> owner_{std::thread::id()};
  std::atomic<bool> foreign_{false};       // written by lock_'s holder
  std::atomic<bool> owner_inside_{false};  // written by the owner
};

// Enters @p l as its owner, or locks it: one section either way.
class biased_section {
 public:
  explicit biased_section(biased_lock& l) noexcept : lock_(l), owned_(l.enter()) {
    if (!owned_) lock_.lock();
  }
  ~biased_section() {
    if (owned_) {
      lock_.leave();
    } else {
      lock_.unlock();
    }
  }
  biased_section(const biased_section&) = delete;
  biased_section& operator=(const biased_section&) = delete;

 private:
  biased_lock& lock_;
  bool owned_;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
