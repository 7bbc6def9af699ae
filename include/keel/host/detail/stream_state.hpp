// SPDX-License-Identifier: Apache-2.0
// The host backend's stream record: a ring of tasks drained in order by the
// stream's own worker thread, its error state, and where its work goes while
// it captures.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "keel/core/asymmetric_fence.hpp"
#include "keel/core/biased_lock.hpp"
#include "keel/core/error.hpp"
#include "keel/host/detail/capture_state.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/host/detail/worker_wake.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
using ::keel::detail::biased_lock;
struct built_state;
struct model_state;

// Whether the workers of streams made from now on write each slot back
// after running its task (see stream_state::run_loop). Always true but for
// the runtime benchmarks, which clear it around making the stream of
// BM_eager_tiny_no_write_back so that the pair with BM_stream_eager_tiny
// measures, in one process, what the store buys. Read once per stream, by
// the thread that makes it.
inline std::atomic<bool> workers_write_slots_back{true};

struct stream_state : ref_counted {
  explicit stream_state(device_state& d) : dev(&d), id(d.next_id.fetch_add(1)) { d.retain(); }
  ~stream_state() { device_state::drop(dev); }
  stream_state(const stream_state&) = delete;
  stream_state& operator=(const stream_state&) = delete;

  device_state* dev;
  std::uint64_t id;
  const bool writes_slots_back = workers_write_slots_back.load(std::memory_order_relaxed);
  task_ring ring;
  worker_wake wake;  // the worker's idle spin and sleep, and its wake-up by submit()
  std::mutex m;
  std::condition_variable done_cv;
  std::atomic<int> waiters{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> destroy_on_exit{false};  // a task destroyed its own stream (destroy_stream)
  // stream_options (host/stream_config.hpp), set before the handle is handed
  // out; `forced` marks a destruction that discarded the work (its failure
  // is not reported).
  std::uint32_t flags = 0, priority = 0;
  bool forced = false;
  std::string failure;  // guarded by m
  std::mutex close_m;
  bool closed = false;  // guarded by close_m
  // The checked layer's books: whether work runs, is captured or staged; the
  // update lock is entered without an atomic operation by the thread that
  // began the last update (biased_lock).
  checked::stream_books<stream_state*, group_state*, biased_lock> books;
  // Where captured work goes (the capture this stream takes part in), set
  // by the native capture calls under the device books' lock.
  ref_ptr<capture_target> target;
  // Built models (keel/host/built_model.hpp): made persistent (it can be
  // bound), and while bound the model's build and this stream's part in it.
  bool persistent = false;
  built_state* bound = nullptr;
  std::size_t bound_part = 0;
  // The conditional body the next capture on this stream records into (keel/host/conditional.hpp).
  model_state* capture_into = nullptr;
  std::thread worker;

  // Every task issued to the stream so far has finished: the stream has
  // already reached a point issued now, so a control task (an event record,
  // signal or reset; a group's swap) can take effect on the caller's thread
  // with no enqueue and no worker wake-up. Work another thread issues
  // concurrently is ordered after it, as if issued after the call returned.
  bool idle() const noexcept { return ring.head() >= ring.tail(); }

  // Returns the task's index in the stream.
  template <bool Control, class F>
  std::uint64_t submit(F&& f) {
    const std::uint64_t index = ring.push<Control>(std::forward<F>(f));
    wake.after_publish();
    return index;
  }

  void run() {
    if (writes_slots_back)
      run_loop<true>();
    else
      run_loop<false>();
  }

  template <bool WriteBack>
  void run_loop() {
    std::uint64_t h = 0;
    for (;;) {
      slot* s = ring.ready(h);
      // (A device with no spin budget asked for no spinning at all.)
      if (s == nullptr && dev->spin_budget() > std::chrono::microseconds::zero()) s = catch_up(h);
      if (s == nullptr) {
        // Idle. Publish progress for synchronize() first (seq_cst pairs with
        // the waiters count), then spin for the device's budget and sleep.
        ring.set_head(h, std::memory_order_seq_cst);
        if (waiters.load(std::memory_order_seq_cst) > 0) notify_waiters();
        if (wake.wait_for_work(dev->spin_budget(), ring.light_publish(), [&] { return ring.ready(h) != nullptr; }))
          continue;
        return;  // stopping, and drained
      }
      try {
        s->fn(s->storage, dev, !failed.load(std::memory_order_relaxed));
      } catch (...) {
        const std::exception_ptr e = std::current_exception();
        record_failure(e);
        dev->task_failed(id, h, e);
      }
      // The worker writes the slot it has run (its sequence, which no one
      // reads until the submitter fills the slot again a lap later; the
      // submitter reuses a slot only after the head published past it, so
      // after this store). The line then goes back to the submitter from the
      // worker's cache, modified, instead of being shared by both until the
      // submitter's next store invalidates the worker's copy. What that buys
      // is measured by BM_stream_eager_tiny against BM_eager_tiny_no_write_back
      // (the same tasks on a worker started without it) in one run.
      if constexpr (WriteBack) s->sequence.store(0, std::memory_order_relaxed);
      // Progress is published every 64 tasks (and whenever the worker goes
      // idle): a store per task would bounce the line with a synchronize()
      // polling it.
      if ((++h & 63) == 0) ring.set_head(h, std::memory_order_release);
    }
  }

  // The worker has run every task submitted so far, most often in the
  // middle of a burst (it drains tiny tasks faster than a submitter issues
  // them). Progress is published at once (a synchronize() spinning on it
  // returns now), then the worker looks again after 1, 2, 4 ... 32
  // poll_delay()s (63 in all: one to a few microseconds) before it takes
  // the idle path (a locked store, a clock read, the spin budget, sleep).
  // Why back off: a worker that re-polls the next slot at once keeps
  // pulling the line its submitter is writing, and the two fall into step
  // at one line transfer per task (a tiny task then costs several times a
  // spinning ring's: BM_stream_eager_tiny against
  // BM_spsc_ring_baseline_tiny); waiting longer each time lets the
  // submitter fill a run of slots undisturbed, which the worker then takes
  // in a row. A task that arrives meanwhile waits at most the current step
  // (32 poll_delay()s, well under a microsecond). Waiters already asleep are woken here too (a
  // relaxed look: the idle path's seq_cst pair is what guarantees the
  // wake-up before the worker sleeps; this one keeps a stream fed without
  // pause from leaving them asleep).
  slot* catch_up(std::uint64_t h) {
    ring.set_head(h, std::memory_order_release);
    if (waiters.load(std::memory_order_relaxed) > 0) notify_waiters();
    for (unsigned delay = 1; delay <= catch_up_max_delay; delay *= 2) {
      for (unsigned i = 0; i < delay; ++i) poll_delay();
      if (slot* s = ring.ready(h)) return s;
    }
    return nullptr;
  }
  static constexpr unsigned catch_up_max_delay = 32;

  void notify_waiters() {
    std::lock_guard<std::mutex> lock(m);
    done_cv.notify_all();
  }

  // After the worker has exited: control tasks submitted after it stopped
  // still run (releases, event records); work is dropped unrun.
  void run_leftovers() noexcept {
    for (std::uint64_t h = ring.head();; ++h) {
      slot* s = ring.ready(h);
      if (s == nullptr) break;
      try {
        s->fn(s->storage, dev, false);
      } catch (...) {
        report_current_exception("keel::host::destroy_stream");
      }
      ring.set_head(h + 1, std::memory_order_release);
    }
  }

  void record_failure(std::exception_ptr e) {
    std::string what;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
      what = "a task threw a non-standard exception";
    }
    std::lock_guard<std::mutex> lock(m);
    if (!failed.load(std::memory_order_relaxed)) {
      failure = std::move(what);
      failed.store(true, std::memory_order_release);
    }
  }

