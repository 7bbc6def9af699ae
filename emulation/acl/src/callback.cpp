// SPDX-License-Identifier: Apache-2.0
// Host callbacks: aclrtSubscribeReport, aclrtLaunchCallback,
// aclrtProcessReport, aclrtUnSubscribeReport, and aclrtLaunchHostFunc with
// aclrtSubscribeHostFunc, aclrtProcessHostFunc, aclrtUnSubscribeHostFunc
// (CANN's stream-management callback protocol, 12_execution_control.md and
// 24_other_APIs.md; the rules the emulation adds are in ../README.md).
//
// aclrtLaunchCallback enqueues a host task on the stream (the host backend's
// launch_host). When the stream reaches it, the task hands (fn, userData) to
// the thread subscribed to the stream (aclrtSubscribeReport), which runs it
// inside its next aclrtProcessReport; with ACL_CALLBACK_BLOCK the stream waits
// until the callback has returned, with ACL_CALLBACK_NO_BLOCK it goes on.
// The subscription is looked up when the task runs, for the stream that runs
// it: a callback captured into a model runs, on every replay, on the thread
// subscribed to the stream executing the model (aclmdlRIExecuteAsync's
// stream; CANN binds a stream's callbacks to its subscribed thread,
// aclrtSubscribeReport, and a model's tasks run on the executing stream); the
// stream that captured it may be gone. If the executing stream has no
// subscribed thread then (or is unsubscribed before its thread took the
// callback), the callback is dropped and that stream enters its error state
// (a failed kernel, ACL_ERROR_RT_AICORE_EXCEPTION at the next synchronize).
// aclmdlRIExecute runs on a stream of its own, which no thread can subscribe
// to: there a callback goes to the stream that captured it. A stream in its
// error state (a task before the callback failed) still delivers it, as
// CANN's default ACL_CONTINUE_ON_FAILURE runs the tasks after a failed one.

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

namespace {

struct report_call {
  aclrtCallback fn = nullptr;
  void* user = nullptr;
  aclrtStream stream = nullptr;
  bool done = false;     // ran, or dropped by aclrtUnSubscribeReport
  bool dropped = false;
};

struct report_books {
  std::mutex m;
  std::condition_variable cv;  // a call posted, run or dropped; a subscription changed
  std::unordered_map<void*, std::uint64_t> subscriber;                       // stream -> thread id
  std::unordered_map<std::uint64_t, std::deque<std::shared_ptr<report_call>>> queue;  // thread id -> calls
};
report_books& reports() {
  static report_books r;
  return r;
}
// The same protocol for host functions: aclrtSubscribeHostFunc names the
// thread that runs a stream's aclrtLaunchHostFunc functions, inside its
// aclrtProcessHostFunc.
report_books& host_funcs() {
  static report_books r;
  return r;
}

std::uint64_t this_thread_id() noexcept { return static_cast<std::uint64_t>(::pthread_self()); }

}  // namespace

aclrtStream& worker_stream() noexcept {
  thread_local aclrtStream stream = nullptr;
  return stream;
}

namespace {

// On the stream's worker, when the stream reaches the callback task.
void post_callback(aclrtStream stream, aclrtCallback fn, void* user, bool block) {
  auto call = std::make_shared<report_call>();
  call->fn = fn;
  call->user = user;
  call->stream = stream;
  report_books& r = reports();
  std::unique_lock<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it == r.subscriber.end())
    throw_rule(errc::invalid_state, "aclrtLaunchCallback",
               "no thread is subscribed to the stream (aclrtSubscribeReport) when its callback is due; dropped");
  r.queue[it->second].push_back(call);
  r.cv.notify_all();
  if (!block) return;
  r.cv.wait(lock, [&] { return call->done; });
  if (call->dropped)
    throw_rule(errc::invalid_state, "aclrtLaunchCallback", "the stream was unsubscribed before its callback ran; dropped");
}

// On the stream's worker, when the stream reaches a host function: false if
// no thread is subscribed to the stream's host functions (the worker runs
// it then); else true once the subscribed thread ran it (the stream waits,
// as for every host function).
bool post_host_func(aclrtStream stream, aclrtHostFunc fn, void* args) {
  report_books& r = host_funcs();
  std::unique_lock<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it == r.subscriber.end()) return false;
  auto call = std::make_shared<report_call>();
  call->fn = fn;
  call->user = args;
  call->stream = stream;
  r.queue[it->second].push_back(call);
  r.cv.notify_all();
  r.cv.wait(lock, [&] { return call->done; });
  if (call->dropped)
    throw_rule(errc::invalid_state, "aclrtLaunchHostFunc",
               "the stream was unsubscribed (aclrtUnSubscribeHostFunc) before its host function ran; dropped");
  return true;
}

