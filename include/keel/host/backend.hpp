// SPDX-License-Identifier: Apache-2.0
// The host backend: streams, events, capture into models, task groups and
// updates on the CPU with the semantics of a device runtime, every rule checked.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/detail/biased_lock.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/host/detail/worker_wake.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/types.hpp"

namespace keel::host {
namespace detail {

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

struct capture_session;
struct group_state;

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
  spin_lock last_lock;
  ref_ptr<record_mark> last;
  std::atomic<bool> signalled{false};
  wait_point waiters;
  // Where the last record happened, if it was inside a capture (guarded by
  // dev->capture_mutex; `captured` is the lock-free hint).
  std::atomic<bool> captured{false};
  ref_ptr<capture_session> session;
  std::size_t lane = 0;
  std::size_t position = 0;

  ref_ptr<record_mark> last_record() {
    std::lock_guard<spin_lock> lock(last_lock);
    return last;
  }
  // A new record; the caller enqueues complete(mark) in stream order.
  ref_ptr<record_mark> begin_record() {
    ref_ptr<record_mark> mark(new record_mark, {});
    ref_ptr<record_mark> previous;  // dropped after the lock
    std::lock_guard<spin_lock> lock(last_lock);
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

// A group's tasks as one execution sees them. `runners` counts executions
// running the list, so an update may refill a replaced list only once
// nobody runs it any more.
struct task_list {
  std::vector<replay_task> tasks;
  std::atomic<int> runners{0};
  // Guarded by the group's lock. A list an update staged stays unpublished
  // until its swap runs; until then the stream that staged it (`claim`) may
  // refill it in place with a later update (see backend::update_end).
  bool published = true;
  const void* claim = nullptr;
};

// A marked group. One word (`state`) is both the lock of its task lists and
// the update claim, so an update claims the group with one atomic operation
// and, at its end, swaps the new tasks in and gives the claim back with
// another (the unlock is a plain store).
//
// The claim holds no reference: if the last reference goes while the group
// is claimed (the model and every handle destroyed during an update), the
// group is marked orphaned and the claim holder deletes it when the claim
// ends; so the updating stream's raw pointer stays valid.
struct group_state {
  explicit group_state(device_state& d, std::uint64_t stream) : id(d.next_id.fetch_add(1)), marked_on(stream) {}
  group_state(const group_state&) = delete;
  group_state& operator=(const group_state&) = delete;

  // ---- references (ref_ptr's interface) ----
  void retain() const noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  // True when the caller is to delete the group: the last reference went
  // and no update holds the claim (else the claim holder deletes it).
  bool release_ref() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    const std::uint32_t held = lock();
    if (held & claimed) {
      unlock(held | orphaned);
      return false;
    }
    unlock(held);
    return true;
  }
  // A reference from the claim holder, who has only a raw pointer: false if
  // the group is orphaned (its last reference already went).
  bool try_retain() noexcept {
    long n = refs.load(std::memory_order_relaxed);
    do {
      if (n == 0) return false;
    } while (!refs.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return true;
  }

  // ---- the state word: lock, claim, orphan ----
  static constexpr std::uint32_t locked = 1, claimed = 2, orphaned = 4;
  // Every change to `state` is made by a CAS that expects it unlocked, or by
  // the lock holder: so while held, the word cannot change, and unlock() is
  // a plain store of the value lock() returned (minus `locked`).
  std::uint32_t lock() noexcept {
    std::uint32_t cur = state.load(std::memory_order_relaxed) & ~locked;
    while (!state.compare_exchange_weak(cur, cur | locked, std::memory_order_acquire, std::memory_order_relaxed)) {
      if (cur & locked) {
        cpu_relax();
        cur &= ~locked;
      }
    }
    return cur | locked;
  }
  void unlock(std::uint32_t held) noexcept { state.store(held & ~locked, std::memory_order_release); }
  // One updater at a time: false if another update holds the claim.
  bool try_claim() noexcept {
    std::uint32_t cur = state.load(std::memory_order_relaxed) & ~locked;
    for (;;) {
      if (cur & claimed) return false;
      if (state.compare_exchange_weak(cur, cur | claimed, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
      if (cur & locked) {
        cpu_relax();
        cur &= ~locked;
      }
    }
  }
  // Ends the claim taken by try_claim; deletes @p g if it was orphaned meanwhile.
  static void end_claim(group_state* g) noexcept {
    const std::uint32_t held = g->lock();
    g->unlock(held & ~claimed);
    if (held & orphaned) delete g;
  }

  // What the updating thread reads each update.
  alignas(64) mutable std::atomic<long> refs{1};
  std::uint64_t id;
  std::uint64_t marked_on;
  std::atomic<bool> model_alive{false};
  std::vector<kernel_kind> signature;  // the kinds an update must match; fixed at group end
  // The replacement being issued. Belongs to the claim holder: kernels
  // launched during the update append here under the update stream's
  // update_m; once update_end has detached the group from the stream, the
  // committing thread alone uses it, with no lock.
  std::vector<replay_task> staging;
  // Tasks an update replaced in a spare list, left for the next claim
  // holder to destroy outside every lock (claim holder only).
  std::vector<replay_task> retired;
  // The last swap an update enqueued (claim holder only): its list, its
  // stream and its index there. Weak, so the replaced tasks (and what they
  // keep alive) leave with their group.
  std::weak_ptr<task_list> last_swap;
  const void* last_swap_stream = nullptr;
  std::uint64_t last_swap_index = 0;
  std::vector<replay_task> building;  // while marking (dev->capture_mutex)

  // What executions use, on its own line: the execution streams' workers
  // lock `state` at every run of the group. The lock guards `tasks` and
  // `spares` (swapped by updates).
  alignas(64) std::atomic<std::uint32_t> state{0};
  std::shared_ptr<task_list> tasks;
  // Lists updates replaced, kept for later updates to refill, so a steady
  // stream of updates allocates nothing (several, because the update stream
  // may not have reached the last swap when the next update is issued).
  std::array<std::shared_ptr<task_list>, 4> spares;

  // RAII for the state lock.
  struct guard {
    explicit guard(group_state& g) noexcept : g(g), held(g.lock()) {}
    ~guard() { g.unlock(held); }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    group_state& g;
    std::uint32_t held;
  };

  // The replay of the group node: runs the list current when the execution
  // reaches the group.
  void run() {
    std::shared_ptr<task_list> list;
    {
      guard lock(*this);
      list = tasks;
      if (!list) return;
      list->runners.fetch_add(1, std::memory_order_relaxed);
    }
    struct done {
      task_list& l;
      ~done() { l.runners.fetch_sub(1, std::memory_order_release); }
    } finished{*list};
    for (const replay_task& t : list->tasks) t();
  }
  void replace(std::shared_ptr<task_list> list) {
    guard lock(*this);
    list->published = true;
    tasks.swap(list);
    for (auto& slot : spares) {
      if (!slot) {
        slot.swap(list);
        break;
      }
    }
    // a list no slot took is released after the lock
  }
  // Claim holder, `retired` empty: makes `staging` the group's tasks and
  // ends the claim, in one acquisition of the lock. The tasks go into a
  // spare list no execution runs any more (allocated only when none is
  // free); the spare's old tasks go to `retired`, for the next claim holder
  // to destroy outside every lock, and `staging` gets retired's (empty)
  // vector. Deletes the group if it was orphaned during the update.
  void publish_and_end_claim() {
    std::shared_ptr<task_list> fresh;  // released after the lock, like a list no slot took
    for (;;) {
      const std::uint32_t held = lock();
      std::shared_ptr<task_list>* into = nullptr;
      for (auto& slot : spares) {
        if (slot && slot->runners.load(std::memory_order_acquire) == 0) {
          into = &slot;  // a spare to refill: no allocation
          break;
        }
        if (!slot && fresh && into == nullptr) into = &slot;
      }
      if (into == nullptr && fresh) into = &fresh;  // every slot holds a running list: the old list leaves
      if (into != nullptr) {
        if (!*into) into->swap(fresh);
        task_list& list = **into;
        list.tasks.swap(staging);
        staging.swap(retired);
        list.published = true;
        into->swap(tasks);  // the old list takes the slot (an execution may still run it)
        unlock(held & ~claimed);
        if (held & orphaned) delete this;
        return;
      }
      unlock(held);
      fresh = std::make_shared<task_list>();  // no spare is free: allocate outside the lock and retry
    }
  }
  // A list for an update to fill: a spare one that no execution runs any
  // more (one that started before the last swap may still run it).
  std::shared_ptr<task_list> take_spare(const void* claim) {
    std::shared_ptr<task_list> list;
    {
      guard lock(*this);
      for (auto& slot : spares) {
        if (slot && slot->runners.load(std::memory_order_acquire) == 0) {
          list = std::move(slot);
          list->published = false;
          list->claim = claim;
          break;
        }
      }
    }
    if (list) {
      list->tasks.clear();
    } else {
      list = std::make_shared<task_list>();
      list->published = false;
      list->claim = claim;
    }
    return list;
  }
  // Refills @p list, staged by @p claim and not yet swapped in, with @p with
  // (the list's previous tasks are left in @p with). False if its swap ran.
  bool refill_unpublished(task_list& list, const void* claim, std::vector<replay_task>& with) {
    guard lock(*this);
    if (list.published || list.claim != claim) return false;
    list.tasks.swap(with);
    return true;
  }
};

struct stream_state;

struct capture_session : ref_counted {
  struct lane {
    ref_ptr<stream_state> stream;
    std::size_t count = 0;   // nodes this stream captured
    std::size_t joined = 0;  // nodes another lane has waited for
  };
  capture_mode mode = capture_mode::global;
  std::thread::id thread;
  std::uint64_t id = 0;
  stream_state* origin = nullptr;
  std::vector<replay_task> nodes;
  std::vector<lane> lanes;
  std::vector<ref_ptr<group_state>> groups;
  ref_ptr<group_state> open_group;
  std::size_t open_group_lane = 0;
  bool active = true;
};

struct model_state : ref_counted {
  model_state(device_state& d, std::vector<replay_task> n, std::vector<ref_ptr<group_state>> g)
      : dev(&d), id(d.next_id.fetch_add(1)), nodes(std::move(n)), groups(std::move(g)) {
    d.retain();
  }
  ~model_state() { device_state::drop(dev); }
  model_state(const model_state&) = delete;
  model_state& operator=(const model_state&) = delete;
  device_state* dev;
  std::uint64_t id;
  std::vector<replay_task> nodes;
  std::vector<ref_ptr<group_state>> groups;

  // The replay loop: the recorded work runs right here, on the executing
  // stream's worker, one indirect call per task. After a task throws (or
  // when the stream is already in its error state: work == false) the rest
  // of the work is skipped but event operations still run, so a stream
  // waiting on an event this model records never hangs; the first failure
  // is rethrown at the end.
  void run(bool work = true) const {
    std::exception_ptr failure;
    for (const replay_task& t : nodes) {
      if (work) {
        try {
          t();
        } catch (...) {
          failure = std::current_exception();
          work = false;
        }
      } else if (t.runs_when_failed()) {
        try {
          t.run_failed();
        } catch (...) {
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
};

struct stream_state : ref_counted {
  explicit stream_state(device_state& d) : dev(&d), id(d.next_id.fetch_add(1)) { d.retain(); }
  ~stream_state() { device_state::drop(dev); }
  stream_state(const stream_state&) = delete;
  stream_state& operator=(const stream_state&) = delete;

  device_state* dev;
  std::uint64_t id;
  task_ring ring;
  worker_wake wake;  // the worker's idle spin and sleep, and its wake-up by submit()
  std::mutex m;
  std::condition_variable done_cv;
  std::atomic<int> waiters{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> destroy_on_exit{false};  // a task destroyed its own stream (destroy_stream)
  std::string failure;  // guarded by m
  std::mutex close_m;
  bool closed = false;  // guarded by close_m
  // 0: work runs; 1: work is captured; 2: work replaces a group's tasks.
  // The lock-free hint every issuing call reads first; the state itself is
  // `session` or `updating`, never both.
  std::atomic<std::uint8_t> redirect{0};
  // The capture this stream takes part in, and its lane there. Guarded by
  // dev->capture_mutex; whoever changes `session` (or `redirect`) also holds
  // update_m, so an update can check "not capturing" under update_m alone.
  ref_ptr<capture_session> session;
  std::size_t lane = 0;
  // The update in progress: the group being updated (kept alive by its
  // claim, see group_state) or null. Guarded by update_m alone, a lock of
  // the stream's own: an update takes no device-wide lock, and a kernel
  // launched during the update stages itself into updating->staging under
  // it. The thread that began the update owns update_m until another
  // thread locks it: its launches and its end() enter with plain stores
  // (biased_lock), so an update costs no atomic operation per task. Lock
  // order: dev->capture_mutex, then update_m; no group's lock is ever taken
  // under update_m.
  group_state* updating = nullptr;
  biased_lock update_m;
  std::thread worker;

  // Returns the task's index in the stream.
  template <bool Control, class F>
  std::uint64_t submit(F&& f) {
    const std::uint64_t index = ring.push<Control>(std::forward<F>(f));
    wake.after_publish();
    return index;
  }

  void run() {
    std::uint64_t h = 0;
    for (;;) {
      slot* s = ring.ready(h);
      if (s == nullptr) {
        // Idle. Publish progress for synchronize() first (seq_cst pairs with
        // the waiters count), then spin for the device's budget and sleep.
        ring.set_head(h, std::memory_order_seq_cst);
        if (waiters.load(std::memory_order_seq_cst) > 0) {
          std::lock_guard<std::mutex> lock(m);
          done_cv.notify_all();
        }
        if (wake.wait_for_work(dev->spin_budget(), ring.light_publish(), [&] { return ring.ready(h) != nullptr; }))
          continue;
        return;  // stopping, and drained
      }
      try {
        s->fn(s->storage, dev, !failed.load(std::memory_order_relaxed));
      } catch (...) {
        record_failure(std::current_exception());
      }
      // Progress is published every 64 tasks (and whenever the worker goes
      // idle): a store per task would bounce the line with a synchronize()
      // polling it.
      if ((++h & 63) == 0) ring.set_head(h, std::memory_order_release);
    }
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
  throw_error(errc::timeout, api,
              what + " within " + std::to_string(timeout.count()) +
                  " us; the work goes on and nothing is lost (wait again, or synchronize without a timeout)");
}

inline std::string describe_capture(const capture_session& c, const stream_state& s) {
  return s.describe() + " is capturing (capture #" + std::to_string(c.id) + ", mode " +
         std::string(to_string(c.mode)) + ", task group open: " + (c.open_group ? "yes" : "no") + ")";
}

// The mode rule for a call that is unsafe during capture (a synchronize, a
// blocking copy, a query of an event recorded inside the capture).
inline void check_unsafe(const capture_session& c, const char* api, const std::string& what) {
  const bool refused = c.mode == capture_mode::global ||
                       (c.mode == capture_mode::thread_local_ && c.thread == std::this_thread::get_id());
  if (refused)
    throw_error(errc::capture_violation, api,
                what + " is unsafe during capture: " + describe_capture(c, *c.origin) +
                    (c.mode == capture_mode::global ? "; global mode refuses it from every thread"
                                                    : "; thread-local mode refuses it from the capturing thread"));
}

// The device-wide form: a call unsafe while any capture is in progress.
inline void check_unsafe_device(device_state& dev, const char* api, const std::string& what) {
  if (dev.strict_captures.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(dev.capture_mutex);
  for (const capture_session* c : dev.captures) check_unsafe(*c, api, what);
}

// While a stream marks a task group, no other capturing stream may issue
// work (the device rule). Caller holds dev->capture_mutex.
inline void check_may_issue(const stream_state& s, const char* api) {
  const stream_state* g = s.dev->group_stream;
  if (g != nullptr && g != &s)
    throw_error(errc::capture_violation, api,
                "while " + g->describe() + " marks a task group, no other capturing stream may issue work; " +
                    describe_capture(*s.session, s));
}

inline const char* category_name(replay_task::category c) {
  switch (c) {
    case replay_task::category::host: return "a host callable";
    case replay_task::category::kernel: return "a kernel";
    case replay_task::category::copy: return "a copy";
    case replay_task::category::event: return "an event operation";
    case replay_task::category::group: return "a task group";
    case replay_task::category::model: return "a model execution";
  }
  return "a task";
}

// Caller holds dev->capture_mutex and s is capturing: appends a node, or
// marks it into the open group.
inline void capture_task(stream_state& s, replay_task task, const char* api) {
  check_may_issue(s, api);
  capture_session& c = *s.session;
  if (c.open_group && s.dev->group_stream == &s) {
    if (task.cat() != replay_task::category::kernel)
      throw_error(errc::capture_violation, api,
                  std::string("only operator launches may be marked into a task group, not ") +
                      category_name(task.cat()) + "; " + describe_capture(c, s));
    c.open_group->building.push_back(std::move(task));
    return;
  }
  c.nodes.push_back(std::move(task));
  ++c.lanes[s.lane].count;
}

// A kind compares by name; the same literal (the usual case) by address first.
inline bool same_kind(kernel_kind a, kernel_kind b) noexcept {
  return (a.name().data() == b.name().data() && a.name().size() == b.name().size()) || a == b;
}

[[noreturn]] inline void refuse_in_update(const stream_state& s, replay_task::category cat, std::uint64_t group,
                                          const char* api) {
  throw_error(errc::update_violation, api,
              std::string("only operator launches may replace a task group's tasks, not ") + category_name(cat) +
                  " (" + s.describe() + " is updating group #" + std::to_string(group) + ")");
}

// If s is updating: stages a kernel into the group's replacement (true), or
// refuses anything else. False if s is not updating.
inline bool stage_update(stream_state& s, replay_task& task, const char* api) {
  std::uint64_t group = 0;
  {
    std::lock_guard<biased_lock> lock(s.update_m);
    if (s.updating == nullptr) return false;
    if (task.cat() == replay_task::category::kernel) {
      s.updating->staging.push_back(std::move(task));
      return true;
    }
    group = s.updating->id;
  }
  refuse_in_update(s, task.cat(), group, api);
}

// Refuses @p cat, which an update never takes, if s is updating.
inline void refuse_if_updating(stream_state& s, replay_task::category cat, const char* api) {
  std::uint64_t group = 0;
  {
    std::lock_guard<biased_lock> lock(s.update_m);
    if (s.updating == nullptr) return;
    group = s.updating->id;
  }
  refuse_in_update(s, cat, group, api);
}

// Routes work a stream is not running now (captured or staged).
inline void redirect_task(stream_state& s, replay_task task, const char* api) {
  std::lock_guard<std::mutex> lock(s.dev->capture_mutex);
  if (stage_update(s, task, api)) return;
  if (s.session) {
    capture_task(s, std::move(task), api);
  } else {
    throw_error(errc::invalid_state, api, s.describe() + " changed capture state while work was issued to it");
  }
}
template <class F>
void redirect_task(stream_state& s, F&& f, replay_task::category cat, kernel_kind kind, const char* api) {
  redirect_task(s, replay_task(std::forward<F>(f), cat, kind), api);
}

// Caller holds dev->capture_mutex. A stream in a capture is never updating.
inline void detach_lanes(capture_session& c) {
  for (auto& l : c.lanes) {
    ref_ptr<capture_session> leaving;  // dropped after the spin lock
    std::lock_guard<biased_lock> lock(l.stream->update_m);
    leaving = std::move(l.stream->session);
    l.stream->redirect.store(0, std::memory_order_release);
  }
  c.lanes.clear();
  c.active = false;
  auto& list = c.origin->dev->captures;
  list.erase(std::remove(list.begin(), list.end(), &c), list.end());
  if (c.mode != capture_mode::relaxed) c.origin->dev->strict_captures.fetch_sub(1, std::memory_order_acq_rel);
}

struct block : ref_counted {
  block(std::size_t n, memory_kind k, stream_state* s)
      : data(::operator new(std::max<std::size_t>(n, 1), std::align_val_t{64})), bytes(n), kind(k), stream(s) {}
  ~block() {
    ::operator delete(data, std::align_val_t{64});
    stream->dev->memory_in_use_.fetch_sub(bytes, std::memory_order_acq_rel);  // reserved by backend::allocate
  }
  void* data;
  std::size_t bytes;
  memory_kind kind;
  ref_ptr<stream_state> stream;
};
/// @endcond

}  // namespace detail

/**
 * @brief The host backend: the native types and calls the runtime templates
 * (basic_stream, basic_event, basic_model, ...) are instantiated with. Every
 * call is a static member; native handles are plain pointers.
 *
 * Ownership: handles returned by create/allocate/capture_end/group_end are
 * owned by the caller until passed to their destroy call. Thread safety:
 * every call is thread-safe (streams take work from any thread). Exceptions:
 * keel::error naming the rule broken; a failed call changes nothing.
 *
 * Semantics worth knowing (documented in the runtime README too):
 * - A task that throws puts its stream in the error state. Later work on
 *   that stream (host callables, kernels, copies, model executions) is
 *   skipped until synchronize() reports the failure, which also clears the
 *   state; event records, waits, resets, releases and update swaps still run,
 *   so other streams never deadlock. query() reports without clearing.
 * - Models run on the executing stream, in capture order (a topological
 *   order of the recorded cross-stream dependencies), in one tight loop.
 * - A stream's worker thread drains a ring of 2,048 tasks; issuing to a full
 *   ring blocks until the worker catches up, like a device's launch queue,
 *   so never fill a stream that waits for work the same thread issues later.
 * - Destroying a stream waits for the work issued to it (a stream blocked on
 *   an external event nobody records would wait forever); a capture it began
 *   is discarded and reported, a capture it joined is invalidated.
 * - A task must not synchronize its own stream (would_deadlock), nor fill
 *   its own stream's ring (the launch that would wait throws would_deadlock).
 *   A task that destroys its own stream defers the destruction: reported as
 *   would_deadlock, the stream runs the work already issued, then its worker
 *   finishes the destruction.
 * - A wait waits for the record that was the event's last one when the wait
 *   was issued; query() and synchronize() refer to the last record at the
 *   call. A model whose task throws (or whose execution meets the stream in
 *   its error state) skips its remaining work but still runs its event
 *   operations.
 * - Streams, events and models share the device's state: destroying the
 *   device object first is safe. Scopes hold their stream's record, so a
 *   stream destroyed under a live scope leaves the scope nothing to end.
 * - Update visibility: an update takes effect when its stream reaches the
 *   end of the update; an execution that reaches the group afterwards runs
 *   the new tasks, one already past it ran the old ones. On an idle
 *   update stream that point is end() itself (no task is enqueued); two
 *   updates of one group with nothing between them on the stream swap once,
 *   with the later tasks. Use
 *   basic_concurrent_update to fence a running execution on the update.
 */
struct backend {
  // The operations of the runtime backend requirement (keel/runtime/backend.hpp),
  // called by keel's runtime templates, not by users: documented there.
  /// @cond KEEL_BACKEND_OPERATIONS
  using device_type = device;
  using stream_handle = detail::stream_state*;
  using event_handle = detail::event_state*;
  using model_handle = detail::model_state*;
  using group_handle = detail::group_state*;
  using buffer_handle = detail::block*;
  using launch_context = host::launch_context;

  static constexpr const char* name = "host";

  // ---- streams -----------------------------------------------------------

  static stream_handle create_stream(device_type& d) {
    detail::device_state& dev = d.state();
    auto* s = new detail::stream_state(dev);
    try {
      s->worker = std::thread([s] {
        s->ring.set_consumer(std::this_thread::get_id());
        s->run();
        if (s->destroy_on_exit.load(std::memory_order_relaxed)) {
          s->worker.detach();  // this thread finishes its stream's destruction, then ends
          finish_destroy(s);
        }
      });
    } catch (...) {
      detail::ref_ptr<detail::stream_state>::drop(s);
      throw;
    }
    std::lock_guard<std::mutex> lock(dev.streams_mutex);
    dev.streams.push_back(s);
    return s;
  }

  static void destroy_stream(stream_handle s) noexcept {
    detail::device_state& dev = *s->dev;
    const bool from_own_task = std::this_thread::get_id() == s->worker.get_id();
    abort_update(*s);
    {
      std::lock_guard<std::mutex> lock(dev.capture_mutex);
      if (s->session) {
        detail::capture_session& c = *s->session;
        if (c.origin == s) {
          report_error(make_error_code(errc::capture_violation), "keel::host::destroy_stream",
                       (detail::describe_capture(c, *s) + "; the capture is discarded").c_str());
          discard_locked(c);
        } else {
          c.active = false;  // a joined stream leaving breaks the capture: end() will refuse it
          detail::ref_ptr<detail::capture_session> leaving;
          std::lock_guard<detail::biased_lock> stage(s->update_m);
          leaving = std::move(s->session);
          s->redirect.store(0, std::memory_order_release);
        }
      }
    }
    if (from_own_task) {
      // A task destroying its own stream cannot wait for the stream (it is
      // part of the stream's work): the destruction is deferred. The worker
      // runs the work already issued, then finishes it (finish_destroy).
      report_error(make_error_code(errc::would_deadlock), "keel::host::destroy_stream",
                   ("a task running on " + s->describe() +
                    " destroyed its own stream: the destruction is deferred until the stream has run the work "
                    "already issued")
                       .c_str());
      s->destroy_on_exit.store(true, std::memory_order_relaxed);
      s->wake.request_stop(false);
      return;
    }
    s->wake.request_stop(true);
    s->worker.join();
    finish_destroy(s);
  }

  // After the worker has stopped: what destroy_stream does once no work is left.
  static void finish_destroy(stream_handle s) noexcept {
    detail::device_state& dev = *s->dev;
    {
      // Releases issued from other threads while the worker drained still
      // went to the ring (the stream was open); run what it did not reach.
      // From here on a release frees at once: no work is left to outlive.
      std::lock_guard<std::mutex> lock(s->close_m);
      s->closed = true;
      s->run_leftovers();
    }
    if (s->failed.load(std::memory_order_acquire))
      report_error(make_error_code(errc::task_failed), "keel::host::destroy_stream", s->failure.c_str());
    {
      std::lock_guard<std::mutex> lock(dev.streams_mutex);
      dev.streams.erase(std::remove(dev.streams.begin(), dev.streams.end(), s), dev.streams.end());
    }
    detail::ref_ptr<detail::stream_state>::drop(s);
  }

  /**
   * Keeps the stream's record (not its work) alive past destroy_stream: a
   * scope whose stream is destroyed first then finds the capture, group or
   * update already ended instead of touching freed memory.
   */
  static void retain_stream(stream_handle s) noexcept { s->retain(); }
  static void release_stream(stream_handle s) noexcept { detail::ref_ptr<detail::stream_state>::drop(s); }

  static device_type& device_of(stream_handle s) noexcept { return s->dev->facade(); }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  /** Waits for the stream's work; reports (and clears) its error state. */
  static void synchronize(stream_handle s) {
    static constexpr const char* api = "keel::stream::synchronize";
    check_may_synchronize(s, api);
    s->drain();
    report_failure(s, api);
  }

  /** synchronize(), bounded: timeout when the work is still running then (the error state is kept). */
  static void synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::stream::synchronize";
    check_may_synchronize(s, api);
    if (!s->drain_until(detail::clock::now() + timeout))
      detail::throw_timeout(api, s->describe() + " did not finish the work issued to it", timeout);
    report_failure(s, api);
  }

  static void check_may_synchronize(stream_handle s, const char* api) {
    if (std::this_thread::get_id() == s->worker.get_id())
      throw_error(errc::would_deadlock, api,
                  "a task running on " + s->describe() + " cannot wait for its own stream");
    if (s->redirect.load(std::memory_order_acquire) == 1) {
      std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
      if (s->session) detail::check_unsafe(*s->session, api, "synchronizing a capturing stream");
    }
  }

  // After the stream drained: reports (and clears) its error state.
  static void report_failure(stream_handle s, const char* api) {
    if (s->failed.load(std::memory_order_acquire)) {
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->m);
        message = std::move(s->failure);
        s->failed.store(false, std::memory_order_release);
      }
      throw_error(errc::task_failed, api,
                  s->describe() + ": a task failed: " + message +
                      " (work issued after it was skipped; the error state is now cleared)");
    }
  }

  /** Whether all work issued so far has finished; reports (keeps) the error state. */
  static bool query(stream_handle s) {
    if (s->failed.load(std::memory_order_acquire)) {
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->m);
        message = s->failure;
      }
      throw_error(errc::task_failed, "keel::stream::query", s->describe() + ": a task failed: " + message);
    }
    return s->ring.head() >= s->ring.tail();
  }

  /** Waits for every stream of the device: unsafe during capture. */
  static void synchronize_device(device_type& d) {
    detail::device_state& dev = d.state();
    static constexpr const char* api = "keel::host::synchronize_device";
    detail::check_unsafe_device(dev, api, "synchronizing the device");
    std::vector<detail::ref_ptr<detail::stream_state>> all;
    {
      std::lock_guard<std::mutex> lock(dev.streams_mutex);
      for (auto* s : dev.streams) all.emplace_back(s);
    }
    for (auto& s : all) s->drain();
    for (auto& s : all)
      if (s->failed.load(std::memory_order_acquire))
        throw_error(errc::task_failed, api, s->describe() + " is in its error state; synchronize it to clear");
  }

  /** synchronize_device(), bounded by one deadline for all streams. */
  static void synchronize_device_for(device_type& d, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::host::synchronize_device";
    detail::device_state& dev = d.state();
    detail::check_unsafe_device(dev, api, "synchronizing the device");
    const auto deadline = detail::clock::now() + timeout;
    std::vector<detail::ref_ptr<detail::stream_state>> all;
    {
      std::lock_guard<std::mutex> lock(dev.streams_mutex);
      for (auto* s : dev.streams) all.emplace_back(s);
    }
    for (auto& s : all)
      if (!s->drain_until(deadline)) detail::throw_timeout(api, s->describe() + " did not finish its work", timeout);
    for (auto& s : all)
      if (s->failed.load(std::memory_order_acquire))
        throw_error(errc::task_failed, api, s->describe() + " is in its error state; synchronize it to clear");
  }

  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    if (s->redirect.load(std::memory_order_acquire) == 0) {
      s->submit<false>(std::forward<F>(f));
      return;
    }
    detail::redirect_task(*s, std::forward<F>(f), detail::replay_task::category::host, kernel_kind{""},
                          "keel::stream::launch_host");
  }

  /** f(launch_context&) is the kernel's body; kind is what updates match. */
  template <class F>
  static void launch_kernel(stream_handle s, kernel_kind kind, F&& f) {
    if (s->redirect.load(std::memory_order_acquire) == 0) {
      // The device comes from the stream when the task runs, so a kernel
      // with a few scalar arguments still fits in a ring slot.
      s->submit<false>([fn = std::forward<F>(f)](void* dev) {
        launch_context ctx(*static_cast<detail::device_state*>(dev));
        fn(ctx);
      });
      return;
    }
    auto body = [dev = s->dev, fn = std::forward<F>(f)]() {
      launch_context ctx(*dev);
      fn(ctx);
    };
    if (s->redirect.load(std::memory_order_acquire) == 2) {
      // A replacement for the group this stream updates: built in place in
      // the group's staging under the stream's own lock, entered without an
      // atomic operation by the updating thread (kernels are what an update
      // takes, so no check).
      detail::biased_section lock(s->update_m);
      if (s->updating != nullptr) {
        s->updating->staging.emplace_back(std::move(body), detail::replay_task::category::kernel, kind);
        return;
      }
    }
    detail::redirect_task(*s, std::move(body), detail::replay_task::category::kernel, kind, "keel::stream::launch");
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    auto body = [dst, src, bytes, d = std::move(keep_dst), k = std::move(keep_src)]() {
      if (bytes) std::memcpy(dst, src, bytes);
    };
    if (s->redirect.load(std::memory_order_acquire) == 0) {
      s->submit<false>(std::move(body));
      return;
    }
    detail::redirect_task(*s, std::move(body), detail::replay_task::category::copy, kernel_kind{""},
                          "keel::stream::copy_async");
  }

  /** A blocking copy: waits for the stream's earlier work, then copies. Unsafe during capture. */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind) {
    detail::check_unsafe_device(*s->dev, "keel::stream::copy", "a blocking copy");
    s->drain();
    if (bytes) std::memcpy(dst, src, bytes);
  }

  static capture_info capture_status(stream_handle s) {
    std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
    capture_info info;
    {
      std::lock_guard<detail::biased_lock> stage(s->update_m);
      info.updating = s->updating != nullptr;
    }
    if (s->session) {
      const detail::capture_session& c = *s->session;
      info.state = c.active ? capture_state::active : capture_state::invalidated;
      info.mode = c.mode;
      info.group_open = c.open_group && s->dev->group_stream == s;
      info.capture_id = c.id;
    }
    return info;
  }

  /** Whether the calling thread began a capture still in progress on @p dev. */
  static capture_info thread_capture_status(device_type& d) {
    detail::device_state& dev = d.state();
    std::lock_guard<std::mutex> lock(dev.capture_mutex);
    capture_info info;
    for (const detail::capture_session* c : dev.captures) {
      if (c->thread != std::this_thread::get_id()) continue;
      info.state = capture_state::active;
      info.mode = c->mode;
      info.group_open = static_cast<bool>(c->open_group);
      info.capture_id = c->id;
      break;
    }
    return info;
  }

  // ---- events ------------------------------------------------------------

  static event_handle create_event(device_type& d, event_flags flags) {
    detail::device_state& dev = d.state();
    if (flags == event_flags::external) {
      std::size_t n = dev.live_external_.load(std::memory_order_relaxed);
      do {
        if (n >= dev.max_external_events())
          throw_error(errc::resource_limit, "keel::event::create",
                      "the device allows " + std::to_string(dev.max_external_events()) +
                          " external events and all are in use; reuse them through an external_event_pool");
      } while (!dev.live_external_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
    }
    return new detail::event_state(dev, flags);
  }

  static void destroy_event(event_handle e) noexcept { detail::ref_ptr<detail::event_state>::drop(e); }
  static event_flags flags_of(event_handle e) noexcept { return e->flags; }

  static void record(event_handle e, stream_handle s) {
    static constexpr const char* api = "keel::event::record";
    if (s->redirect.load(std::memory_order_acquire) != 0) {
      std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
      detail::refuse_if_updating(*s, detail::replay_task::category::event, api);
      if (s->session) {
        if (e->flags == event_flags::external) {
          detail::ref_ptr<detail::event_state> ev(e);
          route_locked(*s, [ev] { ev->signal(); }, api);
        } else {
          detail::capture_session& c = *s->session;
          detail::check_may_issue(*s, api);
          if (c.open_group && s->dev->group_stream == s)
            throw_error(errc::capture_violation, api,
                        "only operator launches may be marked into a task group, not an event record; " +
                            detail::describe_capture(c, *s));
          e->session = s->session;
          e->lane = s->lane;
          e->position = c.lanes[s->lane].count;
          e->captured.store(true, std::memory_order_release);
        }
        return;
      }
    }
    if (e->captured.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
      e->session = detail::ref_ptr<detail::capture_session>();
      e->captured.store(false, std::memory_order_release);
    }
    detail::ref_ptr<detail::event_state> ev(e);
    if (e->flags == event_flags::external) {
      s->submit<true>([ev] { ev->signal(); });
    } else {
      detail::ref_ptr<detail::record_mark> mark = e->begin_record();
      s->submit<true>([ev, mark] { ev->complete(*mark); });
    }
  }

  static void wait(stream_handle s, event_handle e) {
    static constexpr const char* api = "keel::stream::wait";
    detail::ref_ptr<detail::event_state> ev(e);
    if (e->flags == event_flags::external) {
      if (s->redirect.load(std::memory_order_acquire) != 0) {
        std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
        detail::refuse_if_updating(*s, detail::replay_task::category::event, api);
        if (s->session) {
          route_locked(*s, [ev] { ev->block_until_signalled(); }, api);
          return;
        }
      }
      s->submit<true>([ev] { ev->block_until_signalled(); });
      return;
    }
    if (s->redirect.load(std::memory_order_acquire) != 0 || e->captured.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
      detail::refuse_if_updating(*s, detail::replay_task::category::event, api);
      const bool from_capture = e->captured.load(std::memory_order_relaxed) && e->session && e->session->active;
      if (s->session) {
        detail::capture_session& c = *s->session;
        detail::check_may_issue(*s, api);
        if (c.open_group && s->dev->group_stream == s)
          throw_error(errc::capture_violation, api,
                      "only operator launches may be marked into a task group, not an event wait; " +
                          detail::describe_capture(c, *s));
        if (!from_capture || e->session.get() != &c)
          throw_error(errc::capture_violation, api,
                      "a capturing stream may wait only on events recorded in the same capture (or on external "
                      "events); " + detail::describe_capture(c, *s));
        // Join: the waiting lane depends on the recording lane up to there.
        auto& src = c.lanes[e->lane];
        src.joined = std::max(src.joined, e->position);
        return;
      }
      if (from_capture) {
        // Fork: the waiting stream joins the capture.
        detail::capture_session& c = *e->session;
        if (s->dev->group_stream != nullptr)
          throw_error(errc::capture_violation, api,
                      "a stream cannot join a capture while " + s->dev->group_stream->describe() +
                          " marks a task group");
        c.lanes.push_back({detail::ref_ptr<detail::stream_state>(s), 0, 0});
        try {
          // An update that began since the check above is refused like one before it.
          while (!join_session(*s, e->session, c.lanes.size() - 1))
            detail::refuse_if_updating(*s, detail::replay_task::category::event, api);
        } catch (...) {
          c.lanes.pop_back();
          throw;
        }
        return;
      }
    }
    // The wait is for the event's last record now; a later record (on any
    // stream, completing first or not) is not what this wait waits for.
    detail::ref_ptr<detail::record_mark> mark = e->last_record();
    if (!mark) return;  // never recorded: nothing to wait for (device semantics)
    if (mark->done.load(std::memory_order_acquire)) return;  // already complete: nothing to enqueue
    s->submit<true>([ev, mark] { ev->block_until(*mark); });
  }

  /** Clears an external event's signal, in stream order. */
  static void reset(stream_handle s, event_handle e) {
    static constexpr const char* api = "keel::stream::reset";
    if (e->flags != event_flags::external)
      throw_error(errc::invalid_parameter, api, "only external events are reset; default and timing events are not");
    detail::ref_ptr<detail::event_state> ev(e);
    auto body = [ev] { ev->signalled.store(false, std::memory_order_seq_cst); };
    if (s->redirect.load(std::memory_order_acquire) != 0) {
      std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
      detail::refuse_if_updating(*s, detail::replay_task::category::event, api);
      if (s->session) {
        route_locked(*s, std::move(body), api);
        return;
      }
    }
    s->submit<true>(std::move(body));
  }

  static bool query(event_handle e) {
    check_event_safe(e, "keel::event::query", "querying an event recorded inside the capture");
    if (e->flags == event_flags::external) return e->signalled.load(std::memory_order_acquire);
    const detail::ref_ptr<detail::record_mark> mark = e->last_record();
    return !mark || mark->done.load(std::memory_order_acquire);
  }

  static void synchronize(event_handle e) {
    check_event_safe(e, "keel::event::synchronize", "synchronizing an event recorded inside the capture");
    if (e->flags == event_flags::external) {
      e->block_until_signalled();
    } else if (const detail::ref_ptr<detail::record_mark> mark = e->last_record()) {
      e->block_until(*mark);
    }
  }

  /** synchronize(), bounded: timeout when the last record (or the signal) has not come by then. */
  static void synchronize_for(event_handle e, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::event::synchronize";
    check_event_safe(e, api, "synchronizing an event recorded inside the capture");
    if (!e->wait_until(detail::clock::now() + timeout))
      detail::throw_timeout(api,
                            "event #" + std::to_string(e->id) +
                                (e->flags == event_flags::external ? " was not signalled" : " did not complete its last record"),
                            timeout);
  }

  /**
   * wait(), bounded: the wait task fails with errc::timeout if the record (or
   * signal) has not come within @p timeout of the task's turn; the stream then
   * enters its error state, as when a task throws. Refused while capturing.
   */
  static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::stream::wait";
    if (s->redirect.load(std::memory_order_acquire) != 0)
      throw_error(errc::capture_violation, api,
                  "a wait with a timeout cannot be captured or staged into an update (" + s->describe() +
                      " is capturing or updating); wait without a timeout");
    detail::ref_ptr<detail::event_state> ev(e);
    auto fail = [id = e->id, timeout] {
      detail::throw_timeout(api, "the wait for event #" + std::to_string(id) + " did not end", timeout);
    };
    if (e->flags == event_flags::external) {
      s->submit<false>([ev, timeout, fail] {
        if (!ev->waiters.wait_until(ev->dev->spin_budget(), detail::clock::now() + timeout,
                                    [&] { return ev->signalled.load(std::memory_order_seq_cst); }))
          fail();
      });
      return;
    }
    detail::ref_ptr<detail::record_mark> mark = e->last_record();
    if (!mark || mark->done.load(std::memory_order_acquire)) return;
    s->submit<false>([ev, mark, timeout, fail] {
      if (!ev->waiters.wait_until(ev->dev->spin_budget(), detail::clock::now() + timeout,
                                  [&] { return mark->done.load(std::memory_order_seq_cst); }))
        fail();
    });
  }

  /** Milliseconds between two completed timing events. */
  static float elapsed_ms(event_handle start, event_handle end) {
    static constexpr const char* api = "keel::event::elapsed_time";
    if (start->flags != event_flags::timing || end->flags != event_flags::timing)
      throw_error(errc::invalid_parameter, api, "both events must be created with event_flags::timing");
    detail::ref_ptr<detail::record_mark> marks[2];
    for (int i = 0; i < 2; ++i) {
      event_handle e = i == 0 ? start : end;
      marks[i] = e->last_record();
      if (!marks[i] || !marks[i]->done.load(std::memory_order_acquire))
        throw_error(errc::invalid_state, api, "event #" + std::to_string(e->id) + " has not completed a record");
    }
    const auto ns =
        marks[1]->stamp_ns.load(std::memory_order_relaxed) - marks[0]->stamp_ns.load(std::memory_order_relaxed);
    return static_cast<float>(static_cast<double>(ns) / 1e6);
  }

  // ---- capture and models ------------------------------------------------

  static void capture_begin(stream_handle s, capture_mode mode) {
    static constexpr const char* api = "keel::capture_scope";
    detail::device_state& dev = *s->dev;
    std::lock_guard<std::mutex> lock(dev.capture_mutex);
    if (s->session) throw_error(errc::capture_violation, api, "capture cannot begin: " + detail::describe_capture(*s->session, *s));
    bool updating = false;
    {
      std::lock_guard<detail::biased_lock> stage(s->update_m);
      updating = s->updating != nullptr;
    }
    if (!updating) {
      reserve_model(dev, api);
      detail::ref_ptr<detail::capture_session> c(new detail::capture_session, {});
      c->mode = mode;
      c->thread = std::this_thread::get_id();
      c->id = dev.next_id.fetch_add(1);
      c->origin = s;
      c->lanes.push_back({detail::ref_ptr<detail::stream_state>(s), 0, 0});
      try {
        dev.captures.push_back(c.get());
      } catch (...) {
        dev.live_models_.fetch_sub(1, std::memory_order_acq_rel);
        throw;
      }
      if (mode != capture_mode::relaxed) dev.strict_captures.fetch_add(1, std::memory_order_acq_rel);
      if (join_session(*s, c, 0)) return;
      // An update began on s since the check above: undo, and refuse as if it had been first.
      dev.captures.pop_back();
      if (mode != capture_mode::relaxed) dev.strict_captures.fetch_sub(1, std::memory_order_acq_rel);
      dev.live_models_.fetch_sub(1, std::memory_order_acq_rel);
    }
    throw_error(errc::capture_violation, api, "capture cannot begin: " + s->describe() + " is updating a task group");
  }

  static model_handle capture_end(stream_handle s) {
    static constexpr const char* api = "keel::capture_scope::end";
    detail::device_state& dev = *s->dev;
    std::lock_guard<std::mutex> lock(dev.capture_mutex);
    if (!s->session) throw_error(errc::invalid_state, api, s->describe() + " is not capturing");
    detail::capture_session& c = *s->session;
    if (c.origin != s)
      throw_error(errc::capture_violation, api,
                  "capture must end on the stream that began it (" + c.origin->describe() + "); " +
                      detail::describe_capture(c, *s));
    if (!c.active)
      throw_error(errc::capture_violation, api,
                  "the capture was invalidated (a joined stream was destroyed); " + detail::describe_capture(c, *s));
    if (c.open_group)
      throw_error(errc::capture_violation, api,
                  "a task group is still open on " + c.lanes[c.open_group_lane].stream->describe() + "; " +
                      detail::describe_capture(c, *s));
    for (std::size_t i = 1; i < c.lanes.size(); ++i)
      if (c.lanes[i].joined < c.lanes[i].count)
        throw_error(errc::capture_violation, api,
                    c.lanes[i].stream->describe() + " forked from the capture and has work the capturing stream "
                    "never waited for: record an event on it and wait on that event here; " +
                        detail::describe_capture(c, *s));
    auto* m = new detail::model_state(dev, std::move(c.nodes), std::move(c.groups));
    for (auto& g : m->groups) g->model_alive.store(true, std::memory_order_release);
    detail::ref_ptr<detail::capture_session> keep = s->session;
    detail::detach_lanes(c);
    return m;  // keeps the live-model reservation made at capture begin
  }

  /** Ends a capture on its origin stream and throws the partial model away. */
  static void capture_discard(stream_handle s) noexcept {
    std::lock_guard<std::mutex> lock(s->dev->capture_mutex);
    if (s->session && s->session->origin == s) discard_locked(*s->session);
  }

  static void destroy_model(model_handle m) noexcept {
    for (auto& g : m->groups) g->model_alive.store(false, std::memory_order_release);
    m->dev->live_models_.fetch_sub(1, std::memory_order_acq_rel);
    detail::ref_ptr<detail::model_state>::drop(m);  // executions in flight keep it alive
  }

  static std::size_t task_count(model_handle m) noexcept { return m->nodes.size(); }
  static std::size_t group_count(model_handle m) noexcept { return m->groups.size(); }

  /** Runs the model on the stream, after the stream's earlier work. */
  static void execute(model_handle m, stream_handle s) {
    detail::ref_ptr<detail::model_state> keep(m);
    if (s->redirect.load(std::memory_order_acquire) == 0) {
      // Runs in the error state too: the model's event operations still run.
      s->submit<false>(detail::make_failure_aware([keep](bool work) { keep->run(work); }));
      return;
    }
    detail::redirect_task(*s, detail::make_failure_aware([keep](bool work) { keep->run(work); }),
                          detail::replay_task::category::model,
                          kernel_kind{""}, "keel::model::execute");
  }

  // ---- task groups and updates -------------------------------------------

  static void group_begin(stream_handle s) {
    static constexpr const char* api = "keel::task_group_scope";
    detail::device_state& dev = *s->dev;
    std::lock_guard<std::mutex> lock(dev.capture_mutex);
    if (!s->session)
      throw_error(errc::capture_violation, api, "a task group is marked during capture, and " + s->describe() +
                                                    " is not capturing");
    detail::capture_session& c = *s->session;
    if (dev.group_stream != nullptr)
      throw_error(errc::capture_violation, api,
                  dev.group_stream->describe() + " is already marking a task group; " + detail::describe_capture(c, *s));
    detail::check_may_issue(*s, api);
    detail::ref_ptr<detail::group_state> g(new detail::group_state(dev, s->id), {});
    c.groups.push_back(g);
    try {
      c.nodes.push_back(detail::replay_task([g]() { g->run(); }, detail::replay_task::category::group));
    } catch (...) {
      c.groups.pop_back();
      throw;
    }
    ++c.lanes[s->lane].count;
    c.open_group = g;
    c.open_group_lane = s->lane;
    dev.group_stream = s;
  }

  static group_handle group_end(stream_handle s) {
    detail::device_state& dev = *s->dev;
    std::lock_guard<std::mutex> lock(dev.capture_mutex);
    if (!s->session || dev.group_stream != s)
      throw_error(errc::invalid_state, "keel::task_group_scope::end", s->describe() + " is not marking a task group");
    detail::ref_ptr<detail::group_state> g = s->session->open_group;
    std::vector<kernel_kind> signature;
    signature.reserve(g->building.size());
    for (const auto& t : g->building) signature.push_back(t.kind());
    g->signature = std::move(signature);
    auto list = std::make_shared<detail::task_list>();
    list->tasks = std::move(g->building);
    g->tasks = std::move(list);
    s->session->open_group = {};
    dev.group_stream = nullptr;
    return g.release();
  }

  /** Closes a group being marked, keeping the tasks marked so far. */
  static void group_abort(stream_handle s) noexcept {
    try {
      destroy_group(group_end(s));
    } catch (...) {
      report_current_exception("keel::task_group_scope");
    }
  }

  static void destroy_group(group_handle g) noexcept { detail::ref_ptr<detail::group_state>::drop(g); }
  static std::size_t group_size(group_handle g) noexcept { return g->signature.size(); }
  static bool group_model_alive(group_handle g) noexcept { return g->model_alive.load(std::memory_order_acquire); }

  // An update takes no device-wide lock, and costs two atomic operations in
  // all: the group's claim (one CAS; see group_state for how the claimed
  // group stays alive), and at end one acquisition of the group's lock that
  // swaps the new tasks in and gives the claim back. The stream's update_m
  // is entered with plain stores by the thread that began the last update
  // (biased_lock): at begin when it updates again, at each launch and at
  // end; any other thread locks it, once per call. At begin, update_m makes
  // the check "not capturing, not updating" and the switch to update mode
  // one step, and the claim makes a second updater of the group an error.
  static void update_begin(stream_handle s, group_handle g) {
    static constexpr const char* api = "keel::update_scope";
    enum class refusal { capturing, updating, model_gone, claimed } why = refusal::claimed;
    std::uint64_t other = 0;
    {
      // The thread that began the last update on this stream enters as the
      // owner (a stream updated again and again by one thread); any other
      // thread locks, and becomes the owner if the update begins.
      detail::biased_section stage(s->update_m);
      if (s->session) {
        why = refusal::capturing;
      } else if (s->updating != nullptr) {
        why = refusal::updating;
        other = s->updating->id;
      } else if (!g->model_alive.load(std::memory_order_acquire)) {
        why = refusal::model_gone;
      } else if (!g->try_claim()) {
        why = refusal::claimed;
      } else {
        s->updating = g;  // g->staging is empty: whoever ended the last claim emptied it
        s->update_m.set_owner();
        s->redirect.store(2, std::memory_order_release);
        return;
      }
    }
    switch (why) {
      case refusal::capturing: {
        std::lock_guard<std::mutex> lock(s->dev->capture_mutex);  // describing a capture reads its books
        throw_error(errc::capture_violation, api,
                    "updates are issued on a stream that is not capturing; " +
                        (s->session ? detail::describe_capture(*s->session, *s) : s->describe() + " was capturing"));
      }
      case refusal::updating:
        throw_error(errc::update_violation, api, s->describe() + " is already updating group #" + std::to_string(other));
      case refusal::model_gone:
        throw_error(errc::invalid_state, api,
                    "the model of task group #" + std::to_string(g->id) + " was destroyed (or never completed)");
      case refusal::claimed:
        break;
    }
    throw_error(errc::update_violation, api,
                "task group #" + std::to_string(g->id) +
                    " is already being updated: one thread on one stream updates a group at a time");
  }

  /** Checks the replacement against the group; on success it takes effect in stream order. */
  static void update_end(stream_handle s) {
    static constexpr const char* api = "keel::update_scope::end";
    detail::group_state* g = nullptr;
    {
      detail::biased_section stage(s->update_m);  // the updating thread enters without an atomic operation
      g = std::exchange(s->updating, nullptr);
      if (g != nullptr) s->redirect.store(0, std::memory_order_release);
    }
    if (g == nullptr) throw_error(errc::invalid_state, api, s->describe() + " is not updating a task group");
    // Detached from the stream, the group's staging is ours alone until the
    // claim ends; it keeps its capacity for the next update.
    std::vector<detail::replay_task>& staged = g->staging;
    struct finish {  // on refusal (or an enqueued swap): drop what was staged, end the claim
      detail::group_state* g;
      ~finish() {
        if (g == nullptr) return;
        g->staging.clear();
        detail::group_state::end_claim(g);
      }
    } done{g};
    g->retired.clear();  // what the last update replaced; outside every lock
    if (staged.empty()) return;  // an update with no tasks leaves the group as it was
    if (!g->model_alive.load(std::memory_order_acquire)) refuse_end(*g, staged.size());
    const std::size_t expected = g->signature.size();
    if (staged.size() != expected) refuse_end(*g, staged.size());
    for (std::size_t i = 0; i < expected; ++i)
      if (!detail::same_kind(g->signature[i], staged[i].kind())) refuse_end(*g, i);
    // An idle update stream (every task issued to it has finished) has
    // already reached the end of this update: the swap takes effect here,
    // with no enqueue. Work another thread issues concurrently is ordered
    // after it, as if issued after end() returned.
    if (s->ring.head() >= s->ring.tail()) {
      g->publish_and_end_claim();
      done.g = nullptr;  // ended (and g possibly deleted)
      return;
    }
    // If the last task issued to this stream is a swap of this group that
    // has not run yet, this update takes its place: nothing can be ordered
    // between two adjacent tasks of one stream, so running the later
    // replacement at the earlier swap's position is the same stream order,
    // and it costs no enqueue. (The superseded tasks go back to `staged`.)
    if (g->last_swap_stream == s && s->ring.tail() == g->last_swap_index + 1) {
      if (auto pending = g->last_swap.lock(); pending && g->refill_unpublished(*pending, s, staged)) return;
    }
    // The swap task keeps the group alive; the claim alone does not.
    if (!g->try_retain())
      throw_error(errc::invalid_state, api, "the model of task group #" + std::to_string(g->id) + " was destroyed");
    detail::ref_ptr<detail::group_state> keep(g, {});
    auto list = g->take_spare(s);
    list->tasks.swap(staged);  // the staging vector takes the spare's capacity
    std::weak_ptr<detail::task_list> pending = list;
    const std::uint64_t index =
        s->submit<true>([keep = std::move(keep), list = std::move(list)]() mutable { keep->replace(std::move(list)); });
    g->last_swap = std::move(pending);
    g->last_swap_stream = s;
    g->last_swap_index = index;
  }

  // Why update_end refuses @p g's staged tasks (model gone, count, or the
  // kind of task @p at); out of line, so building the message costs the
  // accepted path nothing.
  [[noreturn]] static void refuse_end(const detail::group_state& g, std::size_t at) {
    static constexpr const char* api = "keel::update_scope::end";
    const auto& staged = g.staging;
    if (!g.model_alive.load(std::memory_order_acquire))
      throw_error(errc::invalid_state, api, "the model of task group #" + std::to_string(g.id) + " was destroyed");
    const std::size_t expected = g.signature.size();
    if (staged.size() != expected)
      throw_error(errc::update_violation, api,
                  "task group #" + std::to_string(g.id) + " has " + std::to_string(expected) +
                      " tasks and the update issued " + std::to_string(staged.size()) + "; the group is unchanged");
    throw_error(errc::update_violation, api,
                "task " + std::to_string(at) + " of group #" + std::to_string(g.id) + " is kernel '" +
                    std::string(g.signature[at].name()) + "' and the update issued '" +
                    std::string(staged[at].kind().name()) + "'; the group is unchanged");
  }

  /** Leaves update mode with the group unchanged. */
  static void update_abort(stream_handle s) noexcept { abort_update(*s); }

  // ---- memory ------------------------------------------------------------

  /** Memory whose release is ordered on @p s (the stream it is freed on). */
  static buffer_handle allocate(stream_handle s, std::size_t bytes, memory_kind kind) {
    // Reserve the bytes against the device's memory limit first; ~block
    // gives them back when the stream-ordered release has run.
    detail::device_state& dev = *s->dev;
    // No object may be larger than PTRDIFF_MAX bytes, and the aligned
    // operator new rounds sizes up (libstdc++ 12 wraps near SIZE_MAX and
    // returns a few bytes): refuse before anything is reserved.
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX))
      throw_error(errc::out_of_memory, "keel::buffer",
                  "cannot allocate " + std::to_string(bytes) + " bytes: larger than the largest object (" +
                      std::to_string(PTRDIFF_MAX) + " bytes)");
    const std::size_t limit = dev.memory_limit();
    std::size_t used = dev.memory_in_use_.load(std::memory_order_relaxed);
    do {
      if (limit != 0 && (bytes > limit || used > limit - bytes))
        throw_error(errc::out_of_memory, "keel::buffer",
                    "cannot allocate " + std::to_string(bytes) + " bytes: " + std::to_string(used) + " of the device's " +
                        std::to_string(limit) + " bytes are in use");
    } while (!dev.memory_in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel));
    try {
      return new detail::block(bytes, kind, s);
    } catch (const std::bad_alloc&) {
      dev.memory_in_use_.fetch_sub(bytes, std::memory_order_acq_rel);
      throw_error(errc::out_of_memory, "keel::buffer", "cannot allocate " + std::to_string(bytes) + " bytes");
    }
  }

