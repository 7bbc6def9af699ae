// SPDX-License-Identifier: Apache-2.0
// keel's host emulation of the ACL subset declared in ../include: the aclrt*
// runtime and aclmdlRI* capture calls on keel's host backend, the aclnn
// objects and the five two-phase operators on keel's reference operators.
//
// Every rule the host backend checks comes back as the ACL status CANN
// documents for it (table in code_for()), with the host backend's own
// explanation as the calling thread's aclGetRecentErrMsg() text. Handles are
// checked against the live sets below, so a destroyed or foreign handle is
// ACL_ERROR_RT_INVALID_HANDLE (107017) instead of undefined behaviour.
//
// This is the library's only translation unit: it alone compiles the
// Highway kernels (for the static target: one compilation, no dispatch table).
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_adaptive_avg_pool2d.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_addcmul.h"
#include "aclnnop/aclnn_baddbmm.h"
#include "aclnnop/aclnn_cast.h"
#include "allocator.hpp"
#include "keel/host/host.hpp"
#include "keel/ops/kernels/static_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

struct aclTensor {
  keel::ops::tensor view;
  aclDataType type;
  aclFormat format;
  std::int64_t offset;
  std::vector<std::int64_t> dims, strides, storage;
};
struct aclScalar {
  keel::ops::scalar value;
};
struct aclIntArray {
  std::vector<std::int64_t> values;
};
struct aclOpExecutor {
  keel::ops::executor ex;
  bool repeatable = false;
};

namespace {

using hb = keel::host::backend;
using keel::errc;

// The emulated runtime's state is never destroyed: its clients may still call
// it from their own static destructors at exit (a keel::acl::device held in a
// function-local static frees what is still released in stream order), and
// the order in which statics of different libraries are destroyed is not
// theirs to choose. Reachable to the end, so no leak checker reports it.
keel::host::device& dev() {
  static keel::host::device* const device = new keel::host::device;
  return *device;
}

// ---- errors -------------------------------------------------------------

// Per-thread state (aclGetRecentErrMsg's text, aclrtSetDevice's binding)
// lives under a pthread key rather than in C++ thread_local: a dlopen-ed
// library's dynamic TLS is what current sanitizers' leak checker mis-reads.
struct thread_state {
  std::string recent_error;
  bool has_recent_error = false;
  std::int32_t current_device = -1;
  aclError last_runtime_error = ACL_SUCCESS;  // aclrtPeekAtLastError / aclrtGetLastError
  int capture_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;  // aclmdlRICaptureThreadExchangeMode
};
pthread_key_t make_key() {
  pthread_key_t key;
  if (pthread_key_create(&key, [](void* p) { delete static_cast<thread_state*>(p); }) != 0) std::abort();
  return key;
}
thread_state& this_thread_state() {
  static const pthread_key_t key = make_key();
  auto* state = static_cast<thread_state*>(pthread_getspecific(key));
  if (state == nullptr) {
    state = new thread_state;
    pthread_setspecific(key, state);
  }
  return *state;
}

// A failure: the thread's aclGetRecentErrMsg text, and, for a runtime
// status (not an aclnn one, 1x1xxx-5x1xxx), the thread's last runtime error.
aclError fail(aclError code, const char* function, const std::string& text) {
  thread_state& t = this_thread_state();
  t.recent_error = std::string(function) + ": " + text;
  t.has_recent_error = true;
  if ((code / 1000) % 100 != 61) t.last_runtime_error = code;
  return code;
}

// The ACL status for a rule the host backend reported. `call` refines the
// general choice where CANN documents a more specific code for that call.
// What kind of call failed: some keel conditions have a call-specific status
// (a timeout is 507046 for a stream or device synchronize, 507047 for an
// event's, 107019 for a wait).
enum class call { other, capture_begin, capture_end, group, update_end, create_event, stream_sync, event_sync, nn };

aclError code_for(errc e, call c) {
  if (c == call::nn) {
    switch (e) {
      case errc::null_parameter: return ACLNN_ERR_PARAM_NULLPTR;    // 161001
      case errc::invalid_parameter:
      case errc::invalid_state: return ACLNN_ERR_PARAM_INVALID;     // 161002
      default: return ACLNN_ERR_RUNTIME_ERROR;                      // 361001: a runtime call of the op failed
    }
  }
  switch (e) {
    case errc::null_parameter:
    case errc::invalid_parameter: return ACL_ERROR_INVALID_PARAM;  // 100000
    case errc::capture_violation:
      switch (c) {
        case call::capture_begin: return ACL_ERROR_RT_STREAM_CAPTURED;                // 107027
        case call::capture_end: return ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED;       // 507903
        default: return ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;                        // 107030
      }
    case errc::update_violation:
      return c == call::update_end ? ACL_ERROR_RT_MODEL_UPDATE_FAILED                 // 107040
                                   : ACL_ERROR_STREAM_TASK_GROUP_STATUS;              // 107033
    case errc::invalid_state:
      switch (c) {
        case call::capture_end: return ACL_ERROR_RT_STREAM_NOT_CAPTURED;              // 107029
        case call::group:
        case call::update_end: return ACL_ERROR_STREAM_TASK_GROUP_STATUS;             // 107033
        default: return ACL_ERROR_RT_PARAM_INVALID;                                   // 107000
      }
    case errc::resource_limit:
      switch (c) {
        case call::capture_begin: return ACL_ERROR_RT_NO_MODEL_RESOURCE;              // 207010
        case call::create_event: return ACL_ERROR_RT_NO_EVENT_RESOURCE;               // 207007
        default: return ACL_ERROR_RT_OVER_LIMIT;                                      // 207012
      }
    case errc::invalid_handle: return ACL_ERROR_RT_INVALID_HANDLE;                   // 107017
    case errc::task_failed: return ACL_ERROR_RT_AICORE_EXCEPTION;                    // 507015: a kernel failed
    case errc::out_of_memory: return ACL_ERROR_RT_MEMORY_ALLOCATION;                 // 207001
    case errc::not_supported: return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;               // 207000
    case errc::timeout:
      return c == call::stream_sync  ? ACL_ERROR_RT_STREAM_SYNC_TIMEOUT   // 507046
             : c == call::event_sync ? ACL_ERROR_RT_EVENT_SYNC_TIMEOUT    // 507047
                                     : ACL_ERROR_RT_WAIT_TIMEOUT;         // 107019
    case errc::would_deadlock: return ACL_ERROR_RT_PARAM_INVALID;                    // 107000
    default: return ACL_ERROR_RT_INTERNAL_ERROR;                                     // 507000
  }
}

// CANN's rule: aclrtSetDevice "specifies the Device used for computation in
// the current thread" and implicitly creates its default context (CANN API
// reference, aclrtSetDevice and aclrtCreateContext pages, hiascend.com
// .../runtimeapi/aclcppdevg_03_0029, _0058); a runtime call on a thread with
// no current context fails with ACL_ERROR_RT_CONTEXT_NULL (107002, "context
// is null", rt_error_codes.h).
bool has_context() noexcept { return this_thread_state().current_device >= 0; }
aclError no_context(const char* function) {
  return fail(ACL_ERROR_RT_CONTEXT_NULL, function,
              "no current context on this thread: call aclrtSetDevice on every thread that calls the runtime");
}

// The CANN symbol of a status code_for() can give a runtime rule.
const char* status_symbol(aclError code) {
  switch (code) {
    case ACL_ERROR_INVALID_PARAM: return "ACL_ERROR_INVALID_PARAM";
    case ACL_ERROR_RT_PARAM_INVALID: return "ACL_ERROR_RT_PARAM_INVALID";
    case ACL_ERROR_RT_STREAM_CAPTURED: return "ACL_ERROR_RT_STREAM_CAPTURED";
    case ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED: return "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED";
    case ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT: return "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT";
    case ACL_ERROR_RT_MODEL_UPDATE_FAILED: return "ACL_ERROR_RT_MODEL_UPDATE_FAILED";
    case ACL_ERROR_STREAM_TASK_GROUP_STATUS: return "ACL_ERROR_STREAM_TASK_GROUP_STATUS";
    case ACL_ERROR_RT_STREAM_NOT_CAPTURED: return "ACL_ERROR_RT_STREAM_NOT_CAPTURED";
    case ACL_ERROR_RT_NO_MODEL_RESOURCE: return "ACL_ERROR_RT_NO_MODEL_RESOURCE";
    case ACL_ERROR_RT_NO_EVENT_RESOURCE: return "ACL_ERROR_RT_NO_EVENT_RESOURCE";
    case ACL_ERROR_RT_OVER_LIMIT: return "ACL_ERROR_RT_OVER_LIMIT";
    case ACL_ERROR_RT_INVALID_HANDLE: return "ACL_ERROR_RT_INVALID_HANDLE";
    case ACL_ERROR_RT_AICORE_EXCEPTION: return "ACL_ERROR_RT_AICORE_EXCEPTION";
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case ACL_ERROR_RT_FEATURE_NOT_SUPPORT: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case ACL_ERROR_RT_WAIT_TIMEOUT: return "ACL_ERROR_RT_WAIT_TIMEOUT";
    case ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: return "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT";
    case ACL_ERROR_RT_EVENT_SYNC_TIMEOUT: return "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT";
    default: return "ACL_ERROR_RT_INTERNAL_ERROR";
  }
}

// Runs body, turning what it throws into the ACL status and the thread's
// message. Runtime calls (not the aclnn object calls) first need the thread's context.
template <class F>
aclError guarded(const char* function, call c, F&& body) noexcept {
  if (c != call::nn && !has_context()) return no_context(function);
  try {
    body();
    return ACL_SUCCESS;
  } catch (const keel::error& e) {
    const bool ours = e.code().category() == keel::keel_category();
    const aclError code = ours ? code_for(static_cast<errc>(e.code().value()), c)
                               : (c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR);
    if (c == call::nn && code == ACLNN_ERR_RUNTIME_ERROR) {
      // The operator's call into the runtime failed: the runtime sets the
      // thread's last error (and its text) as for a direct call, and the
      // operator reports 361001 over it.
      const aclError runtime = code_for(static_cast<errc>(e.code().value()), call::other);
      fail(runtime, function, std::string("the runtime failed with ") + status_symbol(runtime) + " (" +
                                  std::to_string(runtime) + "): " + e.what());
      return code;
    }
    return fail(code, function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_BAD_ALLOC, function, "out of host memory");
  } catch (const std::exception& e) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR, function, e.what());
  } catch (...) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR, function, "unknown exception");
  }
}

