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

#include "keel/core/asymmetric_fence.hpp"
#include "keel/host/detail/spin.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
using ::keel::detail::asymmetric_fence;
// The submitter's side (after_publish) runs at every task, so it is a
// compiler barrier and one load of a line the worker writes only when it
// goes to sleep. The worker's side (wait_for_work) pays the store-load
// barrier for both when the ring publishes lightly (asymmetric_fence).
//
// One wake-up per sleep: the submitter that finds the worker asleep clears
// the flag with an exchange and is the only one to take the mutex and
// notify. Before, every task submitted between the worker's sleep and its
// waking (tens of microseconds on a loaded machine) found the flag still set
// and paid a mutex and a futex call: many wake-ups per sleep in a stream
// of tiny tasks.
//
// Why no task is left unrun (ready() stays true once a task is in: only the
// worker takes tasks out). The worker blocks only in cv_.wait(), and before
// every block, each time, under m_ and without releasing it in between, it
// makes an *announcement*: (1) store sleeping_ = true, (2) the store-load
// barrier, (3) look at ready() and stopping_ once more. A submitter P
// publishes its task, then (4) barrier, (5) loads sleeping_, and if it is
// set, (6) exchanges it for false and, only if the exchange took a true,
// (7) locks m_ and notifies.
//
// Suppose P's task is never run: then the worker blocks after some last
// announcement A and never wakes. A's look (3) missed the task, so by
// Dekker's argument (both sides store, barrier, load; at least one load
// sees the other's store) P's load (5) reads A's true or a later value of
// sleeping_. After A the worker, blocked, writes sleeping_ no more (its
// store of false comes after waking), so the later values are exchanges'
// falses, and in sleeping_'s modification order the first exchange after
// A, P's own or another submitter's, reads A's true and succeeds. That
// submitter's section of m_ (7) comes after the worker's section that holds
// A (had it come first, the exchange before it would happen before A's
// store and could not read A's value or a later one), so it begins only
// once the worker has released m_ in cv_.wait(), blocked (release and
// block are one step for a notifier holding m_). Its notify wakes the
// worker: contradiction. A stop request is the same with stopping_ stored
// first and notify_all.
//
// The announcement must be repeated at *every* block, not once per sleep:
// a submitter may read the flag of one sleep (5), the worker find that
// submitter's task at (3) and run it, sleep again, and only then the
// submitter take the flag (6) and notify. The worker wakes to an empty
// ring; had it gone back to cv_.wait() with the flag down (what
// cv_.wait(lock, predicate) does), the next task would find it down and
// nobody would wake the worker: a lost wake-up, a hang in real use (the
// host worker wake test "a wake-up that finds no work leaves the worker
// woken by the next task" pins it). Re-announcing
// costs a membarrier() only on a wake-up that finds no work.
//
// The barriers (2) and (4): with a ring that publishes lightly (a release
// store of the slot, and for the ring lock's owner plain stores to leave
// its section, biased_lock), (4) is a compiler barrier that keeps the
// slot's store before the load (5) in program order, and (2) is
// asymmetric_fence::heavy(), which orders every running thread's earlier
// stores before its later loads. Otherwise the ring publishes with a
// seq_cst store, (5) and (1) are seq_cst: in the single total order of
// seq_cst operations, (3) reading an older slot puts it before P's store,
// hence (1) before (5), which so reads (1) or later.
class worker_wake {
 public:
  // Submitter, after the task's slot is published: wakes the worker if it
  // sleeps. Throws std::system_error only if the mutex does (never in practice).
  void after_publish() {
    // (4) and (5) above: the task is in, now look whether the worker
    // sleeps. The compiler barrier is all this side pays when the ring
    // publishes lightly (see asymmetric_fence); otherwise the ring's seq_cst
    // publication and this seq_cst load order themselves. (6): one of the
    // submitters that saw the flag takes it, and only it notifies.
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
    for (;;) {
      // The announcement, (1) to (3) above, before every block.
      sleeping_.store(true, std::memory_order_seq_cst);
      // The store-load barrier a lightly published task did not pay.
      if (light_publish) asymmetric_fence::heavy();
      if (ready() || stopping_.load(std::memory_order_seq_cst)) break;
      cv_.wait(lock);
    }
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
