// SPDX-License-Identifier: Apache-2.0
// Memory: device and pinned host allocations (checked against the books, so
// a foreign or double free is an error; each device counts its own bytes
// against its size), synchronous copies and memsets (refused during capture
// by the calling thread's capture mode), their stream-ordered forms, and the
// cross-device rules of copies.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

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

// The capture-mode rule for a call CANN lists as unsafe during capture
// (aclrtMemcpy, aclrtMemset, ...), with the calling thread's own mode
// (aclmdlRICaptureThreadExchangeMode, 15_model_running_instance_management.md):
// RELAXED: never refused; THREAD_LOCAL: refused only by a capture this thread
// began in a strict mode; GLOBAL (every thread's initial mode): also refused
// by another thread's GLOBAL capture. A RELAXED capture refuses nothing.
void check_unsafe_call(const char* what) {
  cann_rules::check_unsafe(device_id(dev()), this_thread_state().capture_mode, what);
}

void check_size(std::size_t size, const char* function) {
  if (size == 0) throw_rule(errc::invalid_parameter, function, "size is 0");
  // Larger than any object can be (the aligned operator new would wrap while
  // rounding): the device has no such memory.
  if (size > static_cast<std::size_t>(PTRDIFF_MAX))
    throw_rule(errc::out_of_memory, function, "size " + std::to_string(size) + " is larger than any memory can be");
}

// Device memory: on the calling thread's current device, within its size.
void* allocate_device(std::size_t size, const char* function) {
  check_size(size, function);
  const std::int32_t device = this_thread_state().current_device;
  {
    std::lock_guard<std::mutex> lock(book().m);
    const std::size_t used = book().devices[device].memory_in_use;
    if (size > device_memory_size() - used)
      throw_rule(errc::out_of_memory, function,
                 "device " + std::to_string(device) + " has " + std::to_string(device_memory_size() - used) +
                     " bytes free, " + std::to_string(size) + " asked (KEEL_ACL_EMULATION_DEVICE_MEMORY sets its size)");
    book().devices[device].memory_in_use += size;  // reserved before the host allocates
  }
  void* p = nullptr;
  try {
    p = ::operator new(size, std::align_val_t{64});
    std::lock_guard<std::mutex> lock(book().m);
    book().device_memory.emplace(reinterpret_cast<std::uintptr_t>(p), books::device_allocation{size, device});
  } catch (...) {
    if (p != nullptr) ::operator delete(p, std::align_val_t{64});
    std::lock_guard<std::mutex> lock(book().m);
    book().devices[device].memory_in_use -= size;
    throw;
  }
  return p;
}
void release_device(void* p, const char* function) {
  if (p == nullptr) throw_rule(errc::null_parameter, function, "pointer is null");
  {
    std::lock_guard<std::mutex> lock(book().m);
    const auto it = book().device_memory.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == book().device_memory.end())
      throw_rule(errc::invalid_parameter, function, "pointer was not allocated by aclrtMalloc");
    book().devices[it->second.device].memory_in_use -= it->second.size;
    book().device_memory.erase(it);
  }
  ::operator delete(p, std::align_val_t{64});
}

// The device whose aclrtMalloc memory holds [p, p + count), or -1 (host memory).
std::int32_t device_holding(const void* p, std::size_t count) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(book().m);
  auto it = book().device_memory.upper_bound(at);
  if (it == book().device_memory.begin()) return -1;
  --it;
  const bool inside = at - it->first < it->second.size && count <= it->second.size - (at - it->first);
  return inside ? it->second.device : -1;
}

// CANN's rules for a copy between two devices' memory (11-03, aclrtMemcpy:
// enable the peer access first; dev_guide/05: a copy's stream is on the
// current device): the device doing the copy (`by`: the current device, or
// the stream's) holds the source or the destination, and may access the
// other's device (aclrtDeviceEnablePeerAccess from `by` to it).
void check_cross_device(const void* dst, const void* src, std::size_t count, std::int32_t by) {
  if (count == 0) return;
  const std::int32_t to = device_holding(dst, count), from = device_holding(src, count);
  if (to < 0 || from < 0 || to == from) return;
  if (by != to && by != from)
    throw_status(ACL_ERROR_RT_STREAM_CONTEXT, "a copy from device " + std::to_string(from) + " to device " +
                                                  std::to_string(to) + " is made on one of them, not on device " +
                                                  std::to_string(by));
  const std::int32_t other = by == to ? from : to;
  if (!peer_enabled(by, other))
    throw_status(ACL_ERROR_INVALID_PARAM, "a copy between device " + std::to_string(from) + " and device " +
                                              std::to_string(to) + " needs peer access from device " +
                                              std::to_string(by) + " to device " + std::to_string(other) +
                                              " (aclrtDeviceEnablePeerAccess)");
}

void* allocate(std::unordered_map<void*, std::size_t>& where, std::size_t size, const char* function) {
  check_size(size, function);
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
}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtMalloc(void** devPtr, std::size_t size, aclrtMemMallocPolicy) {
  return guarded("aclrtMalloc", call::other, [&] {
    require(devPtr, "aclrtMalloc", "devPtr");
    *devPtr = allocate_device(size, "aclrtMalloc");
  });
}
aclError aclrtFree(void* devPtr) {
  return guarded("aclrtFree", call::other, [&] { release_device(devPtr, "aclrtFree"); });
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
    check_cross_device(dst, src, count, this_thread_state().current_device);
    check_unsafe_call("a synchronous copy");
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
    hb::stream_handle s = current_device_stream(stream, "aclrtMemcpyAsync");
    check_cross_device(dst, src, count, stream_device(s));
    cann_rules::check_issue(stream);
    hb::copy_async(s, dst, src, count, k, nullptr, nullptr);
    cann_rules::note_task(stream);
  });
}
aclError aclrtMemset(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count) {
  return guarded("aclrtMemset", call::other, [&] {
    require(devPtr, "aclrtMemset", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemset", "count exceeds maxCount");
    check_unsafe_call("a synchronous memset");
    std::memset(devPtr, value, count);
  });
}
aclError aclrtMemsetAsync(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count,
                          aclrtStream stream) {
  return guarded("aclrtMemsetAsync", call::other, [&] {
    require(devPtr, "aclrtMemsetAsync", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemsetAsync", "count exceeds maxCount");
    // A memset task of its own (captured as one, like aclrtMemcpyAsync's copy).
    hb::stream_handle s = stream_of(stream, "aclrtMemsetAsync");
    cann_rules::check_issue(stream);
    hb::memset_async(s, devPtr, value, count, nullptr);
    cann_rules::note_task(stream);
  });
}
}  // extern "C"