  /** Releases in stream order: the memory lives until the stream passes this point. */
  static void free_async(buffer_handle b) noexcept {
    detail::stream_state* s = b->stream.get();
    std::lock_guard<std::mutex> lock(s->close_m);
    if (!s->closed) {
      try {
        s->submit<true>([r = detail::ref_ptr<detail::block>(b, {})] {});
        return;
      } catch (...) {
        report_current_exception("keel::buffer::release");
      }
    }
    detail::ref_ptr<detail::block>::drop(b);
  }

  static void* data(buffer_handle b) noexcept { return b->data; }
  static std::size_t size(buffer_handle b) noexcept { return b->bytes; }
  static memory_kind kind_of(buffer_handle b) noexcept { return b->kind; }
  /** Shares ownership of the allocation: captured work holding it can never replay into freed memory. */
  static std::shared_ptr<void> keep_alive(buffer_handle b) {
    return std::shared_ptr<void>(b->data, [r = detail::ref_ptr<detail::block>(b)](void*) {});
  }

 private:
  // Caller holds dev->capture_mutex and s is capturing.
  template <class F>
  static void route_locked(detail::stream_state& s, F&& f, const char* api) {
    detail::capture_task(s, detail::replay_task(std::forward<F>(f), detail::replay_task::category::event), api);
  }

