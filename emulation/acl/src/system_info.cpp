// SPDX-License-Identifier: Apache-2.0
// What the emulated system says of itself (24_other_APIs.md,
// 03_runtime_configuration.md, 04_device_management.md, 13_exception_handling.md):
// the CANN package versions, the run mode (a host program: ACL_HOST), the
// SoC and device attributes, device memory, capabilities, and the
// hardware-error report. Every emulated device is one model, described in
// docs/emulation.md: the SoC name and core counts below are the emulation's
// choice, the memory size that of device_memory_size().
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

constexpr const char* kSocName = "Ascend910B4";
constexpr const char* kVersion = "8.5.0";
// CANN's version number weighs major, minor and patch (24_other_APIs.md):
// 8.0.0 reads 8000000.
constexpr std::int32_t kVersionNum = 8 * 1000000 + 5 * 10000 + 0 * 100;
constexpr std::int64_t kAiCores = 20, kCubeCores = 20, kVectorCores = 40, kAiCpus = 6;
constexpr std::int64_t kL2CacheBytes = 96LL * 1024 * 1024;

// The process's resource limits per device (aclrtSetDeviceResLimit): cube
// and vector cores; 0 is no limit (the device's own counts).
struct resource_limits {
  std::mutex m;
  std::uint32_t cores[max_devices][2] = {};
};
resource_limits& limits() {
  static resource_limits* const l = new resource_limits;  // never destroyed, as book()
  return *l;
}
std::uint32_t hardware_cores(int type) noexcept {
  return static_cast<std::uint32_t>(type == ACL_RT_DEV_RES_CUBE_CORE ? kCubeCores : kVectorCores);
}
std::uint32_t core_limit(std::int32_t device, int type) {
  std::lock_guard<std::mutex> lock(limits().m);
  const std::uint32_t set = limits().cores[device][type];
  return set != 0 ? set : hardware_cores(type);
}
void check_limit_type(int type) {
  if (type != ACL_RT_DEV_RES_CUBE_CORE && type != ACL_RT_DEV_RES_VECTOR_CORE)
    throw_status(ACL_ERROR_INVALID_PARAM, "unknown aclrtDevResLimitType " + std::to_string(type));
}

