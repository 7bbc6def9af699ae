// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/stream.hpp (stream_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto stream_calls::create_stream(device_type& dev) -> stream_handle {
  auto box = std::make_unique<stream_box>();
  const api& a = entered(dev);
  dev.check(a.aclrtCreateStream(&box->native), "aclrtCreateStream");
  return register_created(dev, std::move(box));
}

KEEL_DECL auto stream_calls::register_created(device_type& dev, std::unique_ptr<stream_box> box) -> stream_handle {
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

KEEL_DECL void stream_calls::destroy_stream(stream_handle s) noexcept {
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

KEEL_DECL void stream_calls::release_stream(stream_handle s) noexcept {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

KEEL_DECL auto stream_calls::to_native(stream_handle s) noexcept -> acl::stream_handle {
  mark(s->foreign);  // another library may begin a capture on it now
  return s->native;
}

KEEL_DECL auto stream_calls::from_native(device_type& dev, acl::stream_handle native, adoption how,
                                   handle_tag<stream_handle>, const char* api) -> stream_handle {
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

KEEL_DECL auto stream_calls::release_native(stream_handle s) noexcept -> acl::stream_handle {
  s->dev->streams_.give_to_device(s);
  mark(s->foreign);
  return s->native;
}

KEEL_DECL void stream_calls::synchronize(stream_handle s) {
  const api& a = entered(*s->dev);
  s->acl_work.store(false, std::memory_order_relaxed);  // before the call: work issued during it stays counted
  synchronized_with(s, a.aclrtSynchronizeStream(s->native), "aclrtSynchronizeStream");
}

KEEL_DECL void stream_calls::synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
  const api& a = entered(*s->dev);
  s->acl_work.store(false, std::memory_order_relaxed);
  synchronized_with(s, a.aclrtSynchronizeStreamWithTimeout(s->native, timeout_ms(timeout)),
                    "aclrtSynchronizeStreamWithTimeout");
}

KEEL_DECL void stream_calls::synchronized_with(stream_handle s, status st, const char* function) {
  if (st != 0) {
    mark(s->acl_work);
    try {
      s->dev->check(st, function);
    } catch (const keel::error& acl_failure) {
      // A timeout passed nothing: the error state stays. A failure the
      // synchronize passed ends it whole: a host callable that threw as well
      // (whose failure aborted its model, so ACL's failure may be its
      // consequence) is reported with it, the callable's first, and cleared.
      if (acl_failure.code() == keel::errc::timeout) throw;
      const std::string host_failure = host_call_failure(s, true);
      if (host_failure.empty()) throw;
      throw_error(keel::errc::task_failed, "keel::acl::stream (host callable)",
                  "a host callable on stream #" + std::to_string(s->id) + " threw: " + host_failure +
                      "; and the stream's ACL work failed: " + acl_failure.what());
    }
  }
  after_synchronize(s);
}

KEEL_DECL void stream_calls::after_synchronize(stream_handle s) {
  release_keeps(s);
  collect_releases(*s->dev);
  check_host_calls(s, true);
}

KEEL_DECL auto stream_calls::query(stream_handle s) -> bool {
  stream_status st = stream_status::not_ready;
  s->dev->check(entered(*s->dev).aclrtStreamQuery(s->native, &st), "aclrtStreamQuery");
  check_host_calls(s, false);
  return st == stream_status::complete;
}

KEEL_DECL void stream_calls::synchronize_device(device_type& dev) {
  dev.check(entered(dev).aclrtSynchronizeDevice(), "aclrtSynchronizeDevice");
  collect_releases(dev);
}

KEEL_DECL void stream_calls::synchronize_device_for(device_type& dev, std::chrono::microseconds timeout) {
  dev.check(entered(dev).aclrtSynchronizeDeviceWithTimeout(timeout_ms(timeout)), "aclrtSynchronizeDeviceWithTimeout");
  collect_releases(dev);
}

KEEL_DECL void stream_calls::enqueue_host_call(stream_handle s, const api& a, void (*fn)(void*), void* user) {
  if (a.aclrtLaunchHostFunc) {
    s->dev->check(a.aclrtLaunchHostFunc(s->native, fn, user), "aclrtLaunchHostFunc");
  } else {
    s->dev->check(a.aclrtLaunchCallback(fn, user, callback_block::block, s->native), "aclrtLaunchCallback");
  }
}

KEEL_DECL void stream_calls::copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
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

KEEL_DECL void stream_calls::memset_async(stream_handle s, void* dst, int value, std::size_t bytes,
                                          std::shared_ptr<void> keep_dst) {
  const stream_handle keeper = keeper_of(s);
  if (keep_dst) {
    std::lock_guard<std::mutex> lock(keeper->m);
    keeper->keep.reserve(keeper->keep.size() + 1);
  }
  if (bytes != 0)
    s->dev->check(entered(*s->dev).aclrtMemsetAsync(dst, bytes, static_cast<std::int32_t>(value), bytes, s->native),
                  "aclrtMemsetAsync");
  mark(s->acl_work);
  if (keep_dst) {
    std::lock_guard<std::mutex> lock(keeper->m);
    keeper->keep.push_back(std::move(keep_dst));
  }
}

KEEL_DECL void stream_calls::copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
  synchronize(s);
  if (bytes != 0)
    s->dev->check(entered(*s->dev).aclrtMemcpy(dst, bytes, src, bytes, memcpy_kind_of(kind)), "aclrtMemcpy");
}

KEEL_DECL auto stream_calls::native_capture_status(stream_handle s) noexcept -> capture_info {
  capture_info info;
  acl::model_handle model = nullptr;
  if (native_capturing(s, &model)) {
    info.state = capture_state::active;
    info.capture_id = reinterpret_cast<std::uintptr_t>(model);
  }
  return info;
}

KEEL_DECL auto stream_calls::reporting_for() noexcept -> host_callbacks*& {
  thread_local host_callbacks* callbacks = nullptr;
  return callbacks;
}

KEEL_DECL void stream_calls::run_host_call(void* user) noexcept {
  auto* call = static_cast<host_call*>(user);
  const bool threw = run_reported(call->ask_runtime, [call] { call->run(); });
  if (threw && call->model != nullptr) {
    // The replay it belongs to stops before its next task (or fails at its
    // end): the rest of the model's work is skipped, a loop around it ends.
    const auto abort = call->functions->aclmdlRIAbort.get();
    const status st = abort != nullptr ? abort(call->model) : 0;
    if (st != 0)
      report_error(make_status_code(st), "aclmdlRIAbort",
                   "a captured host callable threw and its model's execution could not be stopped");
  }
  if (call->once) delete call;
}

KEEL_DECL auto stream_calls::host_callbacks_of(stream_handle s) -> host_callbacks& {
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

KEEL_DECL auto stream_calls::host_function_state_of(stream_handle s, const api& a) -> host_callbacks& {
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

KEEL_DECL void stream_calls::mark_runtime_thread(void* stream) noexcept {
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

KEEL_DECL auto stream_calls::host_call_failure(stream_handle s, bool clear) -> std::string {
  host_callbacks* cb = nullptr;
  {
    std::lock_guard<std::mutex> lock(s->m);
    cb = s->callbacks.get();
  }
  if (cb == nullptr) return {};
  std::lock_guard<std::mutex> lock(cb->m);
  if (!cb->failed.load(std::memory_order_relaxed)) return {};
  std::string failure = cb->failure;
  if (clear) {
    cb->failed.store(false, std::memory_order_relaxed);
    cb->failure.clear();
  }
  return failure;
}

KEEL_DECL void stream_calls::check_host_calls(stream_handle s, bool clear) {
  const std::string failure = host_call_failure(s, clear);
  if (failure.empty()) return;
  throw_error(keel::errc::task_failed, "keel::acl::stream (host callable)",
              "a host callable on stream #" + std::to_string(s->id) + " threw: " + failure);
}

KEEL_DECL void stream_calls::stop_host_callbacks(stream_handle s, bool unsubscribe) noexcept {
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

KEEL_DECL auto stream_calls::memcpy_kind_of(copy_kind kind) noexcept -> memcpy_kind {
  switch (kind) {
    case copy_kind::host_to_host: return memcpy_kind::host_to_host;
    case copy_kind::host_to_device: return memcpy_kind::host_to_device;
    case copy_kind::device_to_host: return memcpy_kind::device_to_host;
    case copy_kind::device_to_device: return memcpy_kind::device_to_device;
  }
  return memcpy_kind::automatic;
}

KEEL_DECL auto stream_calls::on_own_reporting_thread(stream_handle s) noexcept -> bool {
  std::lock_guard<std::mutex> lock(s->m);
  if (!s->callbacks) return false;
  host_callbacks& cb = *s->callbacks;
  if (!cb.host_func) return cb.reporter.get_id() == std::this_thread::get_id();
  std::lock_guard<std::mutex> inner(cb.m);
  return cb.runtime_thread == std::this_thread::get_id();
}

KEEL_DECL void stream_calls::defer_destroy(stream_handle s) noexcept {
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
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
