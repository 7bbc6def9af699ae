// SPDX-License-Identifier: Apache-2.0
// The host device: compute workers a kernel may split its work across, the
// limits a real device has (live models, external events), and the books the
// checked layer keeps for it (keel/runtime/checked/).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host {

class device;

namespace detail {
struct stream_state;
struct group_state;
}  // namespace detail

/** @brief How a host device is built. */
struct device_options {
  /// Threads a kernel may split its work across (including the stream's own
  /// worker); 0 means std::thread::hardware_concurrency().
  unsigned compute_workers = 0;
  /// Live models (captured or being captured) the device allows at once.
  std::size_t max_live_models = 1024;
  /// External events the device allows at once (they are scarce on devices).
  std::size_t max_external_events = 64;
  /// Bytes that buffers (device and pinned) may hold at once; 0: no limit.
  /// Device memory is finite: an allocation beyond it fails with
  /// out_of_memory, and a small limit injects that failure in tests. Memory
  /// counts until its stream-ordered release has run.
  std::size_t memory_limit = 0;
  /// How long an idle stream worker, an idle compute helper, a
  /// synchronize() or an event wait spins before it sleeps. Work that
  /// arrives within the budget is picked up at spinning speed (waking a
  /// sleeping thread costs tens of microseconds), but on a machine with
  /// more runnable threads than cores the spinning
  /// takes time from the threads being waited for. 0: never spin, sleep at
  /// once (negative counts as 0).
  std::chrono::microseconds spin_budget{50};
};

/// @cond
namespace detail {
// What a host device is: the compute workers, the limits and the capture
// books, shared by the user's device object and every stream, event and
// model made on it (an intrusive count), so that destroying the device
// object first leaves them working; the state goes with the last of them.
class device_state {
 public:
  explicit device_state(device_options options)
      : max_live_models_(options.max_live_models),
        max_external_events_(options.max_external_events),
        memory_limit_(options.memory_limit),
        spin_budget_(std::max(options.spin_budget, std::chrono::microseconds::zero())) {
    unsigned n = options.compute_workers ? options.compute_workers : std::thread::hardware_concurrency();
    workers_ = std::max(1u, n);
    // The stream worker that launches a kernel is one of the compute
    // workers, so the pool holds one thread fewer.
    for (unsigned i = 1; i < workers_; ++i) pool_.emplace_back([this] { pool_loop(); });
  }
  device_state(const device_state&) = delete;
  device_state& operator=(const device_state&) = delete;
  ~device_state() {
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      stopping_.store(true, std::memory_order_relaxed);
    }
    pool_cv_.notify_all();
    for (auto& t : pool_) t.join();
    delete_view();
  }

  /** @brief The number of compute workers a kernel may use. Throws: nothing. */
  unsigned compute_workers() const noexcept { return workers_; }
  /** @brief The live-model limit. Throws: nothing. */
  std::size_t max_live_models() const noexcept { return max_live_models_; }
  /** @brief Models alive now (including captures in progress). Throws: nothing. */
  std::size_t live_models() const noexcept { return live_models_.load(std::memory_order_acquire); }
  /** @brief The external-event limit. Throws: nothing. */
  std::size_t max_external_events() const noexcept { return max_external_events_; }
  /** @brief The buffer memory limit in bytes (0: none). Throws: nothing. */
  std::size_t memory_limit() const noexcept { return memory_limit_; }
  /** @brief How long waits spin before they sleep (0: never). Throws: nothing. */
  std::chrono::microseconds spin_budget() const noexcept { return spin_budget_; }
  /** @brief Bytes buffers hold now (until their stream-ordered release ran). Throws: nothing. */
  std::size_t memory_in_use() const noexcept { return memory_in_use_.load(std::memory_order_acquire); }
  /** @brief External events alive now. Throws: nothing. */
  std::size_t live_external_events() const noexcept { return live_external_.load(std::memory_order_acquire); }