// ---- live handles -------------------------------------------------------

struct model_box {
  hb::model_handle model = nullptr;  // null while its capture is in progress
  std::vector<hb::group_handle> groups;
};

struct books {
  std::mutex m;
  std::unordered_set<void*> streams, events, groups;
  std::unordered_set<model_box*> models;
  std::unordered_map<hb::stream_handle, model_box*> capturing;  // origin stream → its model-to-be
  std::unordered_map<void*, std::size_t> device_memory, host_memory;
  bool initialized = false;
};
books& book() {
  static books* const b = new books;  // never destroyed, as dev()
  return *b;
}

[[noreturn]] void throw_rule(errc e, const char* function, std::string text) {
  throw keel::error(e, function, std::move(text));
}

hb::stream_handle stream_of(aclrtStream s, const char* function) {
  if (s == nullptr) throw_rule(errc::null_parameter, function, "stream is null (the emulation has no default stream)");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().streams.count(s)) throw_rule(errc::invalid_handle, function, "stream is not a live aclrtStream");
  return static_cast<hb::stream_handle>(s);
}
hb::event_handle event_of(aclrtEvent e, const char* function) {
  if (e == nullptr) throw_rule(errc::null_parameter, function, "event is null");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().events.count(e)) throw_rule(errc::invalid_handle, function, "event is not a live aclrtEvent");
  return static_cast<hb::event_handle>(e);
}
model_box* model_of(aclmdlRI m, const char* function) {
  if (m == nullptr) throw_rule(errc::null_parameter, function, "modelRI is null");
  std::lock_guard<std::mutex> lock(book().m);
  auto* box = static_cast<model_box*>(m);
  if (!book().models.count(box)) throw_rule(errc::invalid_handle, function, "modelRI is not a live model run instance");
  if (box->model == nullptr) throw_rule(errc::invalid_state, function, "the model's capture has not ended");
  return box;
}
template <class T>
void require(const T* p, const char* function, const char* name) {
  if (p == nullptr) throw_rule(errc::null_parameter, function, std::string(name) + " is null");
}

// A C caller may pass any int where CANN takes an enum; C++ may not load an
// out-of-range value as the enum type, so the emulation reads the bits.
template <class Enum>
int raw(const Enum& value) noexcept {
  int bits = 0;
  std::memcpy(&bits, &value, sizeof bits < sizeof value ? sizeof bits : sizeof value);
  return bits;
}

keel::capture_mode mode_of(const aclmdlRICaptureMode& mode_arg, const char* function) {
  const int mode = raw(mode_arg);
  switch (mode) {
    case ACL_MODEL_RI_CAPTURE_MODE_GLOBAL: return keel::capture_mode::global;
    case ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL: return keel::capture_mode::thread_local_;
    case ACL_MODEL_RI_CAPTURE_MODE_RELAXED: return keel::capture_mode::relaxed;
  }
  throw_rule(errc::invalid_parameter, function, "unknown capture mode " + std::to_string(mode));
}

keel::copy_kind copy_kind_of(const aclrtMemcpyKind& kind_arg, const char* function) {
  const int kind = raw(kind_arg);
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return keel::copy_kind::host_to_host;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: return keel::copy_kind::host_to_device;
    case ACL_MEMCPY_DEVICE_TO_HOST: return keel::copy_kind::device_to_host;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_DEFAULT: return keel::copy_kind::device_to_device;  // one address space: direction is moot
  }
  throw_rule(errc::invalid_parameter, function, "unknown memcpy kind " + std::to_string(kind));
}

