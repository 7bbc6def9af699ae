// SPDX-License-Identifier: Apache-2.0
// Contexts (05_context_management.md): aclrtCreateContext,
// aclrtDestroyContext, aclrtSetCurrentContext, aclrtGetCurrentContext; the
// default context aclrtSetDevice binds; and aclrtResetDeviceForce
// (04_device_management.md), which releases the default context and the
// streams made in it, whatever number of aclrtSetDevice calls came before.
//
// The emulation's device has one set of streams whatever context made them:
// a context is the binding that lets a thread call the runtime, and the
// streams it made (which aclrtResetDeviceForce destroys for the default one).
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

namespace {
// What an aclrtContext points at: the device it was made on.
struct context_object {
  std::int32_t device = 0;
};
}  // namespace

aclrtContext default_context() noexcept {
  static context_object* const object = new context_object;  // never destroyed, as dev()
  return object;
}

void bind_default_context() {
  thread_state& t = this_thread_state();
  {
    std::lock_guard<std::mutex> lock(book().m);
    ++book().set_count;
  }
  t.current_device = 0;
  t.current_context = default_context();
  t.generation = book().generation.load(std::memory_order_acquire);
}

void unbind_context() noexcept {
  thread_state& t = this_thread_state();
  t.current_device = -1;
  t.current_context = nullptr;
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtCreateContext(aclrtContext* context, std::int32_t deviceId) {
  static constexpr const char* api = "aclrtCreateContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  if (deviceId != 0) return fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "the emulation has one device, id 0");
  context_object* made = nullptr;
  try {
    made = new context_object;
    std::lock_guard<std::mutex> lock(book().m);
    book().contexts.insert(made);
  } catch (const std::bad_alloc&) {
    delete made;
    return fail(ACL_ERROR_BAD_ALLOC, api, "out of host memory");
  }
  // CANN: the new context is also made the calling thread's current one.
  thread_state& t = this_thread_state();
  t.current_device = 0;
  t.current_context = made;
  *context = made;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  static constexpr const char* api = "aclrtDestroyContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  if (context == default_context())
    return fail(ACL_ERROR_INVALID_PARAM, api,
                "the default context (aclrtSetDevice's) is not destroyed: only contexts aclrtCreateContext made are");
  {
    std::lock_guard<std::mutex> lock(book().m);
    if (book().contexts.erase(context) == 0)
      return fail(ACL_ERROR_RT_INVALID_HANDLE, api, "context is not a live aclrtContext");
  }
  if (this_thread_state().current_context == context) unbind_context();
  delete static_cast<context_object*>(context);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  static constexpr const char* api = "aclrtSetCurrentContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  thread_state& t = this_thread_state();
  if (context == default_context()) {
    std::lock_guard<std::mutex> lock(book().m);
    if (book().set_count == 0)  // CANN: a context whose device was reset cannot be made current
      return fail(ACL_ERROR_RT_CONTEXT_NULL, api, "the default context's device was reset: call aclrtSetDevice");
    t.generation = book().generation.load(std::memory_order_acquire);
  } else {
    std::lock_guard<std::mutex> lock(book().m);
    if (!book().contexts.count(context))
      return fail(ACL_ERROR_RT_INVALID_HANDLE, api, "context is not a live aclrtContext");
  }
  t.current_device = static_cast<const context_object*>(context)->device;
  t.current_context = context;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  static constexpr const char* api = "aclrtGetCurrentContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  if (!has_context()) return no_context(api);
  *context = this_thread_state().current_context;
  return ACL_SUCCESS;
}

aclError aclrtResetDeviceForce(std::int32_t deviceId) {
  static constexpr const char* api = "aclrtResetDeviceForce";
  if (deviceId != 0) return fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "the emulation has one device, id 0");
  std::vector<aclrtStream> made_in_default;
  {
    std::lock_guard<std::mutex> lock(book().m);
    // CANN: once aclrtResetDevice calls undid every aclrtSetDevice (or a
    // forced reset already released the device), a reset fails.
    if (book().set_count == 0)
      return fail(ACL_ERROR_RT_CONTEXT_NULL, api, "the device is not set (aclrtSetDevice) or was already reset");
    for (const auto& sc : book().stream_context)
      if (sc.second == default_context()) made_in_default.push_back(sc.first);
    book().set_count = 0;
  }
  // The default context's streams go, each after its work (CANN waits for it).
  for (aclrtStream s : made_in_default) {
    const aclError st = destroy_stream_checked(s, api, false);
    if (st != ACL_SUCCESS) return st;
  }
  book().generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's default binding ends
  unbind_context();
  return ACL_SUCCESS;
}

}  // extern "C"
