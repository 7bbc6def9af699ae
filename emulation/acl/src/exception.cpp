// SPDX-License-Identifier: Apache-2.0
// Exception information (13_exception_handling.md): aclrtSetExceptionInfoCallback,
// aclrtExceptionInfoCallbackRegister, aclrtExceptionInfoCallbackUnregister and
// the aclrtGet*FromExceptionInfo getters.
//
// CANN's documented behaviour: the callbacks are the process's; the one
// aclrtSetExceptionInfoCallback sets (the last one, null for none) and those
// registered (each function once, however often registered; a null one is
// ACL_ERROR_INVALID_PARAM, unregistering one not registered succeeds) are
// all told of each task that fails on a device, with its task, stream,
// thread and device ids and its error code; the information lives during
// the call only; unregistering does not wait for a call in progress.
// The emulation's choices: a failed task is one that puts its stream in the
// error state (the one a synchronize reports as ACL_ERROR_RT_AICORE_EXCEPTION,
// the error code the callbacks get); the callbacks run on the failed
// stream's worker thread right after the failure, the thread id is that
// thread's (gettid), the task id the task's sequence number on its stream
// (from 0, counting every task issued to it), the stream id aclrtStreamGetId's;
// each id getter returns 0xFFFFFFFF for a null info. The emulation's failing
// tasks are waits and host work, never a kernel launch: the kernel-argument
// and function getters give null (and 0 arguments) for them.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "detail/exception.hpp"
#include "detail/state.hpp"

// CANN declares the type opaque (acl_rt.h); its fields are the emulation's.
struct rtExceptionInfo {
  std::uint32_t task_id;
  std::uint32_t stream_id;
  std::uint32_t thread_id;
  std::uint32_t device_id;
  std::uint32_t error_code;
  void* kernel_args;       // the failed kernel launch's arguments (null: no kernel)
  std::uint32_t kernel_args_count;
  aclrtFuncHandle kernel;  // the failed kernel's function (null: no kernel)
};

namespace keel::acl_emulation::detail {
namespace {

constexpr std::uint32_t no_info = 0xFFFFFFFFu;

struct exception_books {
  std::mutex m;
  aclrtExceptionInfoCallback set = nullptr;           // aclrtSetExceptionInfoCallback's
  std::vector<aclrtExceptionInfoCallback> registered;  // aclrtExceptionInfoCallbackRegister's, in order
};
exception_books& exceptions() {
  static auto* b = new exception_books;  // as the other books: never destroyed
  return *b;
}

void task_failed(std::int32_t device, std::uint64_t stream_id, std::uint64_t task) {
  std::vector<aclrtExceptionInfoCallback> callbacks;
  {
    exception_books& b = exceptions();
    std::lock_guard<std::mutex> lock(b.m);
    if (b.set == nullptr && b.registered.empty()) return;
    if (b.set != nullptr) callbacks.push_back(b.set);
    callbacks.insert(callbacks.end(), b.registered.begin(), b.registered.end());
  }
  rtExceptionInfo info{static_cast<std::uint32_t>(task), static_cast<std::uint32_t>(stream_id),
                       static_cast<std::uint32_t>(::syscall(SYS_gettid)),
                       static_cast<std::uint32_t>(device),
                       static_cast<std::uint32_t>(ACL_ERROR_RT_AICORE_EXCEPTION),
                       nullptr,
                       0,
                       nullptr};
  for (aclrtExceptionInfoCallback f : callbacks) f(&info);  // outside the lock: a callback may unregister
}

}  // namespace

void report_task_failures(keel::host::device& d, std::int32_t id) {
  d.state().observe_task_failures(
      [id](std::uint64_t stream_id, std::uint64_t task, const std::exception_ptr&) { task_failed(id, stream_id, task); });
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback) {
  return guarded("aclrtSetExceptionInfoCallback", call::other, [&] {
    exception_books& b = exceptions();
    std::lock_guard<std::mutex> lock(b.m);
    b.set = callback;
  });
}

aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback) {
  static constexpr const char* api = "aclrtExceptionInfoCallbackRegister";
  return guarded(api, call::other, [&] {
    if (callback == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "callback is null");
    exception_books& b = exceptions();
    std::lock_guard<std::mutex> lock(b.m);
    if (std::find(b.registered.begin(), b.registered.end(), callback) == b.registered.end())
      b.registered.push_back(callback);
  });
}

aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback) {
  static constexpr const char* api = "aclrtExceptionInfoCallbackUnregister";
  return guarded(api, call::other, [&] {
    if (callback == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "callback is null");
    exception_books& b = exceptions();
    std::lock_guard<std::mutex> lock(b.m);
    b.registered.erase(std::remove(b.registered.begin(), b.registered.end(), callback), b.registered.end());
  });
}

std::uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return info == nullptr ? no_info : info->task_id;
}
std::uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return info == nullptr ? no_info : info->stream_id;
}
std::uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return info == nullptr ? no_info : info->thread_id;
}
std::uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return info == nullptr ? no_info : info->device_id;
}
std::uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo* info) {
  return info == nullptr ? no_info : info->error_code;
}


aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo* info, void** devArgsPtr, std::uint32_t* devArgsLen) {
  static constexpr const char* api = "aclrtGetArgsFromExceptionInfo";
  if (info == nullptr || devArgsPtr == nullptr || devArgsLen == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  *devArgsPtr = info->kernel_args;
  *devArgsLen = info->kernel_args_count;
  return ACL_SUCCESS;
}
aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo* info, aclrtFuncHandle* func) {
  static constexpr const char* api = "aclrtGetFuncHandleFromExceptionInfo";
  if (info == nullptr || func == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  *func = info->kernel;
  return ACL_SUCCESS;
}

}  // extern "C"
