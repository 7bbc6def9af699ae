// SPDX-License-Identifier: Apache-2.0
// Status reporting: how a rule the host backend reports becomes the ACL
// status CANN documents for it (code_for), the calling thread's
// aclGetRecentErrMsg text and last runtime error (aclrtPeekAtLastError,
// aclrtGetLastError), and the per-thread state they live in.
#include <pthread.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <mutex>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

namespace {
pthread_key_t make_key() {
  pthread_key_t key;
  if (pthread_key_create(&key, [](void* p) { delete static_cast<thread_state*>(p); }) != 0) std::abort();
  return key;
}
}  // namespace

thread_state& this_thread_state() {
  static const pthread_key_t key = make_key();
  auto* state = static_cast<thread_state*>(pthread_getspecific(key));
  if (state == nullptr) {
    state = new thread_state;
    pthread_setspecific(key, state);
  }
  return *state;
}

aclError fail(aclError code, const char* function, const std::string& text) {
  thread_state& t = this_thread_state();
  t.recent_error = std::string(function) + ": " + text;
  t.has_recent_error = true;
  if ((code / 1000) % 100 != 61) t.last_runtime_error = code;
  return code;
}

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
bool has_context() noexcept {
  const thread_state& t = this_thread_state();
  if (t.current_context == nullptr) return false;
  if (!is_default_context(t.current_context)) return true;
  return t.generation == book().devices[t.current_device].generation.load(std::memory_order_acquire);  // aclrtResetDeviceForce released it since
}
aclError no_context(const char* function) {
  return fail(ACL_ERROR_RT_CONTEXT_NULL, function,
              "no current context on this thread: call aclrtSetDevice on every thread that calls the runtime");
}

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
    case ACL_ERROR_RT_STREAM_UNJOINED: return "ACL_ERROR_RT_STREAM_UNJOINED";
    case ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED: return "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED";
    case ACL_ERROR_STREAM_CAPTURE_CONFLICT: return "ACL_ERROR_STREAM_CAPTURE_CONFLICT";
    case ACL_ERROR_STREAM_TASK_GROUP_INTR: return "ACL_ERROR_STREAM_TASK_GROUP_INTR";
    case ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD: return "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD";
    case ACL_ERROR_RT_NO_MODEL_RESOURCE: return "ACL_ERROR_RT_NO_MODEL_RESOURCE";
    case ACL_ERROR_RT_NO_EVENT_RESOURCE: return "ACL_ERROR_RT_NO_EVENT_RESOURCE";
    case ACL_ERROR_RT_OVER_LIMIT: return "ACL_ERROR_RT_OVER_LIMIT";
    case ACL_ERROR_RT_INVALID_HANDLE: return "ACL_ERROR_RT_INVALID_HANDLE";
    case ACL_ERROR_RT_STREAM_CONTEXT: return "ACL_ERROR_RT_STREAM_CONTEXT";
    case ACL_ERROR_RT_INVALID_DEVICEID: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case ACL_ERROR_RT_AICORE_EXCEPTION: return "ACL_ERROR_RT_AICORE_EXCEPTION";
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case ACL_ERROR_RT_FEATURE_NOT_SUPPORT: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case ACL_ERROR_RT_WAIT_TIMEOUT: return "ACL_ERROR_RT_WAIT_TIMEOUT";
    case ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: return "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT";
    case ACL_ERROR_RT_EVENT_SYNC_TIMEOUT: return "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT";
    default: return "ACL_ERROR_RT_INTERNAL_ERROR";
  }
}

[[noreturn]] void throw_rule(errc e, const char* function, std::string text) {
  throw keel::error(e, function, std::move(text));
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

// CANN: gets and clears the thread's text (13_exception_handling.md); the
// pointer stays valid until the thread's next failure.
const char* aclGetRecentErrMsg(void) {
  thread_state& t = this_thread_state();
  if (!t.has_recent_error) return nullptr;
  t.has_recent_error = false;
  return t.recent_error.c_str();
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

}  // extern "C"
