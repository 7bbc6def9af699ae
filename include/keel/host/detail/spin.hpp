// SPDX-License-Identifier: Apache-2.0
// How the host backend's threads wait for each other: a poll that stays
// cheap inside a VM, and a spin bounded by the device's spin budget.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// Deliberately not the pause instruction: in the VMs we measured (a
// firecracker guest, perf-anchors section 0) a pause inside a polling loop
// triggers pause-loop exiting and the vCPU loses its time slice: a spin
// hand-off with one pause per poll took 150 us instead of 0.26 us. A
// compiler barrier keeps the poll honest without that cliff.
inline void cpu_relax() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// A short local delay between polls of a line another thread writes.
inline void poll_delay() noexcept {
  for (int i = 0; i < 32; ++i) cpu_relax();
}

using clock = std::chrono::steady_clock;

// How long an idle worker or a waiter spins before it sleeps is the
// device's spin budget (device_options::spin_budget, 50 us by default).
// Waking a sleeping thread costs ~25 us here (perf-anchors section 3), so a
// burst of work that arrives within the budget is picked up at spinning speed.
// For the first few microseconds (a replay of a thousand tiny tasks) the spin is pure; after that each
// poll yields, so that on an oversubscribed machine (more runnable threads
// than cores, e.g. a build running beside us) the spinner hands its core to
// the thread it is waiting for instead of starving it. A budget shorter than
// the pure phase skips it; a budget of 0 checks once and sleeps.
inline constexpr unsigned pure_spin_polls = 256;  // about 2.5 us
inline constexpr std::chrono::microseconds pure_spin_min_budget{10};

template <class Pred>
bool spin_until(std::chrono::microseconds budget, Pred&& pred) {
  if (budget <= std::chrono::microseconds::zero()) return pred();
  const unsigned pure = budget >= pure_spin_min_budget ? pure_spin_polls : 0;
  const auto until = clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    if (i < pure) {
      poll_delay();
    } else {
      std::this_thread::yield();
      if ((i & 15) == 0 && clock::now() > until) return false;
    }
  }
}

/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
