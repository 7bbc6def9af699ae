// SPDX-License-Identifier: Apache-2.0
// Device and context: the one process-wide host device (id 0), the books of
// live handles, aclInit / aclFinalize, the calling thread's device binding
// (aclrtSetDevice, which is also its default context) and device-wide
// synchronization.
#include <chrono>
#include <cstdint>
#include <mutex>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

keel::host::device& dev() {
  static keel::host::device* const device = new keel::host::device;
  return *device;
}

books& book() {
  static books* const b = new books;
  return *b;
}

bool bounded(std::int32_t timeout, const char* function, std::chrono::microseconds& budget) {
  if (timeout < -1) throw_rule(errc::invalid_parameter, function, "timeout must be -1 (forever) or non-negative ms");
  if (timeout == -1) return false;
  budget = std::chrono::milliseconds(timeout);
  return true;
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

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

// ---- devices --------------------------------------------------------------

aclError aclrtSetDevice(std::int32_t deviceId) {
  if (deviceId != 0)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice", "the emulation has one device, id 0");
  try {
    bind_default_context();
  } catch (const std::bad_alloc&) {
    return fail(ACL_ERROR_BAD_ALLOC, "aclrtSetDevice", "out of host memory");
  }
  return ACL_SUCCESS;
}
aclError aclrtResetDevice(std::int32_t deviceId) {
  if (deviceId != 0)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice", "the emulation has one device, id 0");
  {
    std::lock_guard<std::mutex> lock(book().m);
    if (book().set_count > 0) --book().set_count;
  }
  unbind_context();
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

}  // extern "C"
