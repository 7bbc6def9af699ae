// SPDX-License-Identifier: Apache-2.0
// Stream memory operations (11-09_stream_memory_operation.md): aclrtValueWrite
// writes a 64-bit value in stream order; aclrtValueWait holds its stream
// until the 64-bit value at an address meets a condition (another stream's
// aclrtValueWrite, or the host, makes it true). Both are tasks of their
// stream: captured like any task, and a null stream is the current context's
// default stream.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

std::uint64_t* value_address(void* devAddr) {
  if (devAddr == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "devAddr is null");
  if (reinterpret_cast<std::uintptr_t>(devAddr) % alignof(std::uint64_t) != 0)
    throw_status(ACL_ERROR_INVALID_PARAM, "devAddr is not 8-byte aligned");
  return static_cast<std::uint64_t*>(devAddr);
}

// CANN's four conditions, on the value now at the address.
bool condition_met(std::uint64_t now, std::uint64_t value, std::uint32_t flag) noexcept {
  switch (flag) {
    case ACL_STREAM_WAIT_VALUE_GEQ: return static_cast<std::int64_t>(now - value) >= 0;
    case ACL_STREAM_WAIT_VALUE_EQ: return now == value;
    case ACL_STREAM_WAIT_VALUE_AND: return (now & value) != 0;
    default: return ~(now | value) != 0;  // ACL_STREAM_WAIT_VALUE_NOR
  }
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtValueWrite(void* devAddr, std::uint64_t value, std::uint32_t flag, aclrtStream stream) {
  static constexpr const char* api = "aclrtValueWrite";
  return guarded(api, call::other, [&] {
    std::uint64_t* at = value_address(devAddr);
    if (flag != 0) throw_status(ACL_ERROR_INVALID_PARAM, "flag is reserved and must be 0");
    const aclrtStream target = stream_or_default(stream, api);
    hb::stream_handle s = current_device_stream(target, api);
    cann_rules::check_issue(target);
    hb::launch_host(s, [at, value] { __atomic_store_n(at, value, __ATOMIC_RELEASE); });
    cann_rules::note_task(target);
  });
}

aclError aclrtValueWait(void* devAddr, std::uint64_t value, std::uint32_t flag, aclrtStream stream) {
  static constexpr const char* api = "aclrtValueWait";
  return guarded(api, call::other, [&] {
    std::uint64_t* at = value_address(devAddr);
    if (flag > ACL_STREAM_WAIT_VALUE_NOR)
      throw_status(ACL_ERROR_INVALID_PARAM, "flag " + std::to_string(flag) + " is not an ACL_STREAM_WAIT_VALUE_* condition");
    const aclrtStream target = stream_or_default(stream, api);
    hb::stream_handle s = current_device_stream(target, api);
    cann_rules::check_issue(target);
    // The stream's worker holds the stream here, as the device's wait task
    // does; it polls, backing off to short sleeps, since the writer may be
    // the host or another stream and signals nothing.
    hb::launch_host(s, [at, value, flag] {
      for (unsigned spins = 0; !condition_met(__atomic_load_n(at, __ATOMIC_ACQUIRE), value, flag); ++spins) {
        if (spins < 64) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    });
    cann_rules::note_task(target);
  });
}

}  // extern "C"