// A CANN timeout (milliseconds, -1 forever) as keel's wait budget; false for
// -1. Other negative values are invalid.
bool bounded(std::int32_t timeout, const char* function, std::chrono::microseconds& budget) {
  if (timeout < -1) throw_rule(errc::invalid_parameter, function, "timeout must be -1 (forever) or non-negative ms");
  if (timeout == -1) return false;
  budget = std::chrono::milliseconds(timeout);
  return true;
}

// The capture-mode rule for a call CANN lists as unsafe during capture
// (aclrtMemcpy, aclrtMemset, ...), with the calling thread's own mode
// (aclmdlRICaptureThreadExchangeMode, 15_model_running_instance_management.md):
// RELAXED: never refused; THREAD_LOCAL: refused only by a capture this thread
// began in a strict mode; GLOBAL (every thread's initial mode): also refused
// by another thread's GLOBAL capture. A RELAXED capture refuses nothing.
void check_unsafe_call(const char* api, const char* what) {
  const int mode = this_thread_state().capture_mode;
  if (mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) return;
  if (mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)
    return keel::host::detail::check_unsafe_device(dev().state(), api, what);
  keel::host::detail::device_state& d = dev().state();
  if (d.strict_captures.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(d.capture_mutex);
  for (const keel::host::detail::capture_session* c : d.captures)
    if (c->mode != keel::capture_mode::relaxed && c->thread == std::this_thread::get_id())
      throw_rule(errc::capture_violation, api,
                 std::string(what) + " is unsafe during capture: this thread began " +
                     keel::host::detail::describe_capture(*c, *c->origin) +
                     "; its capture mode (ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL) refuses it from this thread");
}

void* allocate(std::unordered_map<void*, std::size_t>& where, std::size_t size, const char* function) {
  if (size == 0) throw_rule(errc::invalid_parameter, function, "size is 0");
  // Larger than any object can be (the aligned operator new would wrap while
  // rounding): the device has no such memory.
  if (size > static_cast<std::size_t>(PTRDIFF_MAX))
    throw_rule(errc::out_of_memory, function, "size " + std::to_string(size) + " is larger than any memory can be");
  void* p = ::operator new(size, std::align_val_t{64});
  std::lock_guard<std::mutex> lock(book().m);
  try {
    where.emplace(p, size);
  } catch (...) {
    ::operator delete(p, std::align_val_t{64});
    throw;
  }
  return p;
}
void release(std::unordered_map<void*, std::size_t>& where, void* p, const char* function) {
  if (p == nullptr) throw_rule(errc::null_parameter, function, "pointer is null");
  {
    std::lock_guard<std::mutex> lock(book().m);
    if (!where.erase(p)) throw_rule(errc::invalid_parameter, function, "pointer was not allocated by this call's partner");
  }
  ::operator delete(p, std::align_val_t{64});
}

// ---- host callbacks ---------------------------------------------------------
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
// to: there a callback goes to the stream that captured it.

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

std::uint64_t this_thread_id() noexcept { return static_cast<std::uint64_t>(::pthread_self()); }

// On a stream's worker thread: the aclrtStream it runs (set by the stream's
// first task, aclrtCreateStream); null on any other thread.
aclrtStream& worker_stream() noexcept {
  thread_local aclrtStream stream = nullptr;
  return stream;
}

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

// The stream is unsubscribed (or destroyed): its calls not yet taken are dropped.
void drop_calls(std::uint64_t thread, aclrtStream stream) {
  report_books& r = reports();
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

void forget_subscription(aclrtStream stream) {
  report_books& r = reports();
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it == r.subscriber.end()) return;
  drop_calls(it->second, stream);
  r.subscriber.erase(it);
  r.cv.notify_all();
}

}  // namespace

extern "C" {

// ---- initialization and errors -----------------------------------------

aclError aclInit(const char*) {
  std::lock_guard<std::mutex> lock(book().m);
  if (book().initialized) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "ACL is already initialized");
  book().initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().initialized) return fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "ACL is not initialized");
  book().initialized = false;
  return ACL_SUCCESS;
}

const char* aclGetRecentErrMsg(void) {
  const thread_state& t = this_thread_state();
  return t.has_recent_error ? t.recent_error.c_str() : nullptr;
}

// The thread's last runtime error; Get clears it (13_exception_handling.md).
// No context is needed: the code belongs to the thread.
aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
  if (raw(level) != ACL_RT_THREAD_LEVEL) return ACL_ERROR_INVALID_PARAM;
  return this_thread_state().last_runtime_error;
}
aclError aclrtGetLastError(aclrtLastErrLevel level) {
  if (raw(level) != ACL_RT_THREAD_LEVEL) return ACL_ERROR_INVALID_PARAM;
  thread_state& t = this_thread_state();
  const aclError last = t.last_runtime_error;
  t.last_runtime_error = ACL_SUCCESS;
  return last;
}

// ---- devices --------------------------------------------------------------

aclError aclrtSetDevice(std::int32_t deviceId) {
  if (deviceId != 0)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice", "the emulation has one device, id 0");
  this_thread_state().current_device = 0;
  return ACL_SUCCESS;
}
aclError aclrtResetDevice(std::int32_t deviceId) {
  if (deviceId != 0)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice", "the emulation has one device, id 0");
  this_thread_state().current_device = -1;
  return ACL_SUCCESS;
}
aclError aclrtGetDevice(std::int32_t* deviceId) {
  if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId is null");
  const std::int32_t current = this_thread_state().current_device;
  if (current < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice", "no device set on this thread");
  *deviceId = current;
  return ACL_SUCCESS;
}
aclError aclrtGetDeviceCount(std::uint32_t* count) {
  if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count is null");
  *count = 1;
  return ACL_SUCCESS;
}
aclError aclrtSynchronizeDeviceWithTimeout(std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeDeviceWithTimeout";
  return guarded(api, call::stream_sync, [&] {
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::synchronize_device_for(dev(), budget);
    } else {
      hb::synchronize_device(dev());
    }
  });
}
aclError aclrtSynchronizeDevice(void) {
  return guarded("aclrtSynchronizeDevice", call::other, [] { hb::synchronize_device(dev()); });
}

// ---- streams --------------------------------------------------------------

aclError aclrtCreateStream(aclrtStream* stream) {
  return guarded("aclrtCreateStream", call::other, [&] {
    require(stream, "aclrtCreateStream", "stream");
    hb::stream_handle s = hb::create_stream(dev());
    try {
      // The stream's worker (one thread for the stream's life) learns which
      // stream it runs: a replayed callback goes to the executing stream.
      hb::launch_host(s, [s] { worker_stream() = s; });
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.insert(s);
    } catch (...) {
      hb::destroy_stream(s);
      throw;
    }
    *stream = s;
  });
}
aclError aclrtCreateStreamWithConfig(aclrtStream* stream, std::uint32_t, std::uint32_t) {
  return aclrtCreateStream(stream);  // priority and flags tune hardware queues; a host stream has none
}

