// SPDX-License-Identifier: Apache-2.0
// A user-written keel backend in one header: streams and events only, every
// task run synchronously on the thread that issues it. It supplies keel's
// stream and event layers and nothing else, so basic_stream, basic_event and
// the external-event pool work on it, and basic_capture_scope refuses it at
// compile time, naming the capture layer (tests/compile_fail checks that).
// docs/backends.md walks through it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/event.hpp"
#include "keel/runtime/runtime.hpp"
#include "keel/runtime/stream.hpp"

namespace inline_rt {

/**
 * @brief The device: it counts external events against a limit and knows its
 * streams (for synchronize_device).
 *
 * Ownership: owns nothing the streams need; it must outlive them. Thread
 * safety: every member may be used from any thread. Exceptions: none.
 */
class device {
 public:
  explicit device(std::size_t external_event_limit = 64) noexcept : external_limit_(external_event_limit) {}
  device(const device&) = delete;
  device& operator=(const device&) = delete;
  std::size_t external_event_limit() const noexcept { return external_limit_; }

 private:
  friend struct backend;
  std::size_t external_limit_;
  std::atomic<std::size_t> external_live_{0};
  std::atomic<std::uint64_t> next_stream_id_{1};
  std::mutex streams_mutex_;
  std::set<struct stream_state*> streams_;
};

/** @brief What a kernel body receives: the stream it runs on. */
struct launch_context {
  std::uint64_t stream_id = 0;
};

/// @cond
// A stream: work runs under its lock, in the order threads take it. The
// error state keeps the first failure until synchronize reports it.
struct stream_state {
  device* dev = nullptr;
  std::uint64_t id = 0;
  std::recursive_mutex run;  // recursive: a task may issue work to its own stream
  std::exception_ptr failure;
  std::string failure_text;
};

struct event_state {
  device* dev = nullptr;
  keel::event_flags flags = keel::event_flags::default_;
  bool recorded = false;
  std::chrono::steady_clock::time_point stamp{};
  std::mutex mutex;  // external events: the signal, waited on by wait and synchronize
  std::condition_variable signalled_cv;
  bool signalled = false;
};
/// @endcond

/**
 * @brief The backend: keel's stream and event layers over synchronous work.
 *
 * Ownership: native handles are raw pointers owned by keel's handles.
 * Thread safety: work may be issued to a stream from any thread; it runs on
 * the issuing thread, one task of a stream at a time. Exceptions: calls throw
 * keel::error and change nothing; a task's own exception becomes the
 * stream's error state (later work is skipped until synchronize reports it),
 * as on a device.
 */
struct backend {
  using device_type = device;
  using stream_handle = stream_state*;
  using event_handle = event_state*;
  using launch_context = inline_rt::launch_context;

  // ---- streams ---------------------------------------------------------------

