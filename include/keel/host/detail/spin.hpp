// SPDX-License-Identifier: Apache-2.0
// How the host backend's threads wait for each other: a poll that stays
// cheap inside a VM and a spin bounded by the device's spin budget (the
// short sections' lock is keel/core/test_and_set_lock.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond

// Deliberately not the pause instruction: inside a virtual machine a pause
// in a polling loop can trigger pause-loop exiting, and the vCPU then loses
// its time slice: a hand-off that takes a fraction of a microsecond becomes
// one of a hundred or more (BM_stream_roundtrip shows it). A compiler
// barrier keeps the poll honest without that cliff.
inline void cpu_relax() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// A short local delay between polls of a line another thread writes: 32
// compiler barriers, a few to a few tens of nanoseconds depending on the
// core's clock.
inline void poll_delay() noexcept {
  for (int i = 0; i < 32; ++i) cpu_relax();
}

using clock = std::chrono::steady_clock;

// How long an idle worker or a waiter spins before it sleeps is the
// device's spin budget (device_options::spin_budget, 50 us by default).
// Waking a sleeping thread costs tens of microseconds (a futex wake and a
// reschedule), so a burst of work that arrives within the budget is picked
// up at spinning speed.
//
// For the first microsecond the spin is pure (a task handed to an awake
// worker, the end of a short burst); after that each poll yields, so that on
// an oversubscribed machine (more runnable threads than cores, e.g. a build
// running beside us) the spinner hands its core to the thread it is waiting
// for instead of starving it. A microsecond is about what one sched_yield()
// costs: spinning purely for as long as the other way of waiting costs is
// the usual rent-or-buy rule, and it keeps an idle machine's hand-off at
// spinning speed. The phase is bounded by time, not by a count of polls:
// the cost of a poll varies several-fold between cores, and with both
// threads of a hand-off sharing one core (a loaded machine) every poll is
// time the other thread cannot run. A budget shorter than
// pure_spin_min_budget skips the pure phase; a budget of 0 checks once and
// sleeps.
inline constexpr std::chrono::nanoseconds pure_spin_time{1000};
inline constexpr std::chrono::microseconds pure_spin_min_budget{10};
inline constexpr unsigned polls_per_clock_read = 4;  // a clock read costs about one to two polls

template <class Pred>
bool spin_until(std::chrono::microseconds budget, Pred&& pred) {
  if (budget <= std::chrono::microseconds::zero()) return pred();
  const auto start = clock::now();
  const auto until = start + budget;
  if (budget >= pure_spin_min_budget) {
    const auto pure_until = start + pure_spin_time;
    for (unsigned i = 1;; ++i) {
      if (pred()) return true;
      poll_delay();
      if (i % polls_per_clock_read == 0 && clock::now() > pure_until) break;
    }
  }
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    std::this_thread::yield();
    if ((i & 15) == 0 && clock::now() > until) return false;
  }
}

/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