namespace {

aclError destroy_stream(aclrtStream stream, const char* function) {
  return guarded(function, call::other, [&] {
    hb::stream_handle s = stream_of(stream, function);
    model_box* orphan = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.erase(stream);
      auto it = book().capturing.find(s);
      if (it != book().capturing.end()) {
        orphan = it->second;
        book().models.erase(orphan);
        for (auto g : orphan->groups) book().groups.erase(g);
        book().capturing.erase(it);
      }
    }
    hb::destroy_stream(s);  // discards a capture in progress (reported through keel's error handler)
    forget_subscription(stream);  // after its work: a blocking callback still ran on the subscribed thread
    if (orphan != nullptr) {
      for (auto g : orphan->groups) hb::destroy_group(g);
      delete orphan;
    }
  });
}
}  // namespace

aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream(stream, "aclrtDestroyStream"); }
aclError aclrtDestroyStreamForce(aclrtStream stream) { return destroy_stream(stream, "aclrtDestroyStreamForce"); }

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return guarded("aclrtSynchronizeStream", call::other,
                 [&] { hb::synchronize(stream_of(stream, "aclrtSynchronizeStream")); });
}
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeStreamWithTimeout";
  return guarded(api, call::stream_sync, [&] {
    hb::stream_handle s = stream_of(stream, api);
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::synchronize_for(s, budget);
    } else {
      hb::synchronize(s);
    }
  });
}
aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, std::int32_t timeout) {
  static constexpr const char* api = "aclrtStreamWaitEventWithTimeout";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    hb::event_handle e = event_of(event, api);
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::wait_for(s, e, budget);
    } else {
      hb::wait(s, e);
    }
  });
}
aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  return guarded("aclrtStreamQuery", call::other, [&] {
    require(status, "aclrtStreamQuery", "status");
    *status = hb::query(stream_of(stream, "aclrtStreamQuery")) ? ACL_STREAM_STATUS_COMPLETE
                                                                : ACL_STREAM_STATUS_NOT_READY;
  });
}
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return guarded("aclrtStreamWaitEvent", call::other, [&] {
    hb::wait(stream_of(stream, "aclrtStreamWaitEvent"), event_of(event, "aclrtStreamWaitEvent"));
  });
}
aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, std::uint32_t timeout, std::uint32_t flag) {
  static constexpr const char* api = "aclrtStreamWaitEventWithFlag";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    hb::event_handle e = event_of(event, api);
    if (flag != ACL_EVENT_WAIT_DEFAULT && flag != ACL_EVENT_WAIT_EXTERNAL)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_EVENT_WAIT_DEFAULT or ACL_EVENT_WAIT_EXTERNAL");
    if (flag == ACL_EVENT_WAIT_EXTERNAL && (timeout != 0 || hb::flags_of(e) != keel::event_flags::external))
      throw_rule(errc::invalid_parameter, api,
                 "ACL_EVENT_WAIT_EXTERNAL needs an event created with ACL_EVENT_EXTERNAL and timeout 0");
    hb::wait(s, e);
  });
}

// ---- host callbacks (see report_books above) ----------------------------------

aclError aclrtSubscribeReport(std::uint64_t threadId, aclrtStream stream) {
  static constexpr const char* api = "aclrtSubscribeReport";
  const aclError checked = guarded(api, call::other, [&] { stream_of(stream, api); });
  if (checked != ACL_SUCCESS) return checked;
  report_books& r = reports();
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
  return guarded(api, call::other, [&] {
    hb::launch_host(s, [stream, fn, userData, block] {
      aclrtStream running = worker_stream();  // the executing stream on a replay
      post_callback(running != nullptr ? running : stream, fn, userData, block == ACL_CALLBACK_BLOCK);
    });
  });
}

aclError aclrtProcessReport(std::int32_t timeout) {
  static constexpr const char* api = "aclrtProcessReport";
  if (timeout == 0 || timeout < -1) return fail(ACL_ERROR_INVALID_PARAM, api, "timeout must be -1 or positive (ms)");
  const std::uint64_t me = this_thread_id();
  report_books& r = reports();
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

aclError aclrtUnSubscribeReport(std::uint64_t threadId, aclrtStream stream) {
  static constexpr const char* api = "aclrtUnSubscribeReport";
  const aclError checked = guarded(api, call::other, [&] { stream_of(stream, api); });
  if (checked != ACL_SUCCESS) return checked;
  report_books& r = reports();
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = r.subscriber.find(stream);
  if (it == r.subscriber.end() || it->second != threadId)
    return fail(ACL_ERROR_STREAM_NOT_SUBSCRIBE, api, "the thread is not subscribed to the stream");
  drop_calls(threadId, stream);
  r.subscriber.erase(it);
  r.cv.notify_all();
  return ACL_SUCCESS;
}

// ---- events ---------------------------------------------------------------

namespace {
aclError create_event(aclrtEvent* event, keel::event_flags flags, const char* api) {
  return guarded(api, call::create_event, [&] {
    require(event, api, "event");
    hb::event_handle e = hb::create_event(dev(), flags);
    std::lock_guard<std::mutex> lock(book().m);
    try {
      book().events.insert(e);
    } catch (...) {
      hb::destroy_event(e);
      throw;
    }
    *event = e;
  });
}
keel::event_flags flags_from(std::uint32_t flag, bool allow_external, const char* api) {
  if (flag == ACL_EVENT_EXTERNAL) {
    if (!allow_external) throw_rule(errc::invalid_parameter, api, "ACL_EVENT_EXTERNAL is not accepted here");
    return keel::event_flags::external;
  }
  if ((flag & ACL_EVENT_EXTERNAL) != 0)
    throw_rule(errc::invalid_parameter, api, "ACL_EVENT_EXTERNAL cannot be combined with other flags");
  const std::uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                              ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_IPC;
  if ((flag & ~known) != 0) throw_rule(errc::invalid_parameter, api, "unknown event flag bits");
  return (flag & ACL_EVENT_TIME_LINE) != 0 ? keel::event_flags::timing : keel::event_flags::default_;
}
}  // namespace

// aclrtCreateEvent's events can be timed (07_event_management.md).
aclError aclrtCreateEvent(aclrtEvent* event) {
  return create_event(event, keel::event_flags::timing, "aclrtCreateEvent");
}
aclError aclrtCreateEventWithFlag(aclrtEvent* event, std::uint32_t flag) {
  keel::event_flags flags{};
  const aclError e = guarded("aclrtCreateEventWithFlag", call::other,
                             [&] { flags = flags_from(flag, true, "aclrtCreateEventWithFlag"); });
  return e != ACL_SUCCESS ? e : create_event(event, flags, "aclrtCreateEventWithFlag");
}
aclError aclrtCreateEventExWithFlag(aclrtEvent* event, std::uint32_t flag) {
  keel::event_flags flags{};
  const aclError e = guarded("aclrtCreateEventExWithFlag", call::other,
                             [&] { flags = flags_from(flag, false, "aclrtCreateEventExWithFlag"); });
  return e != ACL_SUCCESS ? e : create_event(event, flags, "aclrtCreateEventExWithFlag");
}
aclError aclrtDestroyEvent(aclrtEvent event) {
  return guarded("aclrtDestroyEvent", call::other, [&] {
    hb::event_handle e = event_of(event, "aclrtDestroyEvent");
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().events.erase(event);
    }
    hb::destroy_event(e);
  });
}
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return guarded("aclrtRecordEvent", call::other, [&] {
    hb::record(event_of(event, "aclrtRecordEvent"), stream_of(stream, "aclrtRecordEvent"));
  });
}
aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, std::uint32_t flag) {
  static constexpr const char* api = "aclrtRecordEventWithFlag";
  return guarded(api, call::other, [&] {
    hb::event_handle e = event_of(event, api);
    hb::stream_handle s = stream_of(stream, api);
    if (flag != ACL_EVENT_RECORD_DEFAULT && flag != ACL_EVENT_RECORD_EXTERNAL)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_EVENT_RECORD_DEFAULT or ACL_EVENT_RECORD_EXTERNAL");
    if (flag == ACL_EVENT_RECORD_EXTERNAL && hb::flags_of(e) != keel::event_flags::external)
      throw_rule(errc::invalid_parameter, api, "ACL_EVENT_RECORD_EXTERNAL needs an event created with ACL_EVENT_EXTERNAL");
    hb::record(e, s);
  });
}
aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  return guarded("aclrtResetEvent", call::other, [&] {
    hb::reset(stream_of(stream, "aclrtResetEvent"), event_of(event, "aclrtResetEvent"));
  });
}
aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  return guarded("aclrtQueryEventStatus", call::other, [&] {
    require(status, "aclrtQueryEventStatus", "status");
    *status = hb::query(event_of(event, "aclrtQueryEventStatus")) ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                                                                   : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  });
}
aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return guarded("aclrtSynchronizeEvent", call::other,
                 [&] { hb::synchronize(event_of(event, "aclrtSynchronizeEvent")); });
}
aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeEventWithTimeout";
  return guarded(api, call::event_sync, [&] {
    hb::event_handle e = event_of(event, api);
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::synchronize_for(e, budget);
    } else {
      hb::synchronize(e);
    }
  });
}
aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return guarded("aclrtEventElapsedTime", call::other, [&] {
    require(ms, "aclrtEventElapsedTime", "ms");
    *ms = hb::elapsed_ms(event_of(startEvent, "aclrtEventElapsedTime"), event_of(endEvent, "aclrtEventElapsedTime"));
  });
}