  // Blocks until every task submitted before the call has finished.
  void drain() {
    const std::uint64_t target = ring.tail();
    if (spin_until(dev->spin_budget(), [&] { return ring.head() >= target; })) return;
    waiters.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(m);
      done_cv.wait(lock, [&] { return ring.head() >= target; });
    }
    waiters.fetch_sub(1, std::memory_order_relaxed);
  }

  // drain(), bounded: false if work issued before the call is still running at the deadline.
  bool drain_until(clock::time_point deadline) {
    const std::uint64_t target = ring.tail();
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        std::max(deadline - clock::now(), clock::duration::zero()));
    if (spin_until(std::min(dev->spin_budget(), left), [&] { return ring.head() >= target; })) return true;
    waiters.fetch_add(1, std::memory_order_seq_cst);
    bool done = false;
    {
      std::unique_lock<std::mutex> lock(m);
      done = done_cv.wait_until(lock, deadline, [&] { return ring.head() >= target; });
    }
    waiters.fetch_sub(1, std::memory_order_relaxed);
    return done;
  }

  std::string describe() const { return "stream #" + std::to_string(id); }
};

[[noreturn]] inline void throw_timeout(const char* api, const std::string& what, std::chrono::microseconds timeout) {
  ::keel::detail::throw_composed(
      errc::timeout, api,
      {what, " within ", timeout.count(),
       " us; the work goes on and nothing is lost (wait again, or synchronize without a timeout)"});
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
