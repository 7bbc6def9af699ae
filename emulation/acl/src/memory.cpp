// SPDX-License-Identifier: Apache-2.0
// Memory: device and pinned host allocations (checked against the books, so
// a foreign or double free is an error), synchronous copies and memsets
// (refused during capture by the calling thread's capture mode) and their
// stream-ordered forms.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>

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
void check_unsafe_call(const char* api, const char* what) {
  const int mode = this_thread_state().capture_mode;
  const keel::capture_mode own = mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED        ? keel::capture_mode::relaxed
                                 : mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL ? keel::capture_mode::thread_local_
                                                                                  : keel::capture_mode::global;
  hb::check_unsafe_device(dev(), own, api, what);  // the checked layer's rule, with this thread's own mode
}

void* allocate(std::unordered_map<void*, std::size_t>& where, std::size_t size, const char* function) {
  if (size == 0) throw_rule(errc::invalid_parameter, function, "size is 0");
  // Larger than any object can be (the aligned operator new would wrap while
  // rounding): the device has no such memory.
  if (size > static_cast<std::size_t>(PTRDIFF_MAX))
    throw_rule(errc::out_of_memory, function, "size " + std::to_string(size) + " is larger than any memory can be");
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
    *devPtr = allocate(book().device_memory, size, "aclrtMalloc");
  });
}
aclError aclrtFree(void* devPtr) {
  return guarded("aclrtFree", call::other, [&] { release(book().device_memory, devPtr, "aclrtFree"); });
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
    check_unsafe_call("aclrtMemcpy", "a synchronous copy");
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
    hb::copy_async(stream_of(stream, "aclrtMemcpyAsync"), dst, src, count, k, nullptr, nullptr);
  });
}
aclError aclrtMemset(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count) {
  return guarded("aclrtMemset", call::other, [&] {
    require(devPtr, "aclrtMemset", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemset", "count exceeds maxCount");
    check_unsafe_call("aclrtMemset", "a synchronous memset");
    std::memset(devPtr, value, count);
  });
}
aclError aclrtMemsetAsync(void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count,
                          aclrtStream stream) {
  return guarded("aclrtMemsetAsync", call::other, [&] {
    require(devPtr, "aclrtMemsetAsync", "devPtr");
    if (count > maxCount) throw_rule(errc::invalid_parameter, "aclrtMemsetAsync", "count exceeds maxCount");
    // A memset task of its own (captured as one, like aclrtMemcpyAsync's copy).
    hb::memset_async(stream_of(stream, "aclrtMemsetAsync"), devPtr, value, count, nullptr);
  });
}
}  // extern "C"