// ---- memory -----------------------------------------------------------------

aclError aclrtMalloc(void** devPtr, std::size_t size, aclrtMemMallocPolicy) {
  return guarded("aclrtMalloc", call::other, [&] {
    require(devPtr, "aclrtMalloc", "devPtr");
    *devPtr = allocate(book().device_memory, size, "aclrtMalloc");
  });
}
aclError aclrtFree(void* devPtr) {
  return guarded("aclrtFree", call::other, [&] { release(book().device_memory, devPtr, "aclrtFree"); });
}
aclError aclrtMallocHost(void** hostPtr, std::size_t size) {
  return guarded("aclrtMallocHost", call::other, [&] {
    require(hostPtr, "aclrtMallocHost", "hostPtr");
    *hostPtr = allocate(book().host_memory, size, "aclrtMallocHost");
  });
}
aclError aclrtFreeHost(void* hostPtr) {
  return guarded("aclrtFreeHost", call::other, [&] { release(book().host_memory, hostPtr, "aclrtFreeHost"); });
}

aclError aclrtMemcpy(void* dst, std::size_t destMax, const void* src, std::size_t count, aclrtMemcpyKind kind) {
  return guarded("aclrtMemcpy", call::other, [&] {
    copy_kind_of(kind, "aclrtMemcpy");
    require(dst, "aclrtMemcpy", "dst");
    require(src, "aclrtMemcpy", "src");
    if (count > destMax) throw_rule(errc::invalid_parameter, "aclrtMemcpy", "count exceeds destMax");
    check_unsafe_call("aclrtMemcpy", "a synchronous copy");
    std::memcpy(dst, src, count);
  });
}
aclError aclrtMemcpyAsync(void* dst, std::size_t destMax, const void* src, std::size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  return guarded("aclrtMemcpyAsync", call::other, [&] {
    const keel::copy_kind k = copy_kind_of(kind, "aclrtMemcpyAsync");
    require(dst, "aclrtMemcpyAsync", "dst");
    require(src, "aclrtMemcpyAsync", "src");
    if (count > destMax) throw_rule(errc::invalid_parameter, "aclrtMemcpyAsync", "count exceeds destMax");
    hb::copy_async(stream_of(stream, "aclrtMemcpyAsync"), dst, src, count, k, nullptr, nullptr);
  });
}
aclError aclrtMemset(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count) {
  return guarded("aclrtMemset", call::other, [&] {
    require(devPtr, "aclrtMemset", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemset", "count exceeds maxCount");
    check_unsafe_call("aclrtMemset", "a synchronous memset");
    std::memset(devPtr, value, count);
  });
}
aclError aclrtMemsetAsync(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count,
                          aclrtStream stream) {
  return guarded("aclrtMemsetAsync", call::other, [&] {
    require(devPtr, "aclrtMemsetAsync", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemsetAsync", "count exceeds maxCount");
    hb::launch_host(stream_of(stream, "aclrtMemsetAsync"), [devPtr, value, count] { std::memset(devPtr, value, count); });
  });
}

// ---- capture, task groups, update ------------------------------------------

aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  static constexpr const char* api = "aclmdlRICaptureBegin";
  return guarded(api, call::capture_begin, [&] {
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_mode m = mode_of(mode, api);
    auto box = std::make_unique<model_box>();
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().capturing.reserve(book().capturing.size() + 1);
      book().models.reserve(book().models.size() + 1);
    }
    hb::capture_begin(s, m);
    std::lock_guard<std::mutex> lock(book().m);
    book().capturing.emplace(s, box.get());
    book().models.insert(box.release());
  });
}

// Sets the calling thread's capture mode to *mode and returns the previous one
// in *mode (15_model_running_instance_management.md); check_unsafe_call applies it.
aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  static constexpr const char* api = "aclmdlRICaptureThreadExchangeMode";
  return guarded(api, call::other, [&] {
    require(mode, api, "mode");
    mode_of(*mode, api);  // refuses an unknown mode
    thread_state& t = this_thread_state();
    const int previous = t.capture_mode;
    t.capture_mode = raw(*mode);
    const aclmdlRICaptureMode old = static_cast<aclmdlRICaptureMode>(previous);
    std::memcpy(mode, &old, sizeof old);
  });
}

aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI) {
  static constexpr const char* api = "aclmdlRICaptureGetInfo";
  return guarded(api, call::other, [&] {
    require(status, api, "status");
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_info info = hb::capture_status(s);
    *status = info.state == keel::capture_state::active        ? ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
              : info.state == keel::capture_state::invalidated ? ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED
                                                               : ACL_MODEL_RI_CAPTURE_STATUS_NONE;
    if (modelRI != nullptr) {
      // The capture's model, for its origin stream and for a stream that
      // joined it by waiting on an event recorded in it.
      std::lock_guard<std::mutex> lock(book().m);
      model_box* found = nullptr;
      if (info.state != keel::capture_state::none) {
        auto it = book().capturing.find(s);
        if (it != book().capturing.end()) {
          found = it->second;
        } else {
          for (auto& entry : book().capturing)
            if (hb::capture_status(entry.first).capture_id == info.capture_id) found = entry.second;
        }
      }
      *modelRI = found;
    }
  });
}

