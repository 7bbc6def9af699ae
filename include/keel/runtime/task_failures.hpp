// SPDX-License-Identifier: Apache-2.0
// Task-failure reports: basic_task_failure_subscription calls a function for
// each task that fails on a device (a task that throws on the host backend,
// a task the runtime reports through its exception-information callbacks on
// ACL), with the device, the runtime's id of the failed stream, the task and
// the error. A subscription is RAII: its destruction waits for a call in
// progress, so nothing the function uses is freed while it runs.
//
// keel keeps each subscription's function (detail::task_failure_listener);
// a backend supplies task_failure_source<B>, which tells the listener of its
// runtime's failures for as long as the registration it returns is held.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief One failed task, as a task-failure subscription is told of it.
 *
 * Ownership: a value. Thread safety: as any value; the reference a
 * subscription's function gets lives during the call only. Exceptions: none.
 */
struct task_failure {
  /// The device the task failed on: the ACL device id; 0 on the host backend.
  int device = 0;
  /// The runtime's id of the task's stream (keel::stream::runtime_id()).
  std::int32_t runtime_stream_id = 0;
  /// The task's number on its stream as the runtime counts them (host: its sequence number from 0).
  std::uint64_t task = 0;
  /// Why it failed: the task's keel::error code (else errc::task_failed) on the host; the runtime's status on ACL.
  std::error_code code;
};

/**
 * @brief How a backend tells keel of its tasks' failures. The primary
 * template has none; a backend specialises it with
 * `static std::shared_ptr<void> subscribe(typename B::device_type&, std::shared_ptr<detail::task_failure_listener>)`
 * (the registration: the listener is told while it is held; throws, registering nothing, on failure).
 */
template <class B>
struct task_failure_source;

/// @cond
namespace detail {

// A subscription's function and the calls of it in progress. close() stops
// new calls and waits for those in progress on other threads (a call on
// the closing thread, which destroys its own subscription from within its
// function, is not waited for: it is that thread's own frame).
class task_failure_listener {
 public:
  explicit task_failure_listener(std::function<void(const task_failure&)> fn) : fn_(std::move(fn)) {}

  void tell(const task_failure& failure) noexcept {
    const std::thread::id me = std::this_thread::get_id();
    {
      std::lock_guard<std::mutex> lock(m_);
      if (closed_) return;
      try {
        callers_.push_back(me);
      } catch (...) {
        report_error(errc::out_of_memory, "keel::task_failure_subscription", "no memory to call the subscriber");
        return;
      }
    }
    try {
      fn_(failure);
    } catch (...) {
      report_current_exception("keel::task_failure_subscription (the subscriber's function)");
    }
    std::lock_guard<std::mutex> lock(m_);
    callers_.erase(std::find(callers_.begin(), callers_.end(), me));
    done_.notify_all();
  }

  void close() noexcept {
    const std::thread::id me = std::this_thread::get_id();
    std::unique_lock<std::mutex> lock(m_);
    closed_ = true;
    done_.wait(lock, [&] { return std::all_of(callers_.begin(), callers_.end(), [&](std::thread::id t) { return t == me; }); });
    if (!callers_.empty()) return;  // the function is running on this thread: it goes with the listener
    std::function<void(const task_failure&)> fn = std::move(fn_);
    lock.unlock();  // what the function holds is released here, not on a failing stream's thread later
  }

 private:
  std::mutex m_;
  std::condition_variable done_;
  bool closed_ = false;
  std::vector<std::thread::id> callers_;  // the threads calling fn_ now
  std::function<void(const task_failure&)> fn_;
};

}  // namespace detail
/// @endcond

/**
 * @brief Calls a function for each task that fails on a device: on the
 * failing stream's worker thread (host) or the runtime's callback thread
 * (ACL), after the stream entered its error state, before synchronize()
 * reports it. Any number of subscriptions may hear one device.
 *
 * Ownership: move-only; holds the subscription until destroyed, reset() or
 * moved from (then empty); the device must outlive it. Thread safety: one object from one thread at a
 * time; its function may run on any thread, concurrently with itself when
 * tasks fail on several streams at once. Exceptions: the constructor throws
 * keel::error (the runtime's status, or not_supported when the runtime lacks
 * exception callbacks) or std::bad_alloc, subscribing nothing; an exception
 * the function throws goes to keel's error handler; the rest throws nothing.
 *
 * Destroying (or resetting) a subscription waits for a call of its function
 * in progress on another thread, and calls it no more: what the function
 * uses may be freed right after. A function may destroy its own subscription.
 */
template <class B>
class [[nodiscard]] basic_task_failure_subscription {
 public:
  /// The function told of each failure.
  using function_type = std::function<void(const task_failure&)>;

  /** @brief An empty subscription. Throws: nothing. */
  basic_task_failure_subscription() noexcept = default;

  /**
   * @brief Subscribes @p fn to the failures of tasks on @p dev's streams.
   * @throws keel::error null_parameter when @p fn is empty; what the backend throws.
   */
  basic_task_failure_subscription(typename B::device_type& dev, function_type fn) {
    if (!fn)
      throw_error(errc::null_parameter, "keel::task_failure_subscription", "the function to call is empty");
    auto listener = std::make_shared<detail::task_failure_listener>(std::move(fn));
    registration_ = task_failure_source<B>::subscribe(dev, listener);
    listener_ = std::move(listener);
  }

  /** @brief Takes @p other's subscription; @p other is empty. Throws: nothing. */
  basic_task_failure_subscription(basic_task_failure_subscription&& other) noexcept
      : listener_(std::move(other.listener_)), registration_(std::move(other.registration_)) {}
  /** @brief Ends this subscription (as reset()), then takes @p other's. Throws: nothing. */
  basic_task_failure_subscription& operator=(basic_task_failure_subscription&& other) noexcept {
    if (this != &other) {
      reset();
      listener_ = std::move(other.listener_);
      registration_ = std::move(other.registration_);
    }
    return *this;
  }
  basic_task_failure_subscription(const basic_task_failure_subscription&) = delete;
  basic_task_failure_subscription& operator=(const basic_task_failure_subscription&) = delete;
  /** @brief Ends the subscription (as reset()). */
  ~basic_task_failure_subscription() { reset(); }

  /**
   * @brief Ends the subscription: waits for a call of the function in
   * progress on another thread, then calls it no more. Throws: nothing.
   */
  void reset() noexcept {
    if (!listener_) return;
    listener_->close();
    registration_.reset();
    listener_.reset();
  }

  /** @brief Whether this holds a subscription. Throws: nothing. */
  explicit operator bool() const noexcept { return listener_ != nullptr; }

 private:
  std::shared_ptr<detail::task_failure_listener> listener_;
  std::shared_ptr<void> registration_;
};

KEEL_END_NAMESPACE