bool known_package(const char* name) {
  for (const char* p : {"runtime", "cann", "driver", "firmware"})
    if (std::strcmp(name, p) == 0) return true;
  return false;
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclsysGetVersionStr(char* pkgName, char* versionStr) {
  static constexpr const char* api = "aclsysGetVersionStr";
  if (pkgName == nullptr || versionStr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  if (!known_package(pkgName))
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string("no package \"") + pkgName + "\" (the emulation knows runtime, cann, driver, firmware)");
  std::strncpy(versionStr, kVersion, ACL_PKG_VERSION_MAX_SIZE - 1);
  versionStr[ACL_PKG_VERSION_MAX_SIZE - 1] = '\0';
  return ACL_SUCCESS;
}
aclError aclsysGetVersionNum(char* pkgName, std::int32_t* versionNum) {
  static constexpr const char* api = "aclsysGetVersionNum";
  if (pkgName == nullptr || versionNum == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  if (!known_package(pkgName))
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string("no package \"") + pkgName + "\" (the emulation knows runtime, cann, driver, firmware)");
  *versionNum = kVersionNum;
  return ACL_SUCCESS;
}

// The program runs on the host, as every emulated program does.
aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode is null");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

const char* aclrtGetSocName(void) { return kSocName; }

aclError aclrtCheckArchCompatibility(const char* socVersion, std::int32_t* canCompatible) {
  static constexpr const char* api = "aclrtCheckArchCompatibility";
  if (socVersion == nullptr || canCompatible == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  *canCompatible = std::strcmp(socVersion, kSocName) == 0 ? 1 : 0;
  return ACL_SUCCESS;
}

aclError aclGetCannAttributeList(const aclCannAttr** cannAttrList, std::size_t* num) {
  static const aclCannAttr supported[] = {ACL_CANN_ATTR_INF_NAN, ACL_CANN_ATTR_BF16};
  if (cannAttrList == nullptr || num == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, "aclGetCannAttributeList", "a pointer is null");
  *cannAttrList = supported;
  *num = sizeof supported / sizeof supported[0];
  return ACL_SUCCESS;
}
// INF/NaN mode and bf16 are what keel's reference operators compute; the
// emulation compiles no kernel, so just-in-time compilation is absent.
aclError aclGetCannAttribute(aclCannAttr cannAttr, std::int32_t* value) {
  static constexpr const char* api = "aclGetCannAttribute";
  if (value == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "value is null");
  switch (raw(cannAttr)) {
    case ACL_CANN_ATTR_INF_NAN:
    case ACL_CANN_ATTR_BF16: *value = 1; return ACL_SUCCESS;
    case ACL_CANN_ATTR_JIT_COMPILE: *value = 0; return ACL_SUCCESS;
    default: return fail(ACL_ERROR_INVALID_PARAM, api, "unknown aclCannAttr " + std::to_string(raw(cannAttr)));
  }
}

aclError aclrtGetDeviceInfo(std::uint32_t deviceId, aclrtDevAttr attr, std::int64_t* value) {
  static constexpr const char* api = "aclrtGetDeviceInfo";
  if (value == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "value is null");
  if (deviceId >= static_cast<std::uint32_t>(device_count()))
    return invalid_device(api, static_cast<std::int32_t>(deviceId));
  switch (raw(attr)) {
    case ACL_DEV_ATTR_AICPU_CORE_NUM: *value = kAiCpus; break;
    case ACL_DEV_ATTR_AICORE_CORE_NUM: *value = kAiCores; break;
    case ACL_DEV_ATTR_CUBE_CORE_NUM: *value = kCubeCores; break;
    case ACL_DEV_ATTR_VECTOR_CORE_NUM: *value = kVectorCores; break;
    case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: *value = static_cast<std::int64_t>(device_memory_size()); break;
    case ACL_DEV_ATTR_L2_CACHE_SIZE: *value = kL2CacheBytes; break;
    case ACL_DEV_ATTR_SMP_ID: *value = 0; break;  // every emulated device is on this one host
    case ACL_DEV_ATTR_PHY_CHIP_ID: *value = deviceId; break;
    case ACL_DEV_ATTR_IS_VIRTUAL: *value = 0; break;
    default:
      return fail(ACL_ERROR_INVALID_PARAM, api,
                  "aclrtDevAttr " + std::to_string(raw(attr)) + " is not one the emulated device reports");
  }
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCapability(std::int32_t deviceId, aclrtDevFeatureType devFeatureType, std::int32_t* value) {
  static constexpr const char* api = "aclrtGetDeviceCapability";
  if (value == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "value is null");
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  switch (raw(devFeatureType)) {
    // A captured kernel task's arguments can be updated (aclmdlRITaskSetParams).
    case ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV: *value = 1; return ACL_SUCCESS;
    case ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV: *value = 0; return ACL_SUCCESS;
    default:
      return fail(ACL_ERROR_INVALID_PARAM, api, "unknown aclrtDevFeatureType " + std::to_string(raw(devFeatureType)));
  }
}

// The calling thread's share of its device: the process's limit
// (aclrtSetDeviceResLimit), else the whole device (the emulation has no
// stream-level limits).
aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, std::uint32_t* value) {
  static constexpr const char* api = "aclrtGetResInCurrentThread";
  return guarded(api, call::other, [&] {
    require(value, api, "value");
    check_limit_type(raw(type));
    *value = core_limit(this_thread_state().current_device, raw(type));
  });
}

// The process's limit on a device's cores (CANN: for the tasks issued after
// it). The emulation records it and reports it; the host's threads that run
// the device's work are not limited by it.
aclError aclrtSetDeviceResLimit(std::int32_t deviceId, aclrtDevResLimitType type, std::uint32_t value) {
  static constexpr const char* api = "aclrtSetDeviceResLimit";
  return guarded(api, call::other, [&] {
    if (!valid_device(deviceId)) throw_status(ACL_ERROR_RT_INVALID_DEVICEID, "device " + std::to_string(deviceId) +
                                                                                " is outside [0, aclrtGetDeviceCount)");
    check_limit_type(raw(type));
    if (value == 0 || value > hardware_cores(raw(type)))
      throw_status(ACL_ERROR_INVALID_PARAM, "value " + std::to_string(value) + " is outside [1, " +
                                                std::to_string(hardware_cores(raw(type))) + "], the device's cores");
    std::lock_guard<std::mutex> lock(limits().m);
    limits().cores[deviceId][raw(type)] = value;
  });
}
aclError aclrtGetDeviceResLimit(std::int32_t deviceId, aclrtDevResLimitType type, std::uint32_t* value) {
  static constexpr const char* api = "aclrtGetDeviceResLimit";
  return guarded(api, call::other, [&] {
    require(value, api, "value");
    if (!valid_device(deviceId)) throw_status(ACL_ERROR_RT_INVALID_DEVICEID, "device " + std::to_string(deviceId) +
                                                                                " is outside [0, aclrtGetDeviceCount)");
    check_limit_type(raw(type));
    *value = core_limit(deviceId, raw(type));
  });
}
aclError aclrtResetDeviceResLimit(std::int32_t deviceId) {
  static constexpr const char* api = "aclrtResetDeviceResLimit";
  return guarded(api, call::other, [&] {
    if (!valid_device(deviceId)) throw_status(ACL_ERROR_RT_INVALID_DEVICEID, "device " + std::to_string(deviceId) +
                                                                                " is outside [0, aclrtGetDeviceCount)");
    std::lock_guard<std::mutex> lock(limits().m);
    limits().cores[deviceId][0] = limits().cores[deviceId][1] = 0;
  });
}

// The current device's memory: every kind is the one pool aclrtMalloc draws from.
aclError aclrtGetMemInfo(aclrtMemAttr attr, std::size_t* free, std::size_t* total) {
  static constexpr const char* api = "aclrtGetMemInfo";
  return guarded(api, call::other, [&] {
    require(free, api, "free");
    require(total, api, "total");
    const int kind = raw(attr);
    if (kind < ACL_DDR_MEM || kind > ACL_MEM_P2P_HUGE1G)
      throw_status(ACL_ERROR_INVALID_PARAM, "unknown aclrtMemAttr " + std::to_string(kind));
    const std::int32_t device = this_thread_state().current_device;
    std::lock_guard<std::mutex> lock(book().m);
    *total = device_memory_size();
    *free = *total - book().devices[device].memory_in_use;
  });
}

// The emulated device is the host: usable as long as the process runs.
aclError aclrtQueryDeviceStatus(std::int32_t deviceId, aclrtDeviceStatus* deviceStatus) {
  static constexpr const char* api = "aclrtQueryDeviceStatus";
  if (deviceStatus == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "deviceStatus is null");
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  *deviceStatus = ACL_RT_DEVICE_STATUS_NORMAL;
  return ACL_SUCCESS;
}

// The emulated device's work runs on host threads, none on its cube, vector
// or AI CPU cores: each is idle (0 %); the device has vector cores, so the
// vector rate is not CANN's -1 for "no such unit"; memory utilisation is -1,
// as CANN documents for the versions that do not report it.
aclError aclrtGetDeviceUtilizationRate(std::int32_t deviceId, aclrtUtilizationInfo* utilizationInfo) {
  static constexpr const char* api = "aclrtGetDeviceUtilizationRate";
  if (utilizationInfo == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "utilizationInfo is null");
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  *utilizationInfo = aclrtUtilizationInfo{0, 0, 0, -1, nullptr};
  return ACL_SUCCESS;
}

// A device reports a hardware error (memory UCE, AI Core) it met; the
// emulated device meets none.
aclError aclrtGetErrorVerbose(std::int32_t deviceId, aclrtErrorInfo* errorInfo) {
  static constexpr const char* api = "aclrtGetErrorVerbose";
  if (errorInfo == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "errorInfo is null");
  if (!valid_device(deviceId)) return invalid_device(api, deviceId);
  std::memset(errorInfo, 0, sizeof *errorInfo);
  errorInfo->errorType = ACL_RT_NO_ERROR;
  return ACL_SUCCESS;
}

}  // extern "C"
