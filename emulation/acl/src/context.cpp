// SPDX-License-Identifier: Apache-2.0
// Contexts (05_context_management.md): aclrtCreateContext,
// aclrtDestroyContext, aclrtSetCurrentContext, aclrtGetCurrentContext; the
// default context aclrtSetDevice binds; and aclrtResetDeviceForce
// (04_device_management.md), which releases the default context and the
// streams made in it, whatever number of aclrtSetDevice calls came before.
//
// Each emulated device has one set of streams whatever context made them: a
// context is the binding that lets a thread call the runtime on its device,
// and the streams it made (which aclrtResetDeviceForce destroys for the
// device's default one).
#include <cstdint>
#include <mutex>
#include <new>
#include <system_error>
#include <vector>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

namespace {
// What an aclrtContext points at: the device it was made on.
struct context_object {
  std::int32_t device = 0;
};
}  // namespace

namespace {
context_object* default_contexts() noexcept {
  static context_object* const objects = [] {
    auto* made = new context_object[max_devices];  // never destroyed, as dev()
    for (std::int32_t i = 0; i < max_devices; ++i) made[i].device = i;
    return made;
  }();
  return objects;
}
}  // namespace

aclrtContext default_context(std::int32_t device) noexcept { return &default_contexts()[device]; }

bool is_default_context(aclrtContext context) noexcept {
  const auto* c = static_cast<const context_object*>(context);
  return c >= default_contexts() && c < default_contexts() + max_devices;
}

std::int32_t context_device(aclrtContext context) noexcept {
  return static_cast<const context_object*>(context)->device;
}

void bind_default_context(std::int32_t device) {
  thread_state& t = this_thread_state();
  {
    std::lock_guard<std::mutex> lock(book().m);
    ++book().devices[device].set_count;
  }
  t.current_device = device;
  t.current_context = default_context(device);
  t.generation = book().devices[device].generation.load(std::memory_order_acquire);
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
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  context_object* made = nullptr;
  try {
    dev(deviceId);
    made = new context_object;
    made->device = deviceId;
    std::lock_guard<std::mutex> lock(book().m);
    book().contexts.insert(made);
  } catch (const std::bad_alloc&) {
    delete made;
    return fail(ACL_ERROR_BAD_ALLOC, api, "out of host memory");
  } catch (const std::system_error&) {
    delete made;
    return fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "the device's worker threads could not start");
  }
  // CANN: the new context is also made the calling thread's current one.
  thread_state& t = this_thread_state();
  t.current_device = deviceId;
  t.current_context = made;
  *context = made;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  static constexpr const char* api = "aclrtDestroyContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  if (is_default_context(context))
    return fail(ACL_ERROR_INVALID_PARAM, api,
                "the default context (aclrtSetDevice's) is not destroyed: only contexts aclrtCreateContext made are");
  {
    std::lock_guard<std::mutex> lock(book().m);
    if (book().contexts.erase(context) == 0)
      return fail(ACL_ERROR_RT_INVALID_HANDLE, api, "context is not a live aclrtContext");
  }
  drop_default_stream(context);  // CANN: the context's default stream goes with it
  if (this_thread_state().current_context == context) unbind_context();
  delete static_cast<context_object*>(context);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  static constexpr const char* api = "aclrtSetCurrentContext";
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "context is null");
  thread_state& t = this_thread_state();
  if (is_default_context(context)) {
    const std::int32_t device = context_device(context);
    std::lock_guard<std::mutex> lock(book().m);
    if (book().devices[device].set_count == 0)  // CANN: a context whose device was reset cannot be made current
      return fail(ACL_ERROR_RT_CONTEXT_NULL, api, "the default context's device was reset: call aclrtSetDevice");
    t.generation = book().devices[device].generation.load(std::memory_order_acquire);
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
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  std::vector<aclrtStream> made_in_default;
  {
    std::lock_guard<std::mutex> lock(book().m);
    // CANN: once aclrtResetDevice calls undid every aclrtSetDevice (or a
    // forced reset already released the device), a reset fails.
    if (book().devices[deviceId].set_count == 0)
      return fail(ACL_ERROR_RT_CONTEXT_NULL, api, "the device is not set (aclrtSetDevice) or was already reset");
    for (const auto& sc : book().stream_context)
      if (sc.second == default_context(deviceId)) made_in_default.push_back(sc.first);
    book().devices[deviceId].set_count = 0;
  }
  // The default context's streams go, each after its work (CANN waits for it).
  for (aclrtStream s : made_in_default) {
    const aclError st = destroy_stream_checked(s, api, false);
    if (st != ACL_SUCCESS) return st;
  }
  book().devices[deviceId].generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's default binding ends
  if (this_thread_state().current_device == deviceId) unbind_context();
  return ACL_SUCCESS;
}

}  // extern "C"
