// SPDX-License-Identifier: Apache-2.0
// The host backend's event record: each record of a default or timing event
// has its own mark, and a wait waits for the mark that was last when it was
// issued; an external event is a flag that waits block on.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "keel/core/test_and_set_lock.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

struct stream_state;

/// @cond
// A condition some threads block on: spin first, then sleep; the notifier
// takes the lock only when someone sleeps.
struct wait_point {
  std::mutex m;
  std::condition_variable cv;
  std::atomic<int> sleepers{0};

  template <class Pred>
  void wait(std::chrono::microseconds spin_budget, Pred pred) {
    if (spin_until(spin_budget, pred)) return;
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, pred);
    }
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  // The bounded form: false if the predicate is still false at the deadline.
  template <class Pred>
  bool wait_until(std::chrono::microseconds spin_budget, clock::time_point deadline, Pred pred) {
    if (spin_until(std::min(spin_budget, std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::max(deadline - clock::now(), clock::duration::zero()))),
                   pred))
      return true;
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    bool met = false;
    {
      std::unique_lock<std::mutex> lock(m);
      met = cv.wait_until(lock, deadline, pred);
    }
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    return met;
  }
  // Call after a seq_cst store that makes a predicate true.
  void notify() {
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(m);
      cv.notify_all();
    }
  }
};

// One record of a default or timing event: what a wait issued after it (and
// before the next record) waits for. Records on different streams complete
// in any order, so each has its own mark: a later record completing first
// must not release a wait for an earlier one (CUDA's and ACL's rule).
struct record_mark : ref_counted {
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> stamp_ns{0};
};

struct event_state : ref_counted {
  event_state(device_state& d, event_flags f) : dev(&d), flags(f), id(d.next_id.fetch_add(1)) { d.retain(); }
  ~event_state() {
    if (flags == event_flags::external) dev->live_external_.fetch_sub(1, std::memory_order_acq_rel);
    device_state::drop(dev);
  }
  event_state(const event_state&) = delete;
  event_state& operator=(const event_state&) = delete;
  device_state* dev;
  event_flags flags;
  std::uint64_t id;
  // The event's last record (null: never recorded), swapped by record() and
  // read by wait/query/synchronize under a lock of a few instructions.
  keel::detail::test_and_set_lock last_lock;
  ref_ptr<record_mark> last;
  std::atomic<bool> signalled{false};
  wait_point waiters;
  // The checked layer's books: where the last record was issued inside a capture.
  checked::event_books<stream_state*> books;

  ref_ptr<record_mark> last_record() {
    std::lock_guard<keel::detail::test_and_set_lock> lock(last_lock);
    return last;
  }
  // A new record; the caller enqueues complete(mark) in stream order.
  ref_ptr<record_mark> begin_record() {
    ref_ptr<record_mark> mark(new record_mark, {});
    ref_ptr<record_mark> previous;  // dropped after the lock
    std::lock_guard<keel::detail::test_and_set_lock> lock(last_lock);
    previous = std::exchange(last, mark);
    return mark;
  }
  void complete(record_mark& mark) {
    if (flags == event_flags::timing)
      mark.stamp_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(),
                          std::memory_order_relaxed);
    mark.done.store(true, std::memory_order_seq_cst);
    waiters.notify();
  }
  void signal() {
    signalled.store(true, std::memory_order_seq_cst);
    waiters.notify();
  }
  void block_until_signalled() {
    waiters.wait(dev->spin_budget(), [this] { return signalled.load(std::memory_order_seq_cst); });
  }
  void block_until(const record_mark& mark) {
    waiters.wait(dev->spin_budget(), [&mark] { return mark.done.load(std::memory_order_seq_cst); });
  }
  // What event synchronize waits for: the signal, or the last record at the call.
  bool wait_until(clock::time_point deadline) {
    if (flags == event_flags::external)
      return waiters.wait_until(dev->spin_budget(), deadline,
                                [this] { return signalled.load(std::memory_order_seq_cst); });
    const ref_ptr<record_mark> mark = last_record();
    if (!mark) return true;
    return waiters.wait_until(dev->spin_budget(), deadline,
                              [&mark] { return mark->done.load(std::memory_order_seq_cst); });
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
