// SPDX-License-Identifier: Apache-2.0
// keel's stream-ordered memory pool on the ACL backend: keel's books (size
// classes, stream-ordered reuse through ACL events, captures, statistics)
// over an aclrtMemPool of the pool's own when the runtime has CANN's
// stream-ordered allocation (keel/acl/detail/runtime_pool.hpp), else over
// aclrtMalloc / aclrtMallocHost; and a pool registered as a stream's allocator through CANN's own
// per-stream allocators (aclrtAllocatorRegister), so aclnn operators take
// their internal memory from it.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

#include "keel/acl/backend.hpp"
#include "keel/runtime/memory_pool.hpp"
#include "keel/runtime/stream_allocator.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/// A stream-ordered memory pool on an ACL device (see keel::basic_memory_pool).
using memory_pool = ::keel::basic_memory_pool<backend>;
/// A non-owning view of an ACL memory pool.
using memory_pool_ref = ::keel::basic_memory_pool_ref<backend>;
/// An allocation from an ACL memory pool.
using pool_buffer = ::keel::basic_pool_buffer<backend>;
/// A pool registered as an ACL stream's allocator (aclrtAllocatorRegister), RAII.
using allocator_registration = ::keel::basic_allocator_registration<backend>;

/// @cond
namespace detail {
// The allocator object CANN's allocator description points at: allocations
// come from the pool, ordered on the registered stream.
struct registered_allocator {
  memory_pool_ref pool;
  stream_ref stream;
  allocator_desc_handle desc = nullptr;
  const api* functions = nullptr;

  static void* alloc(void* self, std::size_t size) noexcept {
    auto* a = static_cast<registered_allocator*>(self);
    if (a->pool.owner_destroyed()) return nullptr;  // a registration outliving its pool hands out nothing
    try {
      return new pool_buffer(a->pool.allocate(a->stream, size));
    } catch (...) {
      return nullptr;  // CANN: a null block is a failed allocation
    }
  }
  static void free(void*, void* block) noexcept { delete static_cast<pool_buffer*>(block); }
  static void* advise(void* self, std::size_t size, void*) noexcept { return alloc(self, size); }
  static void* address(void* block) noexcept { return static_cast<pool_buffer*>(block)->data(); }
};
struct registered_allocators {
  std::mutex m;
  std::unordered_map<backend::stream_handle, std::unique_ptr<registered_allocator>> by_stream;
  static registered_allocators& get() {
    static registered_allocators* const r = new registered_allocators;
    return *r;
  }
};
}  // namespace detail
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl

KEEL_BEGIN_NAMESPACE

/**
 * @brief On ACL a registered pool is also the stream's allocator for the
 * runtime (aclrtAllocatorCreateDesc ... aclrtAllocatorRegister), so the aclnn
 * operators on the stream take their internal memory from it; dropping the
 * registration unregisters it (aclrtAllocatorUnregister) and destroys the
 * description. A runtime without these functions gets keel's registry only.
 */
template <>
struct stream_allocator_hooks<acl::backend> {
  /// Registers @p pool with the runtime for @p stream. @throws keel::error with the ACL status.
  static void attach(acl::stream_ref stream, acl::memory_pool_ref pool) {
    const acl::api& api = stream.device().functions();
    if (!api.aclrtAllocatorRegister) return;
    auto a = std::make_unique<acl::detail::registered_allocator>();
    a->pool = pool;
    a->stream = stream;
    a->functions = &api;
    a->desc = api.aclrtAllocatorCreateDesc();
    if (a->desc == nullptr)
      throw_error(errc::out_of_memory, "aclrtAllocatorCreateDesc", "the runtime made no allocator description");
    auto drop_desc = make_scope_fail([&]() noexcept { api.aclrtAllocatorDestroyDesc(a->desc); });
    acl::device& dev = stream.device();
    dev.check(api.aclrtAllocatorSetObjToDesc(a->desc, a.get()), "aclrtAllocatorSetObjToDesc");
    dev.check(api.aclrtAllocatorSetAllocFuncToDesc(a->desc, &acl::detail::registered_allocator::alloc),
              "aclrtAllocatorSetAllocFuncToDesc");
    dev.check(api.aclrtAllocatorSetFreeFuncToDesc(a->desc, &acl::detail::registered_allocator::free),
              "aclrtAllocatorSetFreeFuncToDesc");
    dev.check(api.aclrtAllocatorSetAllocAdviseFuncToDesc(a->desc, &acl::detail::registered_allocator::advise),
              "aclrtAllocatorSetAllocAdviseFuncToDesc");
    dev.check(api.aclrtAllocatorSetGetAddrFromBlockFuncToDesc(a->desc, &acl::detail::registered_allocator::address),
              "aclrtAllocatorSetGetAddrFromBlockFuncToDesc");
    dev.check(api.aclrtAllocatorRegister(stream.native_handle(), a->desc), "aclrtAllocatorRegister");
    auto& r = acl::detail::registered_allocators::get();
    std::lock_guard<std::mutex> lock(r.m);
    r.by_stream[keel::detail::handle_of(stream)] = std::move(a);
  }
  /// Unregisters it and destroys the description. Throws: nothing (failures go to keel's error handler).
  static void detach(acl::stream_ref stream) noexcept {
    std::unique_ptr<acl::detail::registered_allocator> a;
    {
      auto& r = acl::detail::registered_allocators::get();
      std::lock_guard<std::mutex> lock(r.m);
      auto it = r.by_stream.find(keel::detail::handle_of(stream));
      if (it == r.by_stream.end()) return;
      a = std::move(it->second);
      r.by_stream.erase(it);
    }
    const acl::status unregistered = a->functions->aclrtAllocatorUnregister.get()(stream.native_handle());
    if (unregistered != 0) report_error(acl::make_status_code(unregistered), "aclrtAllocatorUnregister", "the registration was dropped");
    a->functions->aclrtAllocatorDestroyDesc.get()(a->desc);
  }
};

KEEL_END_NAMESPACE  // namespace keel