namespace {
model_box* take_capture(hb::stream_handle s) {
  std::lock_guard<std::mutex> lock(book().m);
  auto it = book().capturing.find(s);
  if (it == book().capturing.end()) return nullptr;
  model_box* box = it->second;
  book().capturing.erase(it);
  return box;
}
void drop_box(model_box* box) noexcept {
  {
    std::lock_guard<std::mutex> lock(book().m);
    book().models.erase(box);
    for (auto g : box->groups) book().groups.erase(g);
  }
  for (auto g : box->groups) hb::destroy_group(g);
  if (box->model != nullptr) hb::destroy_model(box->model);
  delete box;
}
}  // namespace

// A capture that cannot end is discarded (its stream leaves capture mode), as
// CANN ends it: CaptureSession::StreamEndCapture (hicann/runtime) calls
// ClearCaptureModel after every failed check on the origin stream, with
// CANN's status for the check: an invalidated capture
// ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED (507903), a task group still open
// ACL_ERROR_STREAM_TASK_GROUP_STATUS (107033), a forked stream not joined
// back ACL_ERROR_RT_STREAM_UNJOINED (107025; docs/02_dev_guide/04-02_跨流捕获.md).
// The caller gets the error and no model. On a stream that joined the
// capture but did not begin it, the end is ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED
// (107036) and the capture goes on.
aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  static constexpr const char* api = "aclmdlRICaptureEnd";
  aclError refined = ACL_SUCCESS;  // CANN's status for why the capture could not end
  const aclError status = guarded(api, call::capture_end, [&] {
    require(modelRI, api, "modelRI");
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_info info = hb::capture_status(s);
    if (info.state == keel::capture_state::none) throw_rule(errc::invalid_state, api, "the stream is not capturing");
    bool origin = false, group_open = false;
    {
      std::lock_guard<std::mutex> lock(book().m);
      origin = book().capturing.count(s) != 0;
      for (void* other : book().streams) {
        const keel::capture_info o = hb::capture_status(static_cast<hb::stream_handle>(other));
        if (o.state != keel::capture_state::none && o.capture_id == info.capture_id && o.group_open) group_open = true;
      }
    }
    hb::model_handle m = nullptr;
    try {
      m = hb::capture_end(s);
    } catch (const keel::error& e) {
      if (e.code() == keel::make_error_code(errc::capture_violation))
        refined = !origin                                         ? ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED
                  : info.state == keel::capture_state::invalidated ? ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED
                  : group_open                                     ? ACL_ERROR_STREAM_TASK_GROUP_STATUS
                                                                   : ACL_ERROR_RT_STREAM_UNJOINED;
      if (origin) {
        hb::group_abort(s);
        hb::capture_discard(s);
        if (model_box* box = take_capture(s)) drop_box(box);
      }
      throw;
    } catch (...) {
      if (origin) {
        hb::group_abort(s);
        hb::capture_discard(s);
        if (model_box* box = take_capture(s)) drop_box(box);
      }
      throw;
    }
    model_box* box = take_capture(s);
    if (box == nullptr) {  // captured on a stream this library did not see begin: cannot happen, but never leak
      hb::destroy_model(m);
      throw_rule(errc::invalid_state, api, "no capture record for the stream");
    }
    box->model = m;
    *modelRI = box;
  });
  if (status == ACL_SUCCESS || refined == ACL_SUCCESS) return status;
  this_thread_state().last_runtime_error = refined;  // the text stays the host backend's explanation
  return refined;
}

aclError aclmdlRICaptureTaskGrpBegin(aclrtStream stream) {
  static constexpr const char* api = "aclmdlRICaptureTaskGrpBegin";
  bool capturing = true;
  const aclError e = guarded(api, call::group, [&] {
    hb::stream_handle s = stream_of(stream, api);
    capturing = hb::capture_status(s).state != keel::capture_state::none;
    if (capturing) hb::group_begin(s);
  });
  if (e == ACL_SUCCESS && !capturing)
    return fail(ACL_ERROR_RT_STREAM_NOT_CAPTURED, api, "a task group is marked during capture; the stream is not capturing");
  return e;
}

aclError aclmdlRICaptureTaskGrpEnd(aclrtStream stream, aclrtTaskGrp* handle) {
  static constexpr const char* api = "aclmdlRICaptureTaskGrpEnd";
  return guarded(api, call::group, [&] {
    require(handle, api, "handle");
    hb::stream_handle s = stream_of(stream, api);
    // The group belongs to the model being captured: find its record first,
    // so a failure after group_end cannot lose the group.
    std::unique_lock<std::mutex> lock(book().m);
    model_box* box = nullptr;
    for (auto& entry : book().capturing) {
      if (hb::capture_status(entry.first).capture_id == hb::capture_status(s).capture_id) box = entry.second;
    }
    if (box == nullptr) throw_rule(errc::invalid_state, api, "the stream is not capturing");
    box->groups.reserve(box->groups.size() + 1);
    book().groups.reserve(book().groups.size() + 1);
    lock.unlock();
    hb::group_handle g = hb::group_end(s);
    lock.lock();
    box->groups.push_back(g);
    book().groups.insert(g);
    *handle = g;
  });
}

aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream stream, aclrtTaskGrp handle) {
  static constexpr const char* api = "aclmdlRICaptureTaskUpdateBegin";
  return guarded(api, call::group, [&] {
    hb::stream_handle s = stream_of(stream, api);
    if (handle == nullptr) throw_rule(errc::null_parameter, api, "handle is null");
    {
      std::lock_guard<std::mutex> lock(book().m);
      if (!book().groups.count(handle))
        throw_rule(errc::invalid_handle, api, "handle is not a task group of a live model");
    }
    hb::update_begin(s, static_cast<hb::group_handle>(handle));
  });
}

// An update that breaks a rule is abandoned: the group keeps its old tasks.
aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream stream) {
  static constexpr const char* api = "aclmdlRICaptureTaskUpdateEnd";
  return guarded(api, call::update_end, [&] {
    hb::stream_handle s = stream_of(stream, api);
    try {
      hb::update_end(s);
    } catch (...) {
      hb::update_abort(s);
      throw;
    }
  });
}

aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  return guarded("aclmdlRIExecuteAsync", call::other, [&] {
    hb::execute(model_of(modelRI, "aclmdlRIExecuteAsync")->model, stream_of(stream, "aclmdlRIExecuteAsync"));
  });
}

aclError aclmdlRIExecute(aclmdlRI modelRI, std::int32_t timeout) {
  static constexpr const char* api = "aclmdlRIExecute";
  return guarded(api, call::other, [&] {
    model_box* box = model_of(modelRI, api);
    keel::host::stream s{dev()};
    hb::execute(box->model, s.native_handle());
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      s.synchronize(budget);
    } else {
      s.synchronize();
    }
  });
}

aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  return guarded("aclmdlRIDestroy", call::other, [&] { drop_box(model_of(modelRI, "aclmdlRIDestroy")); });
}

}  // extern "C"

// ---- aclnn objects ----------------------------------------------------------

namespace {

// The aclDataType values keel's operators take (acl_base.h); the rest have no
// keel dtype and are refused.
bool dtype_of(aclDataType t, keel::ops::dtype& out) {
  switch (t) {
    case ACL_FLOAT: out = keel::ops::dtype::float32; return true;
    case ACL_FLOAT16: out = keel::ops::dtype::float16; return true;
    case ACL_BF16: out = keel::ops::dtype::bfloat16; return true;
    case ACL_INT32: out = keel::ops::dtype::int32; return true;
    case ACL_INT64: out = keel::ops::dtype::int64; return true;
    case ACL_INT8: out = keel::ops::dtype::int8; return true;
    case ACL_UINT8: out = keel::ops::dtype::uint8; return true;
    case ACL_BOOL: out = keel::ops::dtype::boolean; return true;
    default: return false;
  }
}

template <class T>
T read_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const keel::ops::kernel_table& kernels() { return keel::ops::static_kernels(); }

keel::ops::prepare_options options() {
  return keel::ops::prepare_options{dev().compute_workers(), keel::ops::executor_use::repeatable};
}

// Phase one: checks the pointers CANN requires, prepares, hands out an executor.
template <class Prepare>
aclnnStatus phase_one(const char* api, std::uint64_t* workspaceSize, aclOpExecutor** executor, Prepare&& prepare) {
  return guarded(api, call::nn, [&] {
    require(workspaceSize, api, "workspaceSize");
    require(executor, api, "executor");
    auto made = std::make_unique<aclOpExecutor>();
    made->ex = prepare();
    *workspaceSize = made->ex.workspace_size();
    *executor = made.release();
  });
}

// Phase two: enqueues on the stream; a once-only executor is consumed by a
// successful launch (the launched task and any capturing model keep the plan).
aclnnStatus phase_two(const char* api, keel::ops::op_kind op, void* workspace, std::uint64_t workspaceSize,
                      aclOpExecutor* executor, aclrtStream stream) {
  if (!has_context()) return no_context(api);  // it enqueues on a stream: a runtime call
  return guarded(api, call::nn, [&] {
    require(executor, api, "executor");
    if (!executor->ex || executor->ex.op() != op)
      throw_rule(errc::invalid_parameter, api, "the executor was not made by this operator's GetWorkspaceSize");
    hb::stream_handle s = stream_of(stream, api);
    // No workspace given: the stream's registered allocator's (allocator.cpp).
    keel_emulation::stream_workspace registered;
    if (workspaceSize != 0 && workspace == nullptr && registered.take(stream, workspaceSize))
      workspace = registered.address();
    if (workspaceSize != 0) require(workspace, api, "workspace");
    keel::ops::run_on(keel::host::stream_ref::adopt(s), executor->ex,
                      keel::memory_span{workspace, static_cast<std::size_t>(workspaceSize), keel::memory_kind::device,
                                        nullptr});
    if (!executor->repeatable) delete executor;
  });
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const std::int64_t* viewDims, std::uint64_t viewDimsNum, aclDataType dataType,
                           const std::int64_t* stride, std::int64_t offset, aclFormat format,
                           const std::int64_t* storageDims, std::uint64_t storageDimsNum, void* tensorData) {
  static constexpr const char* api = "aclCreateTensor";
  aclTensor* made = nullptr;
  guarded(api, call::nn, [&] {
    if (viewDimsNum > 0) require(viewDims, api, "viewDims");
    if (viewDimsNum > 0) require(stride, api, "stride");
    if (storageDimsNum > 0) require(storageDims, api, "storageDims");
    keel::ops::dtype type{};
    if (!dtype_of(dataType, type))
      throw_rule(errc::invalid_parameter, api, "dataType " + std::to_string(static_cast<int>(dataType)) +
                                                   " is not one of the emulation's (float, float16, bf16, int8, "
                                                   "uint8, int32, int64, bool)");
    if (offset < 0) throw_rule(errc::invalid_parameter, api, "offset is negative");
    // Counts are bounded before anything reads the caller's arrays.
    if (viewDimsNum > keel::ops::tensor::max_dims || storageDimsNum > keel::ops::tensor::max_dims)
      throw_rule(errc::invalid_parameter, api,
                 "viewDimsNum and storageDimsNum must be at most " + std::to_string(keel::ops::tensor::max_dims));
    auto t = std::make_unique<aclTensor>();
    t->dims.assign(viewDims, viewDims + viewDimsNum);
    t->strides.assign(stride, stride + viewDimsNum);
    if (storageDimsNum > 0) t->storage.assign(storageDims, storageDims + storageDimsNum);
    t->type = dataType;
    t->format = format;
    t->offset = offset;
    t->view = keel::ops::tensor(tensorData, type, t->dims.data(), t->dims.size(), t->strides.data(),
                                t->strides.size(), offset);
    made = t.release();
  });
  return made;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  static constexpr const char* api = "aclCreateScalar";
  aclScalar* made = nullptr;
  guarded(api, call::nn, [&] {
    require(value, api, "value");
    keel::ops::scalar v;
    switch (dataType) {
      case ACL_FLOAT: v = keel::ops::scalar(read_as<float>(value)); break;
      case ACL_DOUBLE: v = keel::ops::scalar(read_as<double>(value)); break;
      case ACL_FLOAT16: v = keel::ops::scalar(keel::ops::half_bits_to_float(read_as<std::uint16_t>(value))); break;
      case ACL_BF16: v = keel::ops::scalar(keel::ops::bfloat16_bits_to_float(read_as<std::uint16_t>(value))); break;
      case ACL_INT8: v = keel::ops::scalar(std::int64_t{read_as<std::int8_t>(value)}); break;
      case ACL_UINT8: v = keel::ops::scalar(std::int64_t{read_as<std::uint8_t>(value)}); break;
      case ACL_INT16: v = keel::ops::scalar(std::int64_t{read_as<std::int16_t>(value)}); break;
      case ACL_INT32: v = keel::ops::scalar(read_as<std::int32_t>(value)); break;
      case ACL_INT64: v = keel::ops::scalar(read_as<std::int64_t>(value)); break;
      case ACL_BOOL: v = keel::ops::scalar(read_as<std::uint8_t>(value) != 0); break;
      default:
        throw_rule(errc::invalid_parameter, api,
                   "dataType " + std::to_string(static_cast<int>(dataType)) + " is not a scalar type the emulation reads");
    }
    made = new aclScalar{v};
  });
  return made;
}

aclIntArray* aclCreateIntArray(const std::int64_t* value, std::uint64_t size) {
  aclIntArray* made = nullptr;
  guarded("aclCreateIntArray", call::nn, [&] {
    if (size > 0) require(value, "aclCreateIntArray", "value");
    if (size > static_cast<std::uint64_t>(PTRDIFF_MAX) / sizeof(std::int64_t))
      throw_rule(errc::invalid_parameter, "aclCreateIntArray", "size is larger than any array can be");
    made = new aclIntArray{std::vector<std::int64_t>(value, value + size)};
  });
  return made;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return guarded("aclDestroyTensor", call::nn, [&] {
    require(tensor, "aclDestroyTensor", "tensor");
    delete tensor;
  });
}
aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return guarded("aclDestroyScalar", call::nn, [&] {
    require(scalar, "aclDestroyScalar", "scalar");
    delete scalar;
  });
}
aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return guarded("aclDestroyIntArray", call::nn, [&] {
    require(array, "aclDestroyIntArray", "array");
    delete array;
  });
}

