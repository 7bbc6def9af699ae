// SPDX-License-Identifier: Apache-2.0
// Asymmetric fences: the hot side (a thread publishing a task, the owner of a
// biased lock entering its section) pays a compiler barrier, the cold side (a
// worker about to sleep, another thread breaking into a biased lock) pays a
// membarrier() system call. Used by the host backend's sleep/wake hand-off
// and by keel/core/biased_lock.hpp.
#pragma once

#include <atomic>

#include "keel/core/config.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

KEEL_BEGIN_NAMESPACE namespace detail {

/// @cond
#if defined(__SANITIZE_THREAD__)
#define KEEL_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KEEL_DETAIL_TSAN 1
#endif
#endif

// The wake protocol is Dekker's: the publisher stores "task in", then loads
// "worker asleep"; the worker stores "asleep", then loads "task in". Each
// side needs a store-load barrier, and on the publisher's side that barrier
// (a locked instruction on x86) waited for the slot's cache line to arrive
// from the worker: it was most of the cost of a tiny task.
//
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every running thread of
// the process execute a full barrier before it returns (a thread that is
// not running has one at its next context switch). So if the worker issues
// it between its two steps, the publisher needs only a compiler barrier
// between its own: the kernel supplies the publisher's barrier on the rare
// occasions (a worker going to sleep) that need it. This is the pattern the
// membarrier(2) manual describes.
//
// Where the call is missing (not Linux, a kernel before 4.14, a seccomp
// filter that refuses it) or under ThreadSanitizer (which cannot see a
// barrier the kernel issues), both sides fall back to seq_cst operations.
// Ownership: none (static functions). Thread safety: any thread, at any
// time. Exceptions: none.
class asymmetric_fence {
 public:
  // Whether the cheap side may be a compiler barrier. Decided once per
  // process: the registration is process-wide and its answer cannot change.
  static bool available() noexcept { return registration(); }

  // The process's answer to the registration, made on first use (by
  // keel_runtime, once per process, with keel::runtime).
  static const bool& registration() noexcept;

  // The cold side: every thread of the process that stored before this
  // call returns is seen to have stored. Only valid when available().
  // A fence on this side alone would not be enough (the hot side paid only
  // a compiler barrier), so a refused call falls back to the system-wide
  // command, which needs no registration and gives the same guarantee more
  // slowly; once registered, the expedited one fails only for lack of
  // kernel memory. Should both be refused (a seccomp filter installed after
  // the registration), it asks again after a yield until one is granted:
  // waiting is the one answer that neither loses a wake-up nor lets two
  // threads into a biased lock.
  static void heavy() noexcept {
#if defined(__linux__) && !defined(KEEL_DETAIL_TSAN)
    while (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0 &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_SHARED, 0, 0) != 0)
      sched_yield();
#endif
  }

  // The hot side: keeps the compiler from moving the publisher's store past
  // its load; the hardware is kept in order by heavy().
  static void light() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

  // Asks the kernel for the registration; registration() keeps the answer.
  static bool register_process() noexcept {
#if defined(__linux__) && !defined(KEEL_DETAIL_TSAN)
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
  }
};
#if KEEL_USE_RUNTIME_LIBRARY
KEEL_RUNTIME_API const bool& process_fence_registration() noexcept;
#endif

inline const bool& asymmetric_fence::registration() noexcept {
#if KEEL_USE_RUNTIME_LIBRARY
  return process_fence_registration();
#else
  static const bool registered = register_process();
  return registered;
#endif
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::detail