  /**
   * @brief Runs fn(begin, end) over [0, count) split into chunks across the
   * compute workers and returns when every chunk has run. Called by kernels
   * through their launch_context. Rethrows the first exception a chunk threw.
   */
  void parallel_for(std::size_t count, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (count == 0) return;
    grain = std::max<std::size_t>(grain, 1);
    const std::size_t chunks = (count + grain - 1) / grain;
    if (workers_ == 1 || chunks == 1) {
      fn(0, count);
      return;
    }
    // One job at a time: kernels from several streams take turns on the pool.
    std::lock_guard<std::mutex> one_job(job_mutex_);
    job j;
    j.fn = &fn;
    j.count = count;
    j.grain = grain;
    j.chunks = chunks;
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      job_ = &j;
      job_generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;
    }
    // Helpers still spinning from the last job see the generation change;
    // only sleeping ones need the condition variable (and its wake-up,
    // tens of microseconds, longer than a mid-size kernel takes).
    if (wake) pool_cv_.notify_all();
    work_on(j);
    // Wait for the helpers' chunks by spinning first, for the same reason;
    // the job lives on this stack, so the final check (no helper inside it)
    // is made under the lock that helpers join it under.
    detail::spin_until(spin_budget_, [&] {
      return j.finished.load(std::memory_order_acquire) == j.chunks &&
             j.active_helpers.load(std::memory_order_acquire) == 0;
    });
    std::unique_lock<std::mutex> lock(pool_mutex_);
    done_cv_.wait(lock, [&] {
      return j.finished.load(std::memory_order_relaxed) == j.chunks &&
             j.active_helpers.load(std::memory_order_relaxed) == 0;
    });
    job_ = nullptr;
    if (j.failure) std::rethrow_exception(j.failure);
  }

  // Task failure observers: each is told, on the stream's worker thread, of
  // each task that throws on a stream of this device (the stream's id, the
  // task's sequence number on it, the exception), after the stream entered
  // its error state. Any number, added and removed at any time: keel's
  // task-failure subscriptions and a runtime built on the host backend (the
  // ACL emulation's exception callbacks) are observers alike. An observer
  // is called outside the lock, so it may add or remove observers; one
  // removed may still be running a call that began before.
  using task_failure_observer =
      std::function<void(std::uint64_t stream_id, std::uint64_t task, const std::exception_ptr& failure)>;
  // Adds an observer; the key removes it. Throws what allocation throws (nothing added then).
  std::uint64_t observe_task_failures(task_failure_observer observer) {
    auto held = std::make_shared<const task_failure_observer>(std::move(observer));
    std::lock_guard<std::mutex> lock(failure_mutex_);
    failure_observers_.emplace_back(++failure_keys_, std::move(held));
    return failure_keys_;
  }
  void stop_observing_task_failures(std::uint64_t key) noexcept {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    for (auto it = failure_observers_.begin(); it != failure_observers_.end(); ++it)
      if (it->first == key) {
        failure_observers_.erase(it);
        return;
      }
  }
  void task_failed(std::uint64_t stream_id, std::uint64_t task, const std::exception_ptr& failure) noexcept {
    std::vector<std::shared_ptr<const task_failure_observer>> observers;
    try {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      observers.reserve(failure_observers_.size());
      for (const auto& o : failure_observers_) observers.push_back(o.second);
    } catch (...) {
      return;  // no memory to copy the list: the stream's error state still holds the failure
    }
    for (const auto& o : observers) {
      try {
        (*o)(stream_id, task, failure);
      } catch (...) {
        // an observer's own failure changes nothing for the stream
      }
    }
  }

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  static void drop(device_state* d) noexcept {
    if (d != nullptr && d->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete d;
  }
  // The device object users see for this state: the one they made while it
  // lives, else a view the state keeps of itself.
  device& facade() noexcept;
  // Makes the view facade() returns once the owner is gone (by the owner's
  // constructor, so that facade() never allocates).
  void make_view();

  // The checked layer's capture books (keel/runtime/checked/books.hpp).
  checked::device_books<detail::stream_state*> books;
  std::mutex streams_mutex;
  std::vector<detail::stream_state*> streams;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::size_t> live_models_{0};
  std::atomic<std::size_t> live_external_{0};
  std::atomic<std::size_t> memory_in_use_{0};
  std::atomic<device*> owner_{nullptr};

 private:
  std::mutex failure_mutex_;
  std::vector<std::pair<std::uint64_t, std::shared_ptr<const task_failure_observer>>> failure_observers_;
  std::uint64_t failure_keys_ = 0;  // the last key given
  struct job {
    const std::function<void(std::size_t, std::size_t)>* fn = nullptr;
    std::size_t count = 0, grain = 1, chunks = 0;
    std::atomic<std::size_t> next{0};
    // Written under pool_mutex_, read without it by the launcher's spin.
    std::atomic<std::size_t> finished{0};
    std::atomic<int> active_helpers{0};
    std::exception_ptr failure;  // guarded by pool_mutex_
  };

  void work_on(job& j) {
    std::size_t done = 0;
    std::exception_ptr failure;
    for (;;) {
      const std::size_t c = j.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= j.chunks) break;
      const std::size_t b = c * j.grain;
      try {
        (*j.fn)(b, std::min(j.count, b + j.grain));
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
      ++done;
    }
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (failure && !j.failure) j.failure = failure;
    if (j.finished.fetch_add(done, std::memory_order_release) + done == j.chunks) done_cv_.notify_all();
  }

  // A helper spins for the device's spin budget after each job, so the
  // next kernel's chunks reach it at once; then it sleeps until a job or
  // the device's end arrives.
  void pool_loop() {
    std::uint64_t seen = 0;
    for (;;) {
      detail::spin_until(spin_budget_, [&] {
        return job_generation_.load(std::memory_order_acquire) != seen || stopping_.load(std::memory_order_relaxed);
      });
      std::unique_lock<std::mutex> lock(pool_mutex_);
      if (!stopping_.load(std::memory_order_relaxed) && job_generation_.load(std::memory_order_relaxed) == seen) {
        ++sleepers_;
        pool_cv_.wait(lock, [&] {
          return stopping_.load(std::memory_order_relaxed) || job_generation_.load(std::memory_order_relaxed) != seen;
        });
        --sleepers_;
      }
      if (stopping_.load(std::memory_order_relaxed)) return;
      seen = job_generation_.load(std::memory_order_relaxed);
      job* j = job_;
      if (j == nullptr) continue;  // that job ended before this helper came
      j->active_helpers.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      work_on(*j);
      lock.lock();
      if (j->active_helpers.fetch_sub(1, std::memory_order_release) == 1) done_cv_.notify_all();
    }
  }

  unsigned workers_ = 1;
  std::size_t max_live_models_;
  std::size_t max_external_events_;
  std::size_t memory_limit_;
  std::chrono::microseconds spin_budget_;
  std::mutex job_mutex_;
  std::mutex pool_mutex_;
  std::condition_variable pool_cv_;
  std::condition_variable done_cv_;
  // The job being run and its number, set under pool_mutex_; the number is
  // atomic so that a spinning helper can watch it without the lock.
  job* job_ = nullptr;
  std::atomic<std::uint64_t> job_generation_{0};
  std::atomic<bool> stopping_{false};
  int sleepers_ = 0;  // guarded by pool_mutex_
  std::vector<std::thread> pool_;
  std::atomic<long> refs_{1};
  // A view the state owns of itself (it does not count as a reference), for
  // facade() once the owner is gone; made with the state, so that facade()
  // never allocates, and deleted with it.
  device* self_view_ = nullptr;
  void delete_view() noexcept;
};
}  // namespace detail
/// @endcond