namespace {
aclnnStatus give_array(const char* api, const aclTensor* tensor, const std::vector<std::int64_t>& (*pick)(const aclTensor&),
                       std::int64_t** out, std::uint64_t* count) {
  return guarded(api, call::nn, [&] {
    require(tensor, api, "tensor");
    require(out, api, "output array");
    require(count, api, "output count");
    const std::vector<std::int64_t>& v = pick(*tensor);
    auto* copy = new std::int64_t[v.empty() ? 1 : v.size()];  // released by the caller with delete[]
    std::copy(v.begin(), v.end(), copy);
    *out = copy;
    *count = v.size();
  });
}
}  // namespace

aclnnStatus aclGetViewShape(const aclTensor* tensor, std::int64_t** viewDims, std::uint64_t* viewDimsNum) {
  return give_array("aclGetViewShape", tensor, [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.dims; },
                    viewDims, viewDimsNum);
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, std::int64_t** storageDims, std::uint64_t* storageDimsNum) {
  return give_array("aclGetStorageShape", tensor,
                    [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.storage; }, storageDims,
                    storageDimsNum);
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, std::int64_t** stridesValue, std::uint64_t* stridesNum) {
  return give_array("aclGetViewStrides", tensor,
                    [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.strides; }, stridesValue,
                    stridesNum);
}
aclnnStatus aclGetViewOffset(const aclTensor* tensor, std::int64_t* offset) {
  return guarded("aclGetViewOffset", call::nn, [&] {
    require(tensor, "aclGetViewOffset", "tensor");
    require(offset, "aclGetViewOffset", "offset");
    *offset = tensor->offset;
  });
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  return guarded("aclGetFormat", call::nn, [&] {
    require(tensor, "aclGetFormat", "tensor");
    require(format, "aclGetFormat", "format");
    *format = tensor->format;
  });
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  return guarded("aclGetDataType", call::nn, [&] {
    require(tensor, "aclGetDataType", "tensor");
    require(dataType, "aclGetDataType", "dataType");
    *dataType = tensor->type;
  });
}
aclnnStatus aclGetIntArraySize(const aclIntArray* array, std::uint64_t* size) {
  return guarded("aclGetIntArraySize", call::nn, [&] {
    require(array, "aclGetIntArraySize", "array");
    require(size, "aclGetIntArraySize", "size");
    *size = array->values.size();
  });
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return guarded("aclSetAclOpExecutorRepeatable", call::nn, [&] {
    require(executor, "aclSetAclOpExecutorRepeatable", "executor");
    executor->repeatable = true;
  });
}
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return guarded("aclDestroyAclOpExecutor", call::nn, [&] {
    require(executor, "aclDestroyAclOpExecutor", "executor");
    delete executor;
  });
}

// ---- the five operators -------------------------------------------------------

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor* self, const aclTensor* other, const aclScalar* alpha,
                                     aclTensor* out, std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAddGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, [&] {
    require(self, api, "self");
    require(other, api, "other");
    require(alpha, api, "alpha");
    require(out, api, "out");
    return keel::ops::prepare_add(kernels(), self->view, other->view, alpha->value, out->view, options());
  });
}
aclnnStatus aclnnAdd(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnAdd", keel::ops::op_kind::add, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnAddcmulGetWorkspaceSize(const aclTensor* self, const aclTensor* tensor1, const aclTensor* tensor2,
                                         const aclScalar* value, aclTensor* out, std::uint64_t* workspaceSize,
                                         aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAddcmulGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, [&] {
    require(self, api, "self");
    require(tensor1, api, "tensor1");
    require(tensor2, api, "tensor2");
    require(value, api, "value");
    require(out, api, "out");
    return keel::ops::prepare_addcmul(kernels(), self->view, tensor1->view, tensor2->view, value->value, out->view,
                                      options());
  });
}
aclnnStatus aclnnAddcmul(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnAddcmul", keel::ops::op_kind::addcmul, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor* self, aclDataType dtype, aclTensor* out,
                                      std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnCastGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, [&] {
    require(self, api, "self");
    require(out, api, "out");
    if (out->type != dtype)
      throw_rule(errc::invalid_parameter, api, "dtype must be out's data type");
    return keel::ops::prepare_cast(kernels(), self->view, out->view, options());
  });
}
aclnnStatus aclnnCast(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnCast", keel::ops::op_kind::cast, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnAdaptiveAvgPool2dGetWorkspaceSize(const aclTensor* self, const aclIntArray* outputSize, aclTensor* out,
                                                   std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAdaptiveAvgPool2dGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, [&] {
    require(self, api, "self");
    require(outputSize, api, "outputSize");
    require(out, api, "out");
    if (outputSize->values.size() != 2)
      throw_rule(errc::invalid_parameter, api, "outputSize must hold two values (H, W)");
    return keel::ops::prepare_adaptive_avg_pool2d(kernels(), self->view, outputSize->values[0],
                                                  outputSize->values[1], out->view, options());
  });
}
aclnnStatus aclnnAdaptiveAvgPool2d(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
  return phase_two("aclnnAdaptiveAvgPool2d", keel::ops::op_kind::adaptive_avg_pool2d, workspace, workspaceSize,
                   executor, stream);
}

// cubeMathType (0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3
// USE_HF32, aclnnBaddbmm page) picks Cube precision; the CPU computes in
// float32 whatever it says.
aclnnStatus aclnnBaddbmmGetWorkspaceSize(const aclTensor* self, const aclTensor* batch1, const aclTensor* batch2,
                                         const aclScalar* beta, const aclScalar* alpha, aclTensor* out,
                                         int8_t cubeMathType, std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnBaddbmmGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, [&] {
    require(self, api, "self");
    require(batch1, api, "batch1");
    require(batch2, api, "batch2");
    require(beta, api, "beta");
    require(alpha, api, "alpha");
    require(out, api, "out");
    if (cubeMathType < 0 || cubeMathType > 3)
      throw_rule(errc::invalid_parameter, api, "cubeMathType must be 0..3");
    return keel::ops::prepare_baddbmm(kernels(), self->view, batch1->view, batch2->view, beta->value, alpha->value,
                                      out->view, options());
  });
}
aclnnStatus aclnnBaddbmm(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnBaddbmm", keel::ops::op_kind::baddbmm, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
