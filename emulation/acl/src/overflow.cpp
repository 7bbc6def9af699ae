// SPDX-License-Identifier: Apache-2.0
// Floating-point overflow: aclrtSetDeviceSatMode, aclrtGetDeviceSatMode
// (04_device_management.md), aclrtSetStreamOverflowSwitch,
// aclrtGetStreamOverflowSwitch (06_stream_management.md),
// aclrtGetOverflowStatus and aclrtResetOverflowStatus.
//
// CANN's documented behaviour: each device has a result mode, Inf/NaN by
// default on the A2 series (ACL_RT_OVERFLOW_MODE_SATURATION or
// ACL_RT_OVERFLOW_MODE_INFNAN may be set; ACL_ERROR_INVALID_PARAM for
// another value); a stream's switch is 0 or 1 and holds for the tasks issued
// after it is set; the overflow status is the process's on the A2 series,
// read into 64 bytes of device memory and reset by tasks in stream order.
// The emulation's choices: an overflowing task is one of the emulation's
// aclnn operators whose floating-point result holds an infinity or a NaN,
// issued to a stream whose switch was on; the status is 64 bytes whose first
// uint32 is 1 after such a task and 0 otherwise; the operators' results are
// IEEE's in either mode (saturation mode does not clamp them).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "detail/overflow.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

constexpr std::size_t status_size = 64;

struct overflow_books {
  std::mutex m;
  std::unordered_map<void*, std::uint32_t> switches;  // streams whose switch was set
  std::atomic<int> modes[max_devices];
  std::atomic<std::uint32_t> status{0};  // the process's overflow status
  overflow_books() {
    for (auto& mode : modes) mode.store(ACL_RT_OVERFLOW_MODE_INFNAN, std::memory_order_relaxed);
  }
};
overflow_books& overflow() {
  static auto* b = new overflow_books;  // as the other books: never destroyed
  return *b;
}

template <class Bits>
bool any_non_finite(const keel::ops::tensor& t, Bits exponent) {
  const std::size_t n = t.dim();
  std::int64_t index[16] = {};
  if (n > 16) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (t.size(i) == 0) return false;
  const char* first = t.first();
  for (;;) {
    std::int64_t at = 0;
    for (std::size_t i = 0; i < n; ++i) at += index[i] * t.stride(i);
    Bits bits = 0;
    std::memcpy(&bits, first + at * static_cast<std::int64_t>(sizeof(Bits)), sizeof bits);
    if ((bits & exponent) == exponent) return true;
    std::size_t d = n;
    for (; d > 0; --d) {
      if (++index[d - 1] < t.size(d - 1)) break;
      index[d - 1] = 0;
    }
    if (d == 0) return false;
  }
}

bool overflowed(const keel::ops::tensor& t) {
  switch (t.type()) {
    case keel::ops::dtype::float32: return any_non_finite<std::uint32_t>(t, 0x7f800000u);
    case keel::ops::dtype::float16: return any_non_finite<std::uint16_t>(t, std::uint16_t{0x7c00});
    case keel::ops::dtype::bfloat16: return any_non_finite<std::uint16_t>(t, std::uint16_t{0x7f80});
    default: return false;  // integer results do not overflow into a status
  }
}

std::uint32_t switch_of(aclrtStream stream) {
  overflow_books& b = overflow();
  std::lock_guard<std::mutex> lock(b.m);
  const auto it = b.switches.find(stream);
  return it == b.switches.end() ? 0 : it->second;
}

}  // namespace

void check_overflow_after(aclrtStream stream, hb::stream_handle s, const keel::ops::tensor& out) {
  if (switch_of(stream) == 0) return;
  hb::launch_host(s, [out] {
    if (overflowed(out)) overflow().status.store(1, std::memory_order_release);
  });
}

void forget_overflow_switch(aclrtStream stream) noexcept {
  overflow_books& b = overflow();
  std::lock_guard<std::mutex> lock(b.m);
  b.switches.erase(stream);
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode) {
  static constexpr const char* api = "aclrtSetDeviceSatMode";
  return guarded(api, call::other, [&] {
    const int m = raw(mode);
    if (m != ACL_RT_OVERFLOW_MODE_SATURATION && m != ACL_RT_OVERFLOW_MODE_INFNAN)
      throw_status(ACL_ERROR_INVALID_PARAM, "mode " + std::to_string(m) +
                                                " is not ACL_RT_OVERFLOW_MODE_SATURATION or ACL_RT_OVERFLOW_MODE_INFNAN");
    overflow().modes[device_id(dev())].store(m, std::memory_order_relaxed);
  });
}

aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode* mode) {
  static constexpr const char* api = "aclrtGetDeviceSatMode";
  return guarded(api, call::other, [&] {
    require(mode, api, "mode");
    *mode = static_cast<aclrtFloatOverflowMode>(overflow().modes[device_id(dev())].load(std::memory_order_relaxed));
  });
}

aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, std::uint32_t flag) {
  static constexpr const char* api = "aclrtSetStreamOverflowSwitch";
  return guarded(api, call::other, [&] {
    if (flag > 1) throw_status(ACL_ERROR_INVALID_PARAM, "flag " + std::to_string(flag) + " is not 0 (off) or 1 (on)");
    stream_of(stream, api);
    overflow_books& b = overflow();
    std::lock_guard<std::mutex> lock(b.m);
    b.switches[stream] = flag;
  });
}

aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, std::uint32_t* flag) {
  static constexpr const char* api = "aclrtGetStreamOverflowSwitch";
  return guarded(api, call::other, [&] {
    require(flag, api, "flag");
    stream_of(stream, api);
    *flag = switch_of(stream);
  });
}

aclError aclrtGetOverflowStatus(void* outputAddr, std::size_t outputSize, aclrtStream stream) {
  static constexpr const char* api = "aclrtGetOverflowStatus";
  return guarded(api, call::other, [&] {
    if (outputAddr == nullptr) throw_rule(errc::null_parameter, api, "outputAddr is null");
    if (outputSize != status_size)
      throw_status(ACL_ERROR_INVALID_PARAM, "outputSize " + std::to_string(outputSize) + " is not 64 bytes");
    hb::stream_handle s = current_device_stream(stream, api);
    hb::launch_host(s, [outputAddr] {
      unsigned char status[status_size] = {};
      const std::uint32_t flag = overflow().status.load(std::memory_order_acquire);
      std::memcpy(status, &flag, sizeof flag);
      std::memcpy(outputAddr, status, sizeof status);
    });
  });
}

aclError aclrtResetOverflowStatus(aclrtStream stream) {
  static constexpr const char* api = "aclrtResetOverflowStatus";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = current_device_stream(stream, api);
    hb::launch_host(s, [] { overflow().status.store(0, std::memory_order_release); });
  });
}

}  // extern "C"
