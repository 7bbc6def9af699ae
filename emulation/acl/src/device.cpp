// SPDX-License-Identifier: Apache-2.0
// Devices: the emulated devices (KEEL_ACL_EMULATION_DEVICES of them, each a
// host device of its own), the books of live handles, aclInit / aclFinalize,
// the calling thread's device binding (aclrtSetDevice, which is also its
// default context), device-wide synchronization and peer access between
// devices (04_device_management.md, dev_guide/05_multi_device_programming.md).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include <unistd.h>

#include "detail/capture_rules.hpp"
#include "detail/exception.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

std::int32_t device_count() noexcept {
  static const std::int32_t count = [] {
    const char* text = std::getenv("KEEL_ACL_EMULATION_DEVICES");
    if (text == nullptr || *text == '\0') return std::int32_t{1};
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    return *end == '\0' && n >= 1 && n <= max_devices ? static_cast<std::int32_t>(n) : std::int32_t{1};
  }();
  return count;
}

std::size_t device_memory_size() noexcept {
  static const std::size_t size = [] {
    const char* text = std::getenv("KEEL_ACL_EMULATION_DEVICE_MEMORY");
    if (text != nullptr && *text != '\0') {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(text, &end, 10);
      if (*end == '\0' && n > 0) return static_cast<std::size_t>(n);
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return static_cast<std::size_t>(PTRDIFF_MAX);
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
  }();
  return size;
}

namespace {
std::array<std::atomic<keel::host::device*>, max_devices>& device_slots() {
  static auto* const slots = new std::array<std::atomic<keel::host::device*>, max_devices>{};
  return *slots;
}
}  // namespace

keel::host::device& dev(std::int32_t id) {
  std::atomic<keel::host::device*>& slot = device_slots()[static_cast<std::size_t>(id)];
  keel::host::device* d = slot.load(std::memory_order_acquire);
  if (d != nullptr) return *d;
  static std::mutex making;
  std::lock_guard<std::mutex> lock(making);
  d = slot.load(std::memory_order_acquire);
  if (d == nullptr) {
    auto made = std::make_unique<keel::host::device>();
    report_task_failures(*made, id);
    d = made.release();  // never destroyed (see state.hpp)
    slot.store(d, std::memory_order_release);
  }
  return *d;
}

keel::host::device& dev() {
  const std::int32_t current = this_thread_state().current_device;
  return dev(current < 0 ? 0 : current);
}

std::int32_t device_id(const keel::host::device& d) noexcept {
  for (std::int32_t i = 0; i < max_devices; ++i)
    if (device_slots()[static_cast<std::size_t>(i)].load(std::memory_order_acquire) == &d) return i;
  return -1;
}

books& book() {
  static books* const b = new books;
  return *b;
}

aclError invalid_device(const char* function, std::int32_t id) {
  return fail(ACL_ERROR_RT_INVALID_DEVICEID, function,
              "device " + std::to_string(id) + " is outside [0, " + std::to_string(device_count()) +
                  ") (KEEL_ACL_EMULATION_DEVICES sets how many devices the emulation has)");
}

void check_peer(const char* function, std::int32_t self, std::int32_t peer) {
  if (!valid_device(peer))
    throw_status(ACL_ERROR_RT_INVALID_DEVICEID, "peer device " + std::to_string(peer) + " is outside [0, " +
                                                    std::to_string(device_count()) + ")");
  if (peer == self)
    throw_status(ACL_ERROR_INVALID_PARAM, std::string("the peer is the current device ") + std::to_string(self) +
                                              " (" + function + " takes another device)");
}

bool peer_enabled(std::int32_t from, std::int32_t to) {
  std::lock_guard<std::mutex> lock(book().m);
  return book().devices[from].peer_access[to];
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
  if (!valid_device(deviceId)) return invalid_device("aclrtSetDevice", deviceId);
  try {
    dev(deviceId);
    bind_default_context(deviceId);
  } catch (const std::bad_alloc&) {
    return fail(ACL_ERROR_BAD_ALLOC, "aclrtSetDevice", "out of host memory");
  } catch (const std::system_error&) {
    return fail(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtSetDevice", "the device's worker threads could not start");
  }
  return ACL_SUCCESS;
}
aclError aclrtResetDevice(std::int32_t deviceId) {
  if (!valid_device(deviceId)) return invalid_device("aclrtResetDevice", deviceId);
  {
    std::lock_guard<std::mutex> lock(book().m);
    std::uint64_t& set = book().devices[deviceId].set_count;
    if (set > 0) --set;
  }
  // The thread lets go of its context only if it is on the device reset.
  if (this_thread_state().current_device == deviceId) unbind_context();
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
  *count = static_cast<std::uint32_t>(device_count());
  return ACL_SUCCESS;
}

// ---- peer access (one direction per call, from the current device) --------

aclError aclrtDeviceCanAccessPeer(std::int32_t* canAccessPeer, std::int32_t deviceId, std::int32_t peerDeviceId) {
  static constexpr const char* api = "aclrtDeviceCanAccessPeer";
  if (canAccessPeer == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "canAccessPeer is null");
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  if (!valid_device(peerDeviceId)) return invalid_device(api, peerDeviceId);
  if (deviceId == peerDeviceId) return fail(ACL_ERROR_INVALID_PARAM, api, "deviceId and peerDeviceId are the same device");
  *canAccessPeer = 1;  // the emulated devices share one host: every pair can
  return ACL_SUCCESS;
}
aclError aclrtDeviceEnablePeerAccess(std::int32_t peerDeviceId, std::uint32_t flags) {
  static constexpr const char* api = "aclrtDeviceEnablePeerAccess";
  return guarded(api, call::other, [&] {
    const std::int32_t self = this_thread_state().current_device;
    check_peer(api, self, peerDeviceId);
    if (flags != 0) throw_status(ACL_ERROR_INVALID_PARAM, "flags is reserved and must be 0");
    std::lock_guard<std::mutex> lock(book().m);
    book().devices[self].peer_access[peerDeviceId] = true;
  });
}
aclError aclrtDeviceDisablePeerAccess(std::int32_t peerDeviceId) {
  static constexpr const char* api = "aclrtDeviceDisablePeerAccess";
  return guarded(api, call::other, [&] {
    const std::int32_t self = this_thread_state().current_device;
    check_peer(api, self, peerDeviceId);
    std::lock_guard<std::mutex> lock(book().m);
    bool& enabled = book().devices[self].peer_access[peerDeviceId];
    if (!enabled)
      throw_status(ACL_ERROR_INVALID_PARAM, "access from device " + std::to_string(self) + " to device " +
                                                std::to_string(peerDeviceId) + " is not enabled");
    enabled = false;
  });
}
aclError aclrtDevicePeerAccessStatus(std::int32_t deviceId, std::int32_t peerDeviceId, std::int32_t* status) {
  static constexpr const char* api = "aclrtDevicePeerAccessStatus";
  if (status == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "status is null");
  // CANN: an id outside [0, count) reads 0 or fails with ACL_ERROR_RT_PARAM_INVALID.
  if (!valid_device(deviceId) || !valid_device(peerDeviceId))
    return fail(ACL_ERROR_RT_PARAM_INVALID, api, "a device id is outside [0, aclrtGetDeviceCount)");
  std::lock_guard<std::mutex> lock(book().m);
  *status = book().devices[deviceId].peer_access[peerDeviceId] ? 1 : 0;
  return ACL_SUCCESS;
}
aclError aclrtSynchronizeDeviceWithTimeout(std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeDeviceWithTimeout";
  return guarded(api, call::stream_sync, [&] {
    std::chrono::microseconds budget{};
    cann_rules::check_unsafe(device_id(dev()), this_thread_state().capture_mode, "synchronizing the device");
    if (bounded(timeout, api, budget)) {
      hb::synchronize_device_for(dev(), budget);
    } else {
      hb::synchronize_device(dev());
    }
  });
}
aclError aclrtSynchronizeDevice(void) {
  return guarded("aclrtSynchronizeDevice", call::other, [] {
    cann_rules::check_unsafe(device_id(dev()), this_thread_state().capture_mode, "synchronizing the device");
    hb::synchronize_device(dev());
  });
}

}  // extern "C"
