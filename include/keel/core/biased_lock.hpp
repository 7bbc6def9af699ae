// SPDX-License-Identifier: Apache-2.0
// A spin lock with a lock-free entry for one thread, its owner: what lets the
// thread that began a task-group update stage its tasks and end the update
// without an atomic read-modify-write per call, the thread that feeds a
// stream publish its tasks without one, and the thread that allocates from a
// memory pool hit it without one (self_biased_lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "keel/core/asymmetric_fence.hpp"
#include "keel/core/config.hpp"
#include "keel/core/test_and_set_lock.hpp"

KEEL_BEGIN_NAMESPACE namespace detail {

/// @cond
// Who the calling thread is, as cheaply as the platform allows: the owner's
// entry asks at every section, and std::this_thread::get_id() is a call
// into the C library (pthread_self()). The thread pointer (the %fs base on
// x86-64 Linux, what pthread_self() returns there) is one load. A token is
// unique among running threads; like a thread id, a thread that starts
// after another ended may get the same one, which is harmless here (a
// thread that has ended holds no section).
using thread_token = const void*;
inline thread_token this_thread_token() noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && defined(__linux__)
  return __builtin_thread_pointer();
#else
  static thread_local const char token = 0;
  return &token;
#endif
}

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
// and this is the plain test-and-set lock.
class biased_lock {
 public:
  void lock() noexcept {
    lock_.lock();
    wait_out_owner();
  }
  // Lockable, so std::scoped_lock can take two of them: fails only when
  // another locker holds it; an owner's section is waited out (it is a few
  // instructions and takes no other lock).
  bool try_lock() noexcept {
    if (!lock_.try_lock()) return false;
    wait_out_owner();
    return true;
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
  // calls set_owner() or clear_owner(); a stale owner that never enters
  // costs nothing.
  void set_owner() noexcept {
    if (biasable_) owner_.store(this_thread_token(), std::memory_order_relaxed);
  }
  // Under the lock: no thread is the owner any more; every section locks.
  void clear_owner() noexcept { owner_.store(nullptr, std::memory_order_relaxed); }
  // Under the lock: whether this holder had to wait an owner out (it paid a
  // membarrier(): another thread owns a lock this one takes).
  bool took_from_owner() const noexcept { return fenced_; }

  // The owner's lock-free entry: true if the caller is the owner and no
  // other thread holds the lock; then leave() ends the section. False: use
  // lock() instead.
  // Always inlined: it is the whole cost of the owner's section, on hot
  // paths (a pool hit, a per-task commit) that take several in a row.
  KEEL_ALWAYS_INLINE bool enter() noexcept {
    const thread_token me = this_thread_token();
    // Laid out for the owner: the entry exists for the thread that takes
    // the lock almost always.
    if (KEEL_UNLIKELY(owner_.load(std::memory_order_relaxed) != me)) return false;
    owner_inside_.store(true, std::memory_order_relaxed);
    asymmetric_fence::light();
    // Ownership is read again after foreign_: the first read may be older
    // than a hand-over that completed while this thread was descheduled
    // between the two steps (the locker saw no owner inside, gave ownership
    // away or cleared it, and unlocked). A foreign_ that reads false after
    // that unlock also makes the locker's change of owner_ visible (the
    // acquire pairs with unlock()'s release), so the second read sees it.
    if (KEEL_LIKELY(!foreign_.load(std::memory_order_acquire) && owner_.load(std::memory_order_relaxed) == me))
      return true;
    owner_inside_.store(false, std::memory_order_release);
    return false;
  }
  KEEL_ALWAYS_INLINE void leave() noexcept { owner_inside_.store(false, std::memory_order_release); }

 private:
  // Under lock_: an owner other than the caller may be inside its section;
  // make it see foreign_ (and retreat to lock() from then on) or wait it out.
  void wait_out_owner() noexcept {
    const thread_token owner = owner_.load(std::memory_order_relaxed);  // changes only under lock_
    if (owner != nullptr && owner != this_thread_token()) {
      foreign_.store(true, std::memory_order_relaxed);
      asymmetric_fence::heavy();
      while (owner_inside_.load(std::memory_order_acquire)) std::atomic_signal_fence(std::memory_order_seq_cst);
      fenced_ = true;
    }
  }

  test_and_set_lock lock_;
  const bool biasable_ = asymmetric_fence::available();
  bool fenced_ = false;  // the holder of lock_ waited the owner out (guarded by lock_)
  std::atomic<thread_token> owner_{nullptr};
  std::atomic<bool> foreign_{false};       // written by lock_'s holder
  std::atomic<bool> owner_inside_{false};  // written by the owner
};

// A biased_lock that chooses its owner by use: a thread that takes the lock
// bias_after() times in a row, with no other thread in between, becomes the
// owner; a thread that then takes the lock pays one membarrier() to wait the
// owner out and ends the ownership (so two threads taking turns pay it once,
// not at every turn), and the next owner must win a streak twice as long, up
// to max_bias_after. So however the threads interleave, the k-th
// membarrier() (a few microseconds, and an interruption of every running
// thread of the process) follows at least min(256 * 2^(k-1), 65536) locked
// sections of one thread: at most one per 256 sections, and soon one per
// 65536.
//
// The stream's ring takes it at every task: one thread feeding a stream
// (the usual case) enters with plain stores; a stream fed by several
// threads in turn stays a plain spin lock.
class self_biased_lock {
 public:
  static constexpr std::uint32_t initial_bias_after = 256;
  static constexpr std::uint32_t max_bias_after = std::uint32_t{1} << 16;