// The stream is unsubscribed (or destroyed): its calls not yet taken are dropped.
void drop_calls(report_books& r, std::uint64_t thread, aclrtStream stream) {
  auto q = r.queue.find(thread);
  if (q == r.queue.end()) return;
  auto& calls = q->second;
  for (auto& c : calls) {
    if (c->stream == stream) {
      c->done = true;
      c->dropped = true;
    }
  }
  calls.erase(std::remove_if(calls.begin(), calls.end(), [&](const auto& c) { return c->stream == stream; }),
              calls.end());
  if (calls.empty()) r.queue.erase(q);
}

}  // namespace

void forget_subscription(aclrtStream stream) {
  for (report_books* r : {&reports(), &host_funcs()}) {
    std::lock_guard<std::mutex> lock(r->m);
    const auto it = r->subscriber.find(stream);
    if (it == r->subscriber.end()) continue;
    drop_calls(*r, it->second, stream);
    r->subscriber.erase(it);
    r->cv.notify_all();
  }
}

namespace {

// aclrtSubscribeReport / aclrtSubscribeHostFunc: one thread per stream.
aclError subscribe(report_books& r, const char* api, std::uint64_t threadId, aclrtStream stream) {
  const aclError checked = guarded(api, call::other, [&] { stream_of(stream, api); });
  if (checked != ACL_SUCCESS) return checked;
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it != r.subscriber.end())  // one thread per stream keeps its callbacks in order
    return fail(ACL_ERROR_REPEAT_SUBSCRIBE, api,
                it->second == threadId ? "the thread is already subscribed to the stream"
                                       : "another thread is already subscribed to the stream");
  return guarded(api, call::other, [&] {
    r.subscriber.emplace(stream, threadId);
    r.cv.notify_all();
  });
}

// aclrtProcessReport / aclrtProcessHostFunc: runs the calling thread's next call.
aclError process(report_books& r, const char* api, std::int32_t timeout) {
  if (timeout == 0 || timeout < -1) return fail(ACL_ERROR_INVALID_PARAM, api, "timeout must be -1 or positive (ms)");
  const std::uint64_t me = this_thread_id();
  std::unique_lock<std::mutex> lock(r.m);
  auto subscribed = [&] {
    for (const auto& entry : r.subscriber)
      if (entry.second == me) return true;
    return false;
  };
  auto ready = [&] {
    const auto q = r.queue.find(me);
    return (q != r.queue.end() && !q->second.empty()) || !subscribed();
  };
  if (!subscribed()) return fail(ACL_ERROR_THREAD_NOT_SUBSCRIBE, api, "the calling thread is subscribed to no stream");
  if (timeout < 0)
    r.cv.wait(lock, ready);
  else if (!r.cv.wait_for(lock, std::chrono::milliseconds(timeout), ready))
    return fail(ACL_ERROR_WAIT_CALLBACK_TIMEOUT, api, "no callback within " + std::to_string(timeout) + " ms");
  const auto q = r.queue.find(me);
  if (q == r.queue.end() || q->second.empty())
    return fail(ACL_ERROR_THREAD_NOT_SUBSCRIBE, api, "the calling thread was unsubscribed while it waited");
  std::shared_ptr<report_call> call = std::move(q->second.front());
  q->second.pop_front();
  if (q->second.empty()) r.queue.erase(q);
  lock.unlock();
  call->fn(call->user);  // a C callback: it reports nothing back, and must not throw
  lock.lock();
  call->done = true;
  r.cv.notify_all();
  return ACL_SUCCESS;
}

// aclrtUnSubscribeReport / aclrtUnSubscribeHostFunc: the calls not yet taken are dropped.
aclError unsubscribe(report_books& r, const char* api, std::uint64_t threadId, aclrtStream stream) {
  const aclError checked = guarded(api, call::other, [&] { stream_of(stream, api); });
  if (checked != ACL_SUCCESS) return checked;
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it == r.subscriber.end() || it->second != threadId)
    return fail(ACL_ERROR_STREAM_NOT_SUBSCRIBE, api, "the thread is not subscribed to the stream");
  drop_calls(r, threadId, stream);
  r.subscriber.erase(it);
  r.cv.notify_all();
  return ACL_SUCCESS;
}

}  // namespace


}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtSubscribeReport(std::uint64_t threadId, aclrtStream stream) {
  return subscribe(reports(), "aclrtSubscribeReport", threadId, stream);
}