  // Caller holds dev->capture_mutex. Makes s a lane of @p c, unless an
  // update began on it (false): the check and the change are one step under
  // update_m, which is what update_begin checks "not capturing" under.
  static bool join_session(detail::stream_state& s, const detail::ref_ptr<detail::capture_session>& c,
                           std::size_t lane) noexcept {
    std::lock_guard<detail::biased_lock> stage(s.update_m);
    if (s.updating != nullptr) return false;
    s.session = c;
    s.lane = lane;
    s.redirect.store(1, std::memory_order_release);
    return true;
  }

  static void check_event_safe(event_handle e, const char* api, const char* what) {
    if (!e->captured.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(e->dev->capture_mutex);
    if (e->session && e->session->active) detail::check_unsafe(*e->session, api, what);
  }

  static void reserve_model(detail::device_state& dev, const char* api) {
    std::size_t n = dev.live_models_.load(std::memory_order_relaxed);
    do {
      if (n >= dev.max_live_models())
        throw_error(errc::resource_limit, api,
                    "the device allows " + std::to_string(dev.max_live_models()) +
                        " live models and all are in use; destroy a model before capturing another");
    } while (!dev.live_models_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  }

  static void discard_locked(detail::capture_session& c) noexcept {
    detail::device_state& dev = *c.origin->dev;
    if (c.open_group) {
      c.open_group = {};
      dev.group_stream = nullptr;
    }
    c.nodes.clear();
    c.groups.clear();
    detail::ref_ptr<detail::capture_session> keep(&c);
    detail::detach_lanes(c);
    dev.live_models_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Leaves update mode, dropping what was staged; the group is unchanged.
  static void abort_update(detail::stream_state& s) noexcept {
    detail::group_state* g = nullptr;
    {
      std::lock_guard<detail::biased_lock> stage(s.update_m);
      g = std::exchange(s.updating, nullptr);
      if (g == nullptr) return;
      s.redirect.store(0, std::memory_order_release);
    }
    g->staging.clear();  // detached from the stream: ours alone until the claim ends
    detail::group_state::end_claim(g);
  }
  /// @endcond
};

}  // namespace keel::host