  static stream_handle create_stream(device_type& dev) {
    auto s = std::make_unique<stream_state>();
    s->dev = &dev;
    s->id = dev.next_stream_id_.fetch_add(1);
    std::lock_guard<std::mutex> lock(dev.streams_mutex_);
    dev.streams_.insert(s.get());
    return s.release();
  }
  static void destroy_stream(stream_handle s) noexcept {
    {
      std::lock_guard<std::mutex> lock(s->dev->streams_mutex_);
      s->dev->streams_.erase(s);
    }
    // A failure nobody synchronized for would be lost: keel's error handler gets it.
    if (s->failure)
      keel::report_error(keel::make_error_code(keel::errc::task_failed), "inline_rt::destroy_stream",
                         s->failure_text.c_str());
    delete s;
  }
  static device_type& device_of(stream_handle s) noexcept { return *s->dev; }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  // Work already ran; what is left is to report (and clear) a failure.
  static void synchronize(stream_handle s) {
    std::lock_guard<std::recursive_mutex> lock(s->run);
    if (!s->failure) return;
    const std::string text = s->failure_text;
    s->failure = nullptr;
    s->failure_text.clear();
    keel::throw_error(keel::errc::task_failed, "inline_rt::synchronize", text);
  }
  static bool query(stream_handle s) {
    std::lock_guard<std::recursive_mutex> lock(s->run);
    if (s->failure) keel::throw_error(keel::errc::task_failed, "inline_rt::query", s->failure_text);
    return true;
  }
  static void synchronize_device(device_type& dev) {
    // Waits for the task each stream may be running on another thread.
    std::lock_guard<std::mutex> lock(dev.streams_mutex_);
    for (stream_state* s : dev.streams_) std::lock_guard<std::recursive_mutex> wait_for(s->run);
  }

  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    run_task(*s, [&] { f(); });
  }
  template <class F>
  static void launch_kernel(stream_handle s, keel::kernel_kind, F&& f) {
    run_task(*s, [&] {
      launch_context ctx{s->id};
      f(ctx);
    });
  }
  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, keel::copy_kind,
                         std::shared_ptr<void>, std::shared_ptr<void>) {
    run_task(*s, [&] { std::memcpy(dst, src, bytes); });
  }
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, keel::copy_kind) {
    run_task(*s, [&] { std::memcpy(dst, src, bytes); });
    synchronize(s);  // a blocking copy reports the stream's failure, as the device does
  }

  // ---- events ----------------------------------------------------------------

  static event_handle create_event(device_type& dev, keel::event_flags flags) {
    if (flags == keel::event_flags::external) {
      std::size_t live = dev.external_live_.load();
      do {
        if (live >= dev.external_limit_)
          keel::throw_error(keel::errc::resource_limit, "inline_rt::create_event",
                            "all " + std::to_string(dev.external_limit_) + " external events of the device are in use");
      } while (!dev.external_live_.compare_exchange_weak(live, live + 1));
    }
    auto e = new event_state;
    e->dev = &dev;
    e->flags = flags;
    return e;
  }
  static void destroy_event(event_handle e) noexcept {
    if (e->flags == keel::event_flags::external) e->dev->external_live_.fetch_sub(1);
    delete e;
  }
  static keel::event_flags flags_of(event_handle e) noexcept { return e->flags; }

  // Control work: it runs even in the error state, so waiters never deadlock.
  static void record(event_handle e, stream_handle s) {
    std::lock_guard<std::recursive_mutex> run(s->run);
    std::lock_guard<std::mutex> lock(e->mutex);
    e->recorded = true;
    e->stamp = std::chrono::steady_clock::now();
    if (e->flags == keel::event_flags::external) {
      e->signalled = true;
      e->signalled_cv.notify_all();
    }
  }
  // A default or timing event's record has been reached when it returned;
  // an external event blocks the stream (this thread) until it is signalled.
  static void wait(stream_handle s, event_handle e) {
    std::lock_guard<std::recursive_mutex> run(s->run);
    if (e->flags != keel::event_flags::external) return;
    std::unique_lock<std::mutex> lock(e->mutex);
    e->signalled_cv.wait(lock, [e] { return e->signalled; });
  }
  static void reset(stream_handle s, event_handle e) {
    if (e->flags != keel::event_flags::external)
      keel::throw_error(keel::errc::invalid_parameter, "inline_rt::reset", "only external events can be reset");
    std::lock_guard<std::recursive_mutex> run(s->run);
    std::lock_guard<std::mutex> lock(e->mutex);
    e->signalled = false;
  }
  static bool query(event_handle e) {
    std::lock_guard<std::mutex> lock(e->mutex);
    return e->flags == keel::event_flags::external ? e->signalled : true;
  }
  static void synchronize(event_handle e) {
    std::unique_lock<std::mutex> lock(e->mutex);
    if (e->flags == keel::event_flags::external) e->signalled_cv.wait(lock, [e] { return e->signalled; });
  }
  static float elapsed_ms(event_handle start, event_handle end) {
    if (start->flags != keel::event_flags::timing || end->flags != keel::event_flags::timing)
      keel::throw_error(keel::errc::invalid_parameter, "inline_rt::elapsed_ms", "both events must be timing events");
    std::scoped_lock lock(start->mutex, end->mutex);
    if (!start->recorded || !end->recorded)
      keel::throw_error(keel::errc::invalid_state, "inline_rt::elapsed_ms", "an event has not completed: it was never recorded");
    return std::chrono::duration<float, std::milli>(end->stamp - start->stamp).count();
  }

 private:
  // Runs one task now, under the stream's lock; skipped in the error state.
  template <class Task>
  static void run_task(stream_state& s, Task&& task) {
    std::lock_guard<std::recursive_mutex> lock(s.run);
    if (s.failure) return;
    try {
      task();
    } catch (const std::exception& e) {
      s.failure = std::current_exception();
      s.failure_text = e.what();
    } catch (...) {
      s.failure = std::current_exception();
      s.failure_text = "unknown exception";
    }
  }
};

static_assert(keel::is_stream_backend_v<backend> && keel::is_event_backend_v<backend>);
static_assert(!keel::is_capture_backend_v<backend> && !keel::is_runtime_backend_v<backend>);

KEEL_RUNTIME_STREAM_ALIASES(backend)
KEEL_RUNTIME_EVENT_ALIASES(backend)

}  // namespace inline_rt