/**
 * @brief A CPU standing in for an accelerator: the compute workers, the
 * device-wide limits and the capture books (held in a shared state).
 *
 * Ownership: shares its state with every stream, event, model and buffer
 * made on it: destroying the device object first is safe, they keep working
 * and the workers stop with the last of them. Not copyable or movable.
 * Thread safety: every member is thread-safe. Exceptions: the constructor
 * throws std::system_error if a thread cannot start; the others say what
 * they throw.
 */
class device {
 public:
  /// A host device with @p options (compute workers, limits, spin budget).
  explicit device(device_options options = {}) : state_(new detail::device_state(options)) {
    try {
      state_->make_view();
    } catch (...) {
      detail::device_state::drop(state_);
      throw;
    }
    state_->owner_.store(this, std::memory_order_release);
  }
  device(const device&) = delete;
  device& operator=(const device&) = delete;
  ~device() {
    if (owns_) {
      state_->owner_.store(nullptr, std::memory_order_release);
      detail::device_state::drop(state_);
    }
  }

  /** @brief The number of compute workers a kernel may use. Throws: nothing. */
  unsigned compute_workers() const noexcept { return state_->compute_workers(); }
  /** @brief The live-model limit. Throws: nothing. */
  std::size_t max_live_models() const noexcept { return state_->max_live_models(); }
  /** @brief Models alive now (including captures in progress). Throws: nothing. */
  std::size_t live_models() const noexcept { return state_->live_models(); }
  /** @brief The external-event limit. Throws: nothing. */
  std::size_t max_external_events() const noexcept { return state_->max_external_events(); }
  /** @brief The buffer memory limit in bytes (0: none). Throws: nothing. */
  std::size_t memory_limit() const noexcept { return state_->memory_limit(); }
  /** @brief How long waits spin before they sleep (0: never). Throws: nothing. */
  std::chrono::microseconds spin_budget() const noexcept { return state_->spin_budget(); }
  /** @brief Bytes buffers hold now (until their stream-ordered release ran). Throws: nothing. */
  std::size_t memory_in_use() const noexcept { return state_->memory_in_use(); }
  /** @brief External events alive now. Throws: nothing. */
  std::size_t live_external_events() const noexcept { return state_->live_external_events(); }
  /** @brief fn(begin, end) over [0, count) across the compute workers (see launch_context). */
  void parallel_for(std::size_t count, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    state_->parallel_for(count, grain, fn);
  }

