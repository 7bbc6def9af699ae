// SPDX-License-Identifier: Apache-2.0
// The host backend's native stream calls: in-order streams, each drained by
// its own worker thread; an error state a throwing task sets and synchronize
// clears. The checked layer (keel/runtime/checked/) routes captured and
// staged work elsewhere; what arrives here runs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct stream_calls : native_types {
  static stream_handle create_stream(device_type& d) {
    device_state& dev = d.state();
    auto* s = new stream_state(dev);
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
      ref_ptr<stream_state>::drop(s);
      throw;
    }
    std::lock_guard<std::mutex> lock(dev.streams_mutex);
    dev.streams.push_back(s);
    return s;
  }

  static void destroy_stream(stream_handle s) noexcept {
    const bool from_own_task = std::this_thread::get_id() == s->worker.get_id();
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
    device_state& dev = *s->dev;
    {
      // Releases issued from other threads while the worker drained still
      // went to the ring (the stream was open); run what it did not reach.
      // From here on a release frees at once: no work is left to outlive.
      std::lock_guard<std::mutex> lock(s->close_m);
      s->closed = true;
      s->run_leftovers();
    }
    if (s->failed.load(std::memory_order_acquire) && !s->forced)
      report_error(make_error_code(errc::task_failed), "keel::host::destroy_stream", s->failure.c_str());
    {
      std::lock_guard<std::mutex> lock(dev.streams_mutex);
      dev.streams.erase(std::remove(dev.streams.begin(), dev.streams.end(), s), dev.streams.end());
    }
    ref_ptr<stream_state>::drop(s);
  }

  /**
   * Keeps the stream's record (not its work) alive past destroy_stream: a
   * scope whose stream is destroyed first then finds the capture, group or
   * update already ended instead of touching freed memory.
   */
  static void retain_stream(stream_handle s) noexcept { s->retain(); }
  static void release_stream(stream_handle s) noexcept { ref_ptr<stream_state>::drop(s); }

  static device_type& device_of(stream_handle s) noexcept { return s->dev->facade(); }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  /** Waits for the stream's work; reports (and clears) its error state. */
  static void synchronize(stream_handle s) {
    static constexpr const char* api = "keel::stream::synchronize";
    check_not_own_stream(s, api);
    s->drain();
    report_failure(s, api);
  }

  /** synchronize(), bounded: timeout when the work is still running then (the error state is kept). */
  static void synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::stream::synchronize";
    check_not_own_stream(s, api);
    if (!s->drain_until(clock::now() + timeout))
      throw_timeout(api, s->describe() + " did not finish the work issued to it", timeout);
    report_failure(s, api);
  }

  static void check_not_own_stream(stream_handle s, const char* api) {
    if (std::this_thread::get_id() == s->worker.get_id())
      ::keel::detail::throw_composed(errc::would_deadlock, api,
                                     {"a task running on ", s->describe(), " cannot wait for its own stream"});
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
      ::keel::detail::throw_composed(errc::task_failed, api,
                                     {s->describe(), ": a task failed: ", message,
                                      " (work issued after it was skipped; the error state is now cleared)"});
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
      ::keel::detail::throw_composed(errc::task_failed, "keel::stream::query",
                                     {s->describe(), ": a task failed: ", message});
    }
    return s->idle();
  }


  /** Waits for every stream of the device: unsafe during capture (the checked layer says so). */
  static void synchronize_device(device_type& d) { drain_device(d.state(), nullptr); }

  /** synchronize_device(), bounded by one deadline for all streams. */
  static void synchronize_device_for(device_type& d, std::chrono::microseconds timeout) {
    drain_device(d.state(), &timeout);
  }

  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    s->submit<false>(std::forward<F>(f));
  }

  /** f(launch_context&) is the kernel's body. */
  template <class F>
  static void launch_kernel(stream_handle s, kernel_kind, F&& f) {
    // The device comes from the stream when the task runs, so a kernel
    // with a few scalar arguments still fits in a ring slot.
    s->submit<false>([fn = std::forward<F>(f)](void* dev) {
      launch_context ctx(*static_cast<device_state*>(dev));
      fn(ctx);
    });
  }

  // The body of an asynchronous copy; it owns what the copy reads and writes.
  static auto copy_task(void* dst, const void* src, std::size_t bytes, std::shared_ptr<void> keep_dst,
                        std::shared_ptr<void> keep_src) {
    return [dst, src, bytes, d = std::move(keep_dst), k = std::move(keep_src)]() {
      if (bytes) std::memcpy(dst, src, bytes);
    };
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    s->submit<false>(copy_task(dst, src, bytes, std::move(keep_dst), std::move(keep_src)));
  }

  // The body of an asynchronous memset; it owns the memory it writes.
  static auto memset_task(void* dst, int value, std::size_t bytes, std::shared_ptr<void> keep_dst) {
    return [dst, value, bytes, d = std::move(keep_dst)]() {
      if (bytes) std::memset(dst, value, bytes);
    };
  }

  static void memset_async(stream_handle s, void* dst, int value, std::size_t bytes, std::shared_ptr<void> keep_dst) {
    s->submit<false>(memset_task(dst, value, bytes, std::move(keep_dst)));
  }

  /** A blocking copy: waits for the stream's earlier work, then copies. */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind) {
    s->drain();
    if (bytes) std::memcpy(dst, src, bytes);
  }


  // Every stream of the device drained (by one deadline when @p timeout is
  // given); then a stream in its error state is reported.
  static void drain_device(device_state& dev, const std::chrono::microseconds* timeout) {
    static constexpr const char* api = "keel::host::synchronize_device";
    const auto deadline = clock::now() + (timeout != nullptr ? *timeout : std::chrono::microseconds(0));
    std::vector<ref_ptr<stream_state>> all;
    {
      std::lock_guard<std::mutex> lock(dev.streams_mutex);
      for (auto* s : dev.streams) all.emplace_back(s);
    }
    for (auto& s : all) {
      if (timeout == nullptr) {
        s->drain();
      } else if (!s->drain_until(deadline)) {
        throw_timeout(api, s->describe() + " did not finish its work", *timeout);
      }
    }
    for (auto& s : all)
      if (s->failed.load(std::memory_order_acquire))
        ::keel::detail::throw_composed(errc::task_failed, api,
                                       {s->describe(), " is in its error state; synchronize it to clear"});
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
