// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native stream calls: aclrtCreateStream and friends, host
// callables over aclrtLaunchCallback with a reporting thread per stream,
// kernels whose bodies enqueue ACL work when issued, and adoption of streams
// made elsewhere. The checked layer (keel/runtime/checked/) keeps the
// capture books; these calls only reach ACL.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/memory.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct stream_calls : memory_calls {
  static stream_handle create_stream(device_type& dev) {
    auto box = std::make_unique<stream_box>();
    const api& a = entered(dev);
    dev.check(a.aclrtCreateStream(&box->native), "aclrtCreateStream");
    return register_created(dev, std::move(box));
  }
  // A stream ACL has just made (box->native): its id and its entry in the
  // device's registry; on failure the ACL stream is destroyed again.
  static stream_handle register_created(device_type& dev, std::unique_ptr<stream_box> box) {
    box->dev = &dev;
    box->id = dev.next_stream_id_.fetch_add(1, std::memory_order_relaxed);
    try {
      dev.streams_.add(box->native, box.get());
    } catch (...) {
      entered(dev).aclrtDestroyStream(box->native);
      throw;
    }
    return box.release();
  }

  static void destroy_stream(stream_handle s) noexcept {
    if (s->adopted) return;  // its maker destroys it; the record stays with the device
    s->dev->streams_.remove(s->native, s);  // before ACL may hand the address out again
    if (on_own_reporting_thread(s)) return defer_destroy(s);
    const api& a = entered(*s->dev);
    if (s->forced && a.aclrtDestroyStreamForce.get() != nullptr) {
      // aclrtDestroyStreamForce: the work not yet run is dropped, nothing is waited for.
      {
        std::lock_guard<std::mutex> lock(s->m);
        if (s->callbacks) s->callbacks->dropped.store(true, std::memory_order_release);
      }
      const auto force = a.aclrtDestroyStreamForce.get();
      const status st = force != nullptr ? force(s->native) : 0;
      if (st != 0) report_error(make_status_code(st), "aclrtDestroyStreamForce", "the stream could not be destroyed");
      stop_host_callbacks(s, false);  // the destruction ended the subscription
      return release_stream(s);
    }
    if (a.aclrtSynchronizeStream.get() != nullptr) a.aclrtSynchronizeStream.get()(s->native);
    stop_host_callbacks(s);
    const status st = a.aclrtDestroyStream.get() != nullptr ? a.aclrtDestroyStream.get()(s->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyStream", "the stream could not be destroyed");
    release_stream(s);
  }

  /**
   * Keeps keel's record of the stream (not the ACL stream) alive past
   * destroy_stream (see the host backend). Its owner holds one count, or
   * the device for a record it owns.
   */
  static void retain_stream(stream_handle s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
  static void release_stream(stream_handle s) noexcept {
    if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
  }

  /** The aclrtStream under keel's record. */
  static acl::stream_handle to_native(stream_handle s) noexcept {
    mark(s->foreign);  // another library may begin a capture on it now
    return s->native;
  }
  /**
   * keel's record of @p native (stream_ref(dev, native), stream::from_native_handle):
   * the one the device has (a keel stream's, or one viewed before), or a new
   * one for a stream made elsewhere (another framework's current stream),
   * which the device owns until an owner takes it. An owner takes the ACL
   * stream: destroying the owner destroys it.
   */
  static stream_handle from_native(device_type& dev, acl::stream_handle native, adoption how,
                                   handle_tag<stream_handle>, const char* api) {
    const stream_handle s = dev.streams_.find_or_make(
        native, how, api, "stream",
        [&] {
          auto box = std::make_unique<stream_box>();
          box->native = native;
          box->dev = &dev;
          box->id = dev.next_stream_id_.fetch_add(1, std::memory_order_relaxed);
          return box;
        },
        [](const stream_box&) {});
    mark(s->foreign);  // its maker (or whoever holds the handle) may capture on it
    return s;
  }
  /** The owner gives the ACL stream up: the record (and its count) goes to the device, until forget_stream. */
  static acl::stream_handle release_native(stream_handle s) noexcept {
    s->dev->streams_.give_to_device(s);
    mark(s->foreign);
    return s->native;
  }


  static device_type& device_of(stream_handle s) noexcept { return *s->dev; }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  static bool is_adopted(stream_handle s) noexcept { return s->adopted; }

  static void synchronize(stream_handle s) {
    const api& a = entered(*s->dev);
    s->acl_work.store(false, std::memory_order_relaxed);  // before the call: work issued during it stays counted
    synchronized_with(s, a.aclrtSynchronizeStream(s->native), "aclrtSynchronizeStream");
  }

  /** aclrtSynchronizeStreamWithTimeout (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, errc::timeout, when it passes). */
  static void synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
    const api& a = entered(*s->dev);
    s->acl_work.store(false, std::memory_order_relaxed);
    synchronized_with(s, a.aclrtSynchronizeStreamWithTimeout(s->native, timeout_ms(timeout)),
                      "aclrtSynchronizeStreamWithTimeout");
  }

  // A synchronize's status: 0 passed the work issued before it and cleared
  // ACL's error state (the caller cleared acl_work before the call, so work
  // issued during it stays counted); anything else (a timeout, a failure)
  // sets acl_work again.
  static void synchronized_with(stream_handle s, status st, const char* function) {
    if (st != 0) {
      mark(s->acl_work);
      s->dev->check(st, function);
    }
    after_synchronize(s);
  }

  // The stream passed its work: what it used goes, released memory whose
  // streams passed the release goes back, a host callable's failure is reported.
  static void after_synchronize(stream_handle s) {
    release_keeps(s);
    collect_releases(*s->dev);
    check_host_calls(s, true);
  }

  static bool query(stream_handle s) {
    stream_status st = stream_status::not_ready;
    s->dev->check(entered(*s->dev).aclrtStreamQuery(s->native, &st), "aclrtStreamQuery");
    check_host_calls(s, false);
    return st == stream_status::complete;
  }


  /** aclrtSynchronizeDevice, or aclrtSynchronizeDeviceWithTimeout. */
  static void synchronize_device(device_type& dev) {
    dev.check(entered(dev).aclrtSynchronizeDevice(), "aclrtSynchronizeDevice");
    collect_releases(dev);
  }
  static void synchronize_device_for(device_type& dev, std::chrono::microseconds timeout) {
    dev.check(entered(dev).aclrtSynchronizeDeviceWithTimeout(timeout_ms(timeout)), "aclrtSynchronizeDeviceWithTimeout");
    collect_releases(dev);
  }

  /**
   * f() runs on the stream's reporting thread when the stream reaches it, and
   * the stream's later work waits for it: aclrtLaunchCallback with
   * ACL_CALLBACK_BLOCK (CANN runtime API reference, aclrtLaunchCallback:
   * https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_0126.html;
   * aclrtSubscribeReport 03_0125: "the callbacks the stream delivers run in
   * the bound thread", aclrtProcessReport, aclrtUnSubscribeReport 03_0128).
   * Captured, the callable belongs to the model (its keep list) and runs on
   * every execution, on the reporting thread of the executing stream.
   */
  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    // On a stream in a capture keel did not begin (an adopted stream's, one
    // whose aclrtStream another library holds), ACL captures it all the same:
    // the device keeps the callable. Only a foreign stream can be in one
    // (keel's own captures take captured_launch_host), so only it asks ACL.
    const bool captured = s->foreign.load(std::memory_order_relaxed) && native_capturing(s);
    launch_host_call(s, std::forward<F>(f), captured, nullptr);
  }

  // A callable small and plain enough to travel in the userData pointer
  // itself (a lambda that captures one pointer): an eager launch of it
  // allocates nothing, as a raw aclrtLaunchHostFunc of fn(args) does not.
  template <class D>
  static constexpr bool travels_inline = std::is_trivially_copyable_v<D> && std::is_trivially_destructible_v<D> &&
                                         sizeof(D) <= sizeof(void*) && alignof(D) <= alignof(void*);

  // Captured, the callable runs on every replay until the model is
  // destroyed: the model owns it (the capture's keep list, moved into the
  // model at capture end), not the stream that captured it, which may go
  // first. A capture keel did not begin has no model record (origin null):
  // the device keeps the callable until it is destroyed.
  template <class F>
  static void launch_host_call(stream_handle s, F&& f, bool captured, stream_handle origin) {
    device& dev = *s->dev;
    const api& a = entered(dev);
    (void)host_callbacks_of(s);
    // Whether the runner asks ACL if the stream failed: only work before the
    // callable can fail it, and keel sees all of it unless the stream is foreign.
    const bool ask_runtime =
        captured || s->foreign.load(std::memory_order_relaxed) || s->acl_work.load(std::memory_order_relaxed);
    using callable = std::decay_t<F>;
    if constexpr (travels_inline<callable>) {
      if (!captured) {
        void* user = nullptr;
        const callable copy(std::forward<F>(f));
        if constexpr (!std::is_empty_v<callable>) std::memcpy(&user, &copy, sizeof(callable));  // an empty one has no bytes to keep
        return enqueue_host_call(s, a, ask_runtime ? &run_inline_host_call<callable, true>
                                                   : &run_inline_host_call<callable, false>, user);
      }
    }
    auto call = std::make_unique<host_call_of<callable>>(std::forward<F>(f));
    call->once = !captured;
    call->ask_runtime = ask_runtime;
    std::shared_ptr<void> owner;
    if (captured) {
      owner = std::shared_ptr<host_call>(std::move(call));
      if (origin != nullptr) {
        std::lock_guard<std::mutex> lock(origin->m);
        origin->keep.reserve(origin->keep.size() + 1);
      } else {
        std::lock_guard<std::mutex> lock(dev.unowned_m_);
        dev.unowned_calls_.reserve(dev.unowned_calls_.size() + 1);
      }
    }
    void* user = captured ? owner.get() : static_cast<void*>(call.get());
    enqueue_host_call(s, a, &run_host_call, user);
    if (!captured) {
      (void)call.release();  // enqueued: run_host_call deletes it (it may have already)
    } else if (origin != nullptr) {
      std::lock_guard<std::mutex> lock(origin->m);
      origin->keep.push_back(std::move(owner));  // reserved above: cannot throw
      origin->capture_host_calls = true;
    } else {
      std::lock_guard<std::mutex> lock(dev.unowned_m_);
      dev.unowned_calls_.push_back(std::move(owner));
    }
  }

  // fn(user) in stream order: aclrtLaunchHostFunc, or a blocking callback
  // for the stream's reporting thread.
  static void enqueue_host_call(stream_handle s, const api& a, void (*fn)(void*), void* user) {
    if (a.aclrtLaunchHostFunc) {
      s->dev->check(a.aclrtLaunchHostFunc(s->native, fn, user), "aclrtLaunchHostFunc");
    } else {
      s->dev->check(a.aclrtLaunchCallback(fn, user, callback_block::block, s->native), "aclrtLaunchCallback");
    }
  }

  /** Runs f(ctx) now: the body enqueues ACL work on ctx.stream(). */
  template <class F>
  static void launch_kernel(stream_handle s, kernel_kind, F&& f) {
    launch_context ctx(*s->dev, s->native);
    try {
      std::forward<F>(f)(ctx);
    } catch (...) {
      mark(s->acl_work);  // the body may have enqueued some of its work
      throw;
    }
    mark(s->acl_work);  // after the enqueue (a synchronize clears it before it asks ACL)
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    const stream_handle keeper = keeper_of(s);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.reserve(keeper->keep.size() + 2);
    }
    if (bytes != 0)
      s->dev->check(entered(*s->dev).aclrtMemcpyAsync(dst, bytes, src, bytes, memcpy_kind_of(kind), s->native),
                    "aclrtMemcpyAsync");
    mark(s->acl_work);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      if (keep_dst) keeper->keep.push_back(std::move(keep_dst));
      if (keep_src) keeper->keep.push_back(std::move(keep_src));
    }
  }


  /** A blocking copy after the stream's earlier work (aclrtMemcpy alone is not ordered with streams). */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    synchronize(s);
    if (bytes != 0)
      s->dev->check(entered(*s->dev).aclrtMemcpy(dst, bytes, src, bytes, memcpy_kind_of(kind)), "aclrtMemcpy");
  }

  /** ACL's view of a capture keel did not begin (its mode is not known). */
  static capture_info native_capture_status(stream_handle s) noexcept {
    capture_info info;
    acl::model_handle model = nullptr;
    if (native_capturing(s, &model)) {
      info.state = capture_state::active;
      info.capture_id = reinterpret_cast<std::uintptr_t>(model);
    }
    return info;
  }

  // How long one aclrtProcessReport waits: also how long a stream's
  // destruction may wait for its reporting thread to notice.
  static constexpr std::int32_t report_timeout_ms = 100;

  // The host callbacks of the stream whose reporting thread this is (null on
  // any other thread): set once by the reporting thread itself.
  static host_callbacks*& reporting_for() noexcept {
    thread_local host_callbacks* callbacks = nullptr;
    return callbacks;
  }

  // The aclrtCallback of every launch_host: runs the callable unless the
  // stream whose reporting thread runs it (the launching stream, or the
  // stream executing the model that captured it) is in its error state, and
  // records what it throws there. On a thread keel did not start (someone
  // else subscribed to the stream), a failure goes to keel's error handler.
  static void run_host_call(void* user) noexcept {
    auto* call = static_cast<host_call*>(user);
    run_reported(call->ask_runtime, [call] { call->run(); });
    if (call->once) delete call;
  }
  // The runner of a callable that travelled in userData (travels_inline).
  template <class D, bool AskRuntime>
  static void run_inline_host_call(void* user) noexcept {
    run_reported(AskRuntime, [&user] {
      alignas(D) unsigned char bytes[sizeof(D)];
      std::memcpy(bytes, &user, sizeof(D));
      (*std::launder(reinterpret_cast<D*>(bytes)))();
    });
  }
  // What every runner does around the callable: the skip (keel's error
  // state, or, when @p ask_runtime, ACL's: a bounded wait or an ACL task
  // failed the stream) and recording what it throws.
  template <class Run>
  static void run_reported(bool ask_runtime, Run&& run) noexcept {
    host_callbacks* callbacks = reporting_for();
    if (callbacks != nullptr) {
      if (callbacks->failed.load(std::memory_order_acquire) || callbacks->dropped.load(std::memory_order_acquire))
        return;
      if (ask_runtime) {
        const auto query = callbacks->functions->aclrtStreamQuery.get();
        acl::stream_status st = acl::stream_status::not_ready;
        if (query != nullptr && query(callbacks->native, &st) != 0) return;
      }
    }
    std::string failure;
    try {
      run();
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "a host callable threw a non-standard exception";
    }
    if (failure.empty()) return;
    if (callbacks != nullptr) {
      std::lock_guard<std::mutex> lock(callbacks->m);
      if (!callbacks->failed.load(std::memory_order_relaxed)) callbacks->failure = std::move(failure);
      callbacks->failed.store(true, std::memory_order_release);
    } else {
      report_error(make_error_code(keel::errc::task_failed), "keel::acl host callable",
                   ("a host callable threw on a thread keel does not report for: " + failure).c_str());
    }
  }

  // The stream's callbacks, starting its reporting thread on first use. Its
  // ACL calls need the device on the calling thread (entered), and the
  // reporting thread makes the device current on itself (device::enter) before
  // aclrtProcessReport, as every thread that calls the runtime must.
  static host_callbacks& host_callbacks_of(stream_handle s) {
    device* dev = s->dev;
    const api& a = entered(*dev);
    if (host_callbacks* ready = s->ready_callbacks.load(std::memory_order_acquire)) return *ready;
    if (a.aclrtLaunchHostFunc) return host_function_state_of(s, a);
    std::lock_guard<std::mutex> lock(s->m);
    if (s->callbacks) return *s->callbacks;
    if (!a.aclrtProcessReport || !a.aclrtUnSubscribeReport)  // the reporting thread's loop, its end
      throw_error(keel::errc::not_supported, "aclrtProcessReport",
                  "host callbacks are not supported by this runtime (CANN too old?)");
    auto callbacks = std::make_unique<host_callbacks>();
    host_callbacks* cb = callbacks.get();
    cb->native = s->native;
    cb->functions = &a;
    cb->reporter = std::thread([cb, dev] {
      reporting_for() = cb;
      dev->enter();  // a runtime thread of keel's own
      while (!cb->subscribed.load(std::memory_order_acquire)) {
        if (cb->stop.load(std::memory_order_acquire)) return;
        std::this_thread::yield();
      }
      const auto process = dev->api_.aclrtProcessReport.get();
      while (!cb->stop.load(std::memory_order_acquire)) {
        const status st = process(report_timeout_ms);
        // 0: ran one; 100036 (ACL_ERROR_WAIT_CALLBACK_TIMEOUT): nothing came.
        // Anything else (no context, not subscribed) returns at once: back off.
        if (st != 0 && st != 100036) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    cb->reporter_id = static_cast<std::uint64_t>(cb->reporter.native_handle());
    try {  // not_supported when the runtime lacks it
      dev->check(a.aclrtSubscribeReport(cb->reporter_id, s->native), "aclrtSubscribeReport");
    } catch (...) {
      cb->stop.store(true, std::memory_order_release);
      cb->reporter.join();
      throw;
    }
    cb->subscribed.store(true, std::memory_order_release);
    s->callbacks = std::move(callbacks);
    s->ready_callbacks.store(cb, std::memory_order_release);
    return *cb;
  }

  // The host-function path (aclrtLaunchHostFunc, CANN's callback without a
  // subscribed thread): the stream's record and, once the stream is not
  // capturing, a first host function that marks the runtime's thread for the
  // stream as this record's, so a callable run there (a replayed one too)
  // reports to the stream that runs it, as the reporting thread does.
  static host_callbacks& host_function_state_of(stream_handle s, const api& a) {
    host_callbacks* cb = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      if (!s->callbacks) {
        s->callbacks = std::make_unique<host_callbacks>();
        s->callbacks->host_func = true;
        s->callbacks->native = s->native;
        s->callbacks->functions = &a;
      }
      cb = s->callbacks.get();
    }
    {
      std::lock_guard<std::mutex> lock(cb->m);
      if (cb->marked) return *cb;
    }
    if (native_capturing(s)) return *cb;  // a mark captured into the model would mark the executing stream's thread wrongly
    s->dev->check(a.aclrtLaunchHostFunc(s->native, &mark_runtime_thread, s), "aclrtLaunchHostFunc");
    {
      std::lock_guard<std::mutex> lock(cb->m);
      cb->marked = true;
    }
    std::lock_guard<std::mutex> lock(s->m);
    if (s->callbacks.get() == cb) s->ready_callbacks.store(cb, std::memory_order_release);
    return *cb;
  }

  // The first host function of a stream, on the runtime's thread for it.
  static void mark_runtime_thread(void* stream) noexcept {
    auto* s = static_cast<stream_handle>(stream);
    host_callbacks* cb = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      cb = s->callbacks.get();
    }
    reporting_for() = cb;
    s->dev->enter();  // the skip check below asks ACL about the stream from this thread
    std::lock_guard<std::mutex> lock(cb->m);
    cb->runtime_thread = std::this_thread::get_id();
  }

  // Throws the failure of a host callable; `clear` ends the error state.
  static void check_host_calls(stream_handle s, bool clear) {
    host_callbacks* cb = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      cb = s->callbacks.get();
    }
    if (cb == nullptr) return;
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(cb->m);
      if (!cb->failed.load(std::memory_order_relaxed)) return;
      failure = cb->failure;
      if (clear) {
        cb->failed.store(false, std::memory_order_relaxed);
        cb->failure.clear();
      }
    }
    throw_error(keel::errc::task_failed, "keel::acl::stream (host callable)",
                "a host callable on stream #" + std::to_string(s->id) + " threw: " + failure);
  }

  // At the stream's destruction, after its work: a failure nobody saw goes to
  // the error handler; the reporting thread is unsubscribed and joined.
  static void stop_host_callbacks(stream_handle s, bool unsubscribe = true) noexcept {
    std::unique_ptr<host_callbacks> cb;
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->ready_callbacks.store(nullptr, std::memory_order_relaxed);
      cb = std::move(s->callbacks);
    }
    if (!cb) return;
    try {
      std::lock_guard<std::mutex> lock(cb->m);
      if (cb->failed.load(std::memory_order_relaxed)) {
        const std::string text = "a host callable threw and the stream was destroyed before a synchronize: " + cb->failure;
        report_error(make_error_code(keel::errc::task_failed), "keel::acl::stream (host callable)", text.c_str());
      }
    } catch (...) {
      report_current_exception("keel::acl::backend::destroy_stream");
    }
    cb->stop.store(true, std::memory_order_release);
    if (!cb->reporter.joinable()) return;  // aclrtLaunchHostFunc's runtime thread: nothing to unsubscribe
    const auto unsubscribe_call = entered(*s->dev).aclrtUnSubscribeReport.get();
    const status st = unsubscribe && unsubscribe_call != nullptr ? unsubscribe_call(cb->reporter_id, s->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtUnSubscribeReport", "the reporting thread stays subscribed");
    cb->reporter.join();
  }

  static memcpy_kind memcpy_kind_of(copy_kind kind) noexcept {
    switch (kind) {
      case copy_kind::host_to_host: return memcpy_kind::host_to_host;
      case copy_kind::host_to_device: return memcpy_kind::host_to_device;
      case copy_kind::device_to_host: return memcpy_kind::device_to_host;
      case copy_kind::device_to_device: return memcpy_kind::device_to_device;
    }
    return memcpy_kind::automatic;
  }

  // Whether the calling thread is the one running s's host callables.
  static bool on_own_reporting_thread(stream_handle s) noexcept {
    std::lock_guard<std::mutex> lock(s->m);
    if (!s->callbacks) return false;
    host_callbacks& cb = *s->callbacks;
    if (!cb.host_func) return cb.reporter.get_id() == std::this_thread::get_id();
    std::lock_guard<std::mutex> inner(cb.m);
    return cb.runtime_thread == std::this_thread::get_id();
  }

  // A host callable destroyed its own stream: waiting for the stream there
  // would wait for the callable itself. The destruction runs on a thread of
  // its own once the callable has returned (reported, as on the host backend).
  static void defer_destroy(stream_handle s) noexcept {
    device& dev = *s->dev;
    report_error(make_error_code(keel::errc::would_deadlock), "keel::acl::destroy_stream",
                 "a host callable destroyed its own stream: the destruction is deferred until the stream has run "
                 "the work already issued");
    try {
      std::lock_guard<std::mutex> lock(dev.deferred_m_);
      dev.deferred_destroys_.emplace_back([s] { destroy_stream(s); });
    } catch (...) {
      report_current_exception("keel::acl::destroy_stream");  // no thread: the stream stays alive, unowned
    }
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