  /// @cond
  detail::device_state& state() const noexcept { return *state_; }
  /// @endcond

 private:
  friend class detail::device_state;
  struct view_tag {};
  device(detail::device_state& state, view_tag) noexcept : state_(&state), owns_(false) {}
  detail::device_state* state_;
  bool owns_ = true;
};

/// @cond
inline device& detail::device_state::facade() noexcept {
  if (device* owner = owner_.load(std::memory_order_acquire)) return *owner;
  return *self_view_;
}
inline void detail::device_state::make_view() { self_view_ = new device(*this, device::view_tag{}); }
inline void detail::device_state::delete_view() noexcept { delete self_view_; }
/// @endcond



/**
 * @brief What a host kernel receives when it runs: its device, to split work
 * across the compute workers.
 *
 * Ownership: a view of the device, valid while the kernel runs. Thread
 * safety: use from the kernel's thread. Exceptions: parallel_for rethrows.
 */
class launch_context {
 public:
  /// The context of a launch on @p dev.
  explicit launch_context(device& dev) noexcept : device_(&dev.state()) {}
  /// @cond
  explicit launch_context(detail::device_state& dev) noexcept : device_(&dev) {}
  /// @endcond
  /// The device the launch runs on.
  device& get_device() const noexcept { return device_->facade(); }
  /// How many compute workers parallel_for may use.
  unsigned workers() const noexcept { return device_->compute_workers(); }
  /** @brief fn(begin, end) over [0, count) in chunks of at least @p grain. */
  template <class F>
  void parallel_for(std::size_t count, std::size_t grain, F&& fn) const {
    device_->parallel_for(count, grain, std::function<void(std::size_t, std::size_t)>(std::ref(fn)));
  }

 private:
  detail::device_state* device_;
};

/**
 * @brief The default host device, made on first use and destroyed at exit:
 * the one documented piece of process-wide state in the host backend.
 * Thread-safe. Throws what the device constructor throws.
 */
#if KEEL_USE_RUNTIME_LIBRARY
namespace detail {
KEEL_RUNTIME_API device& process_default_device();  // keel_runtime's, one per process
}  // namespace detail
#endif
inline device& default_device() {
#if KEEL_USE_RUNTIME_LIBRARY
  return detail::process_default_device();
#else
  static device instance;
  return instance;
#endif
}

} KEEL_END_NAMESPACE  // namespace keel::host