  KEEL_ALWAYS_INLINE bool enter() noexcept { return lock_.enter(); }
  KEEL_ALWAYS_INLINE void leave() noexcept { lock_.leave(); }
  // Out of line: the locked path is the rare one where an owner enters, and
  // kept out of the callers it lets the owner's section inline into them
  // (std::lock_guard and std::unique_lock over self_biased_mutex included).
  KEEL_NOINLINE void lock() noexcept {
    lock_.lock();
    count_streak();
  }
  bool try_lock() noexcept {
    if (!lock_.try_lock()) return false;
    count_streak();
    return true;
  }
  void unlock() noexcept { lock_.unlock(); }

  std::uint32_t bias_after() const noexcept { return bias_after_; }  // under the lock, or for tests

 private:
  // Under the lock: ends an ownership this locker broke, and makes the
  // caller the owner when this section completes its streak.
  void count_streak() noexcept {
    const thread_token me = this_thread_token();
    if (lock_.took_from_owner()) {
      lock_.clear_owner();
      if (bias_after_ < max_bias_after) bias_after_ *= 2;
      streak_ = 0;
    }
    if (me != last_) {
      last_ = me;
      streak_ = 0;
    }
    if (++streak_ == bias_after_) lock_.set_owner();
  }

  biased_lock lock_;
  // Guarded by lock_.
  thread_token last_ = nullptr;
  std::uint32_t streak_ = 0;
  std::uint32_t bias_after_ = initial_bias_after;
};

// Enters @p l (a biased_lock or a self_biased_lock) as its owner, or locks
// it: one section either way.
template <class Lock>
class biased_section {
 public:
  KEEL_ALWAYS_INLINE explicit biased_section(Lock& l) noexcept : lock_(l), owned_(l.enter()) {
    if (!owned_) lock_.lock();
  }
  KEEL_ALWAYS_INLINE ~biased_section() {
    if (owned_) {
      lock_.leave();
    } else {
      lock_.unlock();
    }
  }
  biased_section(const biased_section&) = delete;
  biased_section& operator=(const biased_section&) = delete;

 private:
  Lock& lock_;
  bool owned_;
};
// The section of a self_biased_lock: what a pool hit and a per-task commit take.
using self_biased_section = biased_section<self_biased_lock>;

// A self_biased_lock behind lock() / unlock() alone, for code written
// against a mutex (std::lock_guard, std::unique_lock that unlocks early,
// std::scoped_lock): lock() takes the owner's entry when it can, and the
// holder remembers which section it entered in a field only the holder
// touches (the sections exclude each other, so no other thread reads or
// writes it meanwhile). The checked layer's device books take it at every
// captured launch: the capturing thread enters with plain stores.
// Ownership: none (a lock). Thread safety: Lockable from any thread; not
// recursive. Exceptions: none. A contended lock spins, then yields (it
// never sleeps), like test_and_set_lock.
class self_biased_mutex {
 public:
  KEEL_ALWAYS_INLINE void lock() noexcept {
    if (KEEL_LIKELY(lock_.enter())) {
      entered_ = true;
      return;
    }
    lock_.lock();
    entered_ = false;
  }
  bool try_lock() noexcept {
    if (lock_.enter()) {
      entered_ = true;
      return true;
    }
    if (!lock_.try_lock()) return false;
    entered_ = false;
    return true;
  }
  KEEL_ALWAYS_INLINE void unlock() noexcept {
    if (entered_) {
      lock_.leave();
    } else {
      lock_.unlock();
    }
  }

 private:
  self_biased_lock lock_;
  bool entered_ = false;  // the holder's: how it entered (guarded by the section itself)
};

// std::unique_lock's subset that a hot path uses (lock at construction,
// unlock early, lock again, owns_lock), always inlined. GCC 12 keeps
// std::unique_lock<self_biased_mutex>::lock and std::lock_guard's
// constructor and destructor out of line (their checks for a missing mutex
// and a second lock make them too big for its heuristics): two calls
// around a section of a few stores, on every captured ACL launch.
// Ownership: holds the lock while owns_lock(). Thread safety: one thread's,
// like std::unique_lock. Exceptions: none (Mutex's lock and unlock are noexcept).
template <class Mutex>
class inlined_unique_lock {
 public:
  KEEL_ALWAYS_INLINE explicit inlined_unique_lock(Mutex& m) noexcept : m_(m) { m_.lock(); }
  KEEL_ALWAYS_INLINE ~inlined_unique_lock() {
    if (owns_) m_.unlock();
  }
  inlined_unique_lock(const inlined_unique_lock&) = delete;
  inlined_unique_lock& operator=(const inlined_unique_lock&) = delete;

  KEEL_ALWAYS_INLINE void lock() noexcept {
    m_.lock();
    owns_ = true;
  }
  KEEL_ALWAYS_INLINE void unlock() noexcept {
    owns_ = false;
    m_.unlock();
  }
  bool owns_lock() const noexcept { return owns_; }

 private:
  Mutex& m_;
  bool owns_ = true;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::detail