aclError aclrtLaunchCallback(aclrtCallback fn, void* userData, aclrtCallbackBlockType blockType, aclrtStream stream) {
  static constexpr const char* api = "aclrtLaunchCallback";
  const int block = raw(blockType);
  hb::stream_handle s = nullptr;
  const aclError checked = guarded(api, call::other, [&] {
    if (fn == nullptr) throw_rule(errc::null_parameter, api, "fn is null");
    if (block != ACL_CALLBACK_BLOCK && block != ACL_CALLBACK_NO_BLOCK)
      throw_rule(errc::invalid_parameter, api, "blockType must be ACL_CALLBACK_BLOCK or ACL_CALLBACK_NO_BLOCK");
    s = stream_of(stream, api);
  });
  if (checked != ACL_SUCCESS) return checked;
  {
    std::lock_guard<std::mutex> lock(reports().m);
    if (!reports().subscriber.count(stream))
      return fail(ACL_ERROR_STREAM_NOT_SUBSCRIBE, api, "no thread is subscribed to the stream (aclrtSubscribeReport)");
  }
  // Capture records the task like any host task; an update or an open task
  // group refuses it (only operator launches), as the host backend does.
  // The task is failure-aware: it runs on a stream in its error state too
  // (the host backend skips other work there), because CANN's default
  // failure mode (ACL_CONTINUE_ON_FAILURE, aclrtSetStreamFailureMode) runs
  // the tasks after a failed one and every aclrtLaunchCallback triggers one
  // execution of its callback: a callback never delivered would leak
  // whatever its userData owns. Only a replay that aclmdlRIAbort stopped
  // skips it (the model's, which owns its userData): an aborted model runs
  // none of its remaining tasks.
  return guarded(api, call::other, [&] {
    cann_rules::check_issue(stream);
    hb::launch_host(s, keel::host::detail::make_failure_aware([stream, fn, userData, block](bool healthy) {
      if (!healthy && keel::host::detail::running_aborted()) return;  // aclmdlRIAbort stopped the model's execution
      aclrtStream running = worker_stream();  // the executing stream on a replay
      if (running == nullptr) running = stream;
      if (!healthy && stops_on_failure(running)) return;  // ACL_STOP_ON_FAILURE: the stream stopped
      if (!healthy && being_aborted(running)) return;     // aclrtStreamAbort discards it
      post_callback(running, fn, userData, block == ACL_CALLBACK_BLOCK);
    }));
    cann_rules::note_task(stream);
  });
}

// aclrtLaunchHostFunc: the stream runs fn(args) when it reaches the task, on
// the thread subscribed to the stream's host functions
// (aclrtSubscribeHostFunc, inside its aclrtProcessHostFunc) or, with none,
// on the thread the runtime keeps for the stream (the emulation: the
// stream's worker); its later work waits for it. Captured into a model, it
// runs on every replay for the executing stream. Like a callback, it runs
// on a stream in its error state too, unless the stream's context stops on
// failure.
aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void* args) {
  static constexpr const char* api = "aclrtLaunchHostFunc";
  return guarded(api, call::other, [&] {
    if (fn == nullptr) throw_rule(errc::null_parameter, api, "fn is null");
    hb::stream_handle s = stream_of(stream, api);
    cann_rules::check_issue(stream);
    hb::launch_host(s, keel::host::detail::make_failure_aware([stream, fn, args](bool healthy) {
      if (!healthy && keel::host::detail::running_aborted()) return;  // aclmdlRIAbort stopped the model's execution
      aclrtStream running = worker_stream();
      if (running == nullptr) running = stream;
      if (!healthy && stops_on_failure(running)) return;  // ACL_STOP_ON_FAILURE
      if (!healthy && being_aborted(running)) return;     // aclrtStreamAbort discards it
      if (!post_host_func(running, fn, args)) fn(args);
    }));
    cann_rules::note_task(stream);
  });
}

aclError aclrtProcessReport(std::int32_t timeout) { return process(reports(), "aclrtProcessReport", timeout); }

aclError aclrtUnSubscribeReport(std::uint64_t threadId, aclrtStream stream) {
  return unsubscribe(reports(), "aclrtUnSubscribeReport", threadId, stream);
}

aclError aclrtSubscribeHostFunc(std::uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return subscribe(host_funcs(), "aclrtSubscribeHostFunc", hostFuncThreadId, exeStream);
}

aclError aclrtProcessHostFunc(std::int32_t timeout) { return process(host_funcs(), "aclrtProcessHostFunc", timeout); }

aclError aclrtUnSubscribeHostFunc(std::uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return unsubscribe(host_funcs(), "aclrtUnSubscribeHostFunc", hostFuncThreadId, exeStream);
}

}  // extern "C"
