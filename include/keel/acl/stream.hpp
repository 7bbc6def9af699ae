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
  KEEL_DECL static stream_handle create_stream(device_type& dev);
  // A stream ACL has just made (box->native): its id and its entry in the
  // device's registry; on failure the ACL stream is destroyed again.
  KEEL_DECL static stream_handle register_created(device_type& dev, std::unique_ptr<stream_box> box);

  KEEL_DECL static void destroy_stream(stream_handle s) noexcept;

  /**
   * Keeps keel's record of the stream (not the ACL stream) alive past
   * destroy_stream (see the host backend). Its owner holds one count, or
   * the device for a record it owns.
   */
  static void retain_stream(stream_handle s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
  KEEL_DECL static void release_stream(stream_handle s) noexcept;

  /** The aclrtStream under keel's record. */
  KEEL_DECL static acl::stream_handle to_native(stream_handle s) noexcept;
  /**
   * keel's record of @p native (stream_ref(dev, native), stream::from_native_handle):
   * the one the device has (a keel stream's, or one viewed before), or a new
   * one for a stream made elsewhere (another framework's current stream),
   * which the device owns until an owner takes it. An owner takes the ACL
   * stream: destroying the owner destroys it.
   */
  KEEL_DECL static stream_handle from_native(device_type& dev, acl::stream_handle native, adoption how,
                                   handle_tag<stream_handle>, const char* api);
  /** The owner gives the ACL stream up: the record (and its count) goes to the device, until forget_stream. */
  KEEL_DECL static acl::stream_handle release_native(stream_handle s) noexcept;


  static device_type& device_of(stream_handle s) noexcept { return *s->dev; }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  static bool is_adopted(stream_handle s) noexcept { return s->adopted; }

  KEEL_DECL static void synchronize(stream_handle s);

  /** aclrtSynchronizeStreamWithTimeout (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, errc::timeout, when it passes). */
  KEEL_DECL static void synchronize_for(stream_handle s, std::chrono::microseconds timeout);

  // A synchronize's status: 0 passed the work issued before it and cleared
  // ACL's error state (the caller cleared acl_work before the call, so work
  // issued during it stays counted); anything else (a timeout, a failure)
  // sets acl_work again.
  KEEL_DECL static void synchronized_with(stream_handle s, status st, const char* function);

  // The stream passed its work: what it used goes, released memory whose
  // streams passed the release goes back, a host callable's failure is reported.
  KEEL_DECL static void after_synchronize(stream_handle s);

  KEEL_DECL static bool query(stream_handle s);


  /** aclrtSynchronizeDevice, or aclrtSynchronizeDeviceWithTimeout. */
  KEEL_DECL static void synchronize_device(device_type& dev);
  KEEL_DECL static void synchronize_device_for(device_type& dev, std::chrono::microseconds timeout);

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
    if (captured && native_capturing(s, &call->model)) call->functions = &a;  // the model a failure aborts
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
  KEEL_DECL static void enqueue_host_call(stream_handle s, const api& a, void (*fn)(void*), void* user);

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

  KEEL_DECL static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src);

  /** aclrtMemsetAsync; the stream's keeper holds @p keep_dst until the stream passes the memset. */
  KEEL_DECL static void memset_async(stream_handle s, void* dst, int value, std::size_t bytes,
                                     std::shared_ptr<void> keep_dst);


  /** A blocking copy after the stream's earlier work (aclrtMemcpy alone is not ordered with streams). */
  KEEL_DECL static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind);

  /** ACL's view of a capture keel did not begin (its mode is not known). */
  KEEL_DECL static capture_info native_capture_status(stream_handle s) noexcept;

  // How long one aclrtProcessReport waits: also how long a stream's
  // destruction may wait for its reporting thread to notice.
  static constexpr std::int32_t report_timeout_ms = 100;

  // The host callbacks of the stream whose reporting thread this is (null on
  // any other thread): set once by the reporting thread itself.
  KEEL_DECL static host_callbacks*& reporting_for() noexcept;

  // The aclrtCallback of every launch_host: runs the callable unless the
  // stream whose reporting thread runs it (the launching stream, or the
  // stream executing the model that captured it) is in its error state, and
  // records what it throws there. On a thread keel did not start (someone
  // else subscribed to the stream), a failure goes to keel's error handler.
  KEEL_DECL static void run_host_call(void* user) noexcept;
  // The runner of a callable that travelled in userData (travels_inline).
  template <class D, bool AskRuntime>
  static void run_inline_host_call(void* user) noexcept {
    (void)run_reported(AskRuntime, [&user] {
      alignas(D) unsigned char bytes[sizeof(D)];
      std::memcpy(bytes, &user, sizeof(D));
      (*std::launder(reinterpret_cast<D*>(bytes)))();
    });
  }
  // What every runner does around the callable: the skip (keel's error
  // state, or, when @p ask_runtime, ACL's: a bounded wait or an ACL task
  // failed the stream) and recording what it throws. True if it threw.
  template <class Run>
  static bool run_reported(bool ask_runtime, Run&& run) noexcept {
    host_callbacks* callbacks = reporting_for();
    if (callbacks != nullptr) {
      if (callbacks->failed.load(std::memory_order_acquire) || callbacks->dropped.load(std::memory_order_acquire))
        return false;
      if (ask_runtime) {
        const auto query = callbacks->functions->aclrtStreamQuery.get();
        acl::stream_status st = acl::stream_status::not_ready;
        if (query != nullptr && query(callbacks->native, &st) != 0) return false;
      }
    }
    std::string failure;
    try {
      run();
    } catch (const std::exception& e) {
      failure = e.what();
      if (failure.empty()) failure = "a host callable threw an exception with no text";
    } catch (...) {
      failure = "a host callable threw a non-standard exception";
    }
    if (failure.empty()) return false;
    if (callbacks != nullptr) {
      std::lock_guard<std::mutex> lock(callbacks->m);
      if (!callbacks->failed.load(std::memory_order_relaxed)) callbacks->failure = std::move(failure);
      callbacks->failed.store(true, std::memory_order_release);
    } else {
      report_error(make_error_code(keel::errc::task_failed), "keel::acl host callable",
                   ("a host callable threw on a thread keel does not report for: " + failure).c_str());
    }
    return true;
  }

  // The stream's callbacks, starting its reporting thread on first use. Its
  // ACL calls need the device on the calling thread (entered), and the
  // reporting thread makes the device current on itself (device::enter) before
  // aclrtProcessReport, as every thread that calls the runtime must.
  KEEL_DECL static host_callbacks& host_callbacks_of(stream_handle s);

  // The host-function path (aclrtLaunchHostFunc, CANN's callback without a
  // subscribed thread): the stream's record and, once the stream is not
  // capturing, a first host function that marks the runtime's thread for the
  // stream as this record's, so a callable run there (a replayed one too)
  // reports to the stream that runs it, as the reporting thread does.
  KEEL_DECL static host_callbacks& host_function_state_of(stream_handle s, const api& a);

  // The first host function of a stream, on the runtime's thread for it.
  KEEL_DECL static void mark_runtime_thread(void* stream) noexcept;

  // Throws the failure of a host callable; `clear` ends the error state.
  KEEL_DECL static void check_host_calls(stream_handle s, bool clear);
  // The text of a host callable's failure, empty if none; `clear` ends the error state.
  KEEL_DECL static std::string host_call_failure(stream_handle s, bool clear);

  // At the stream's destruction, after its work: a failure nobody saw goes to
  // the error handler; the reporting thread is unsubscribed and joined.
  KEEL_DECL static void stop_host_callbacks(stream_handle s, bool unsubscribe = true) noexcept;

  KEEL_DECL static memcpy_kind memcpy_kind_of(copy_kind kind) noexcept;

  // Whether the calling thread is the one running s's host callables.
  KEEL_DECL static bool on_own_reporting_thread(stream_handle s) noexcept;

  // A host callable destroyed its own stream: waiting for the stream there
  // would wait for the callable itself. The destruction runs on a thread of
  // its own once the callable has returned (reported, as on the host backend).
  KEEL_DECL static void defer_destroy(stream_handle s) noexcept;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/stream.ipp"
#endif
