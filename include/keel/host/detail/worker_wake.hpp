// SPDX-License-Identifier: Apache-2.0
// How a stream's worker waits for work and how a submitter wakes it: spin
// for the device's spin budget, then sleep on a condition variable, with
// Dekker's protocol between "a task is in" and "the worker sleeps" and one
// wake-up per sleep, however many tasks arrive while the worker wakes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "keel/host/detail/fence.hpp"
#include "keel/host/detail/spin.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// The submitter's side (after_publish) runs at every task, so it is a
// compiler barrier and one load of a line the worker writes only when it
// goes to sleep. The worker's side (wait_for_work) pays the store-load
// barrier for both when the ring publishes lightly (asymmetric_fence).
//
// One wake-up per sleep: the submitter that finds the worker asleep clears
// the flag with an exchange and is the only one to take the mutex and
// notify. Before, every task submitted between the worker's sleep and its
// waking (tens of microseconds on a loaded machine) found the flag still set
// and paid a mutex and a futex call; issue 20 counted 5637 such wake-ups
// for 92 sleeps in one run of a tiny-task benchmark.
class worker_wake {
 public:
  // Submitter, after the task's slot is published: wakes the worker if it
  // sleeps. Throws std::system_error only if the mutex does (never in practice).
  void after_publish() {
    // Dekker with wait_for_work: the task is in, now look whether the worker
    // sleeps. The compiler barrier is all this side pays when the ring
    // publishes lightly (see asymmetric_fence); otherwise the ring's seq_cst
    // publication and this seq_cst load order themselves.
    asymmetric_fence::light();
    if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(m_);
      cv_.notify_one();
    }
  }

  // Worker, when its ring is empty: spins for @p spin_budget (after
  // poll_delay() between polls, so that a submitter fills a batch of slots
  // before the worker pulls their line), then sleeps until ready() or a
  // stop. @p light_publish: the ring publishes without a store-load barrier
  // (the worker supplies it with asymmetric_fence::heavy()). Returns
  // ready(): false only when stopping with nothing left to run.
  template <class Ready>
  bool wait_for_work(std::chrono::microseconds spin_budget, bool light_publish, Ready&& ready) {
    if (spin_until(spin_budget, [&] {
          poll_delay();
          return ready() || stopping_.load(std::memory_order_relaxed);
        }) &&
        ready())
      return true;
    std::unique_lock<std::mutex> lock(m_);
    sleeping_.store(true, std::memory_order_seq_cst);
    // The store-load barrier a lightly published task did not pay.
    if (light_publish) asymmetric_fence::heavy();
    cv_.wait(lock, [&] { return ready() || stopping_.load(std::memory_order_seq_cst); });
    sleeping_.store(false, std::memory_order_relaxed);
    return ready();
  }

  // Asks the worker to stop once its ring is empty. @p wake: the caller is
  // not the worker (a task of the stream needs no wake-up: its worker sees
  // the flag when it next goes idle).
  void request_stop(bool wake) {
    stopping_.store(true, std::memory_order_seq_cst);
    if (!wake) return;
    std::lock_guard<std::mutex> lock(m_);
    cv_.notify_all();
  }
  bool stop_requested() const noexcept { return stopping_.load(std::memory_order_relaxed); }

  // Whether the worker has said it sleeps and no submitter has woken it yet.
  bool asleep() const noexcept { return sleeping_.load(std::memory_order_seq_cst); }

 private:
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stopping_{false};
  std::mutex m_;
  std::condition_variable cv_;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
