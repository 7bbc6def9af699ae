// SPDX-License-Identifier: Apache-2.0
// The emulation's stream-ordered memory allocation (CANN's SOMA,
// acl/acl_rt_memory_soma.h): each aclrtMemPool is a keel::host::memory_pool
// on the emulated device, so the host backend's memory accounting counts what
// a pool reserves, and releases are ordered on the freeing stream.
//
// Statuses (CANN's aclError list): a thread without a context gets what
// aclrtGetDevice reports (ACL_ERROR_RT_CONTEXT_NULL, 107002, with its recent
// message); a null or unknown pool, pointer or stream, a size of 0 or an
// unknown attribute ACL_ERROR_INVALID_PARAM (100000), a stream that is not a
// live aclrtStream what aclrtStreamQuery reports (ACL_ERROR_RT_INVALID_HANDLE,
// 107017); an allocation beyond the pool's maxSize or the device's memory
// ACL_ERROR_RT_MEMORY_ALLOCATION (207001).
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <unistd.h>

#include "acl/acl.h"
#include "keel/host/host.hpp"
#include "keel/host/memory_pool.hpp"
#include "detail/call_checks.hpp"

namespace {

using keel::acl_emulation::detail::context_status;
using keel::acl_emulation::detail::stream_status;

using hb = keel::host::backend;

// The emulated device has as much memory as this host. A larger request is
// the device's out of memory (207001), refused before anything is reserved:
// handed to the host's allocator it would throw std::bad_alloc in a plain
// build but abort a sanitizer build ("requested allocation size exceeds
// maximum supported size").
std::size_t emulated_device_memory() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return SIZE_MAX;  // unknown: the allocator decides
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

// The emulation's aclrtStream is a host stream's native handle: a view of it.
keel::host::stream_ref host_stream(aclrtStream stream) {
  const auto s = static_cast<hb::stream_handle>(stream);
  return keel::host::stream_ref(hb::device_of(s), s);
}

struct soma_pool {
  keel::host::memory_pool pool;
};
struct soma_allocation {
  keel::host::pool_buffer buffer;
};

struct soma_books {
  std::mutex m;
  std::unordered_set<soma_pool*> pools;
  std::unordered_map<void*, soma_allocation> allocations;
};
soma_books& soma_registry() {
  static soma_books* const b = new soma_books;  // never destroyed: clients may free from their static destructors
  return *b;
}



aclError status_of(const keel::error& e) {
  if (e.code() == keel::errc::out_of_memory) return ACL_ERROR_RT_MEMORY_ALLOCATION;
  if (e.code() == keel::errc::invalid_handle) return ACL_ERROR_RT_INVALID_HANDLE;
  if (e.code() == keel::errc::null_parameter || e.code() == keel::errc::invalid_parameter) return ACL_ERROR_INVALID_PARAM;
  return ACL_ERROR_RT_INTERNAL_ERROR;
}

template <class F>
aclError guarded(F&& body) noexcept {
  const aclError context = context_status();
  if (context != ACL_SUCCESS) return context;
  try {
    return body();
  } catch (const keel::error& e) {
    return status_of(e);
  } catch (const std::bad_alloc&) {
    return ACL_ERROR_BAD_ALLOC;
  } catch (...) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
}

// Caller holds soma_registry().m.
soma_pool* live(aclrtMemPool p) {
  auto* pool = static_cast<soma_pool*>(p);
  return p != nullptr && soma_registry().pools.count(pool) ? pool : nullptr;
}

// A C caller may pass any int where CANN takes an enum: read the bits.
int raw(const aclrtMemPoolAttr& attr) noexcept {
  int bits = 0;
  std::memcpy(&bits, &attr, sizeof bits < sizeof attr ? sizeof bits : sizeof attr);
  return bits;
}


}  // namespace

aclError aclrtMemPoolCreate(aclrtMemPool* memPool, const aclrtMemPoolProps* poolProps) {
  return guarded([&]() -> aclError {
    if (memPool == nullptr || poolProps == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (poolProps->allocType != ACL_MEM_ALLOCATION_TYPE_PINNED || poolProps->handleType != ACL_MEM_HANDLE_TYPE_NONE ||
        poolProps->location.type != ACL_MEM_LOCATION_TYPE_DEVICE)
      return ACL_ERROR_INVALID_PARAM;
    const std::int32_t device = static_cast<std::int32_t>(poolProps->location.id);
    if (poolProps->location.id >= static_cast<std::uint32_t>(keel::acl_emulation::detail::device_count()))
      return ACL_ERROR_RT_INVALID_DEVICEID;
    keel::pool_options options("aclrtMemPool");
    options.max_size = poolProps->maxSize;
    auto made = std::make_unique<soma_pool>(soma_pool{keel::host::memory_pool(keel::acl_emulation::detail::dev(device), options)});
    std::lock_guard<std::mutex> lock(soma_registry().m);
    soma_registry().pools.insert(made.get());
    *memPool = made.release();
    return ACL_SUCCESS;
  });
}

aclError aclrtMemPoolDestroy(const aclrtMemPool memPool) {
  return guarded([&]() -> aclError {
    std::unique_ptr<soma_pool> gone;
    {
      std::lock_guard<std::mutex> lock(soma_registry().m);
      soma_pool* p = live(memPool);
      if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
      soma_registry().pools.erase(p);
      gone.reset(p);
    }
    gone.reset();  // keel defers the pool's end while allocations still hold it
    return ACL_SUCCESS;
  });
}

aclError aclrtMemPoolSetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void* value) {
  return guarded([&]() -> aclError {
    if (value == nullptr) return ACL_ERROR_INVALID_PARAM;
    std::lock_guard<std::mutex> lock(soma_registry().m);
    soma_pool* p = live(memPool);
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    keel::pool_attributes a = p->pool.attributes();
    int flag = 0;
    std::uint64_t bytes = 0;
    switch (raw(attr)) {
      case ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      case ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC:
      case ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        std::memcpy(&flag, value, sizeof flag);
        if (flag != 0 && flag != 1) return ACL_ERROR_INVALID_PARAM;
        (raw(attr) == ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES ? a.follow_event_dependencies
         : raw(attr) == ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC    ? a.allow_opportunistic
                                                                     : a.allow_internal_dependencies) = flag == 1;
        p->pool.set_attributes(a);
        return ACL_SUCCESS;
      case ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD:
        std::memcpy(&bytes, value, sizeof bytes);
        a.release_threshold = static_cast<std::size_t>(bytes);
        p->pool.set_attributes(a);
        return ACL_SUCCESS;
      case ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH:
      case ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH:
        std::memcpy(&bytes, value, sizeof bytes);
        if (bytes != 0) return ACL_ERROR_INVALID_PARAM;  // only a restart of the mark
        p->pool.reset_high_water();
        return ACL_SUCCESS;
      default: return ACL_ERROR_INVALID_PARAM;  // unknown, or a read-only figure
    }
  });
}

aclError aclrtMemPoolGetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void* value) {
  return guarded([&]() -> aclError {
    if (value == nullptr) return ACL_ERROR_INVALID_PARAM;
    std::lock_guard<std::mutex> lock(soma_registry().m);
    soma_pool* p = live(memPool);
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    const keel::pool_attributes a = p->pool.attributes();
    const keel::pool_statistics st = p->pool.statistics();
    int flag = 0;
    std::uint64_t bytes = 0;
    switch (raw(attr)) {
      case ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES: flag = a.follow_event_dependencies; break;
      case ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC: flag = a.allow_opportunistic; break;
      case ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES: flag = a.allow_internal_dependencies; break;
      case ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD: bytes = a.release_threshold; break;
      case ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT: bytes = st.reserved; break;
      case ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH: bytes = st.reserved_high; break;
      case ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT: bytes = st.used; break;
      case ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH: bytes = st.used_high; break;
      default: return ACL_ERROR_INVALID_PARAM;
    }
    if (raw(attr) <= ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
      std::memcpy(value, &flag, sizeof flag);
    else
      std::memcpy(value, &bytes, sizeof bytes);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemPoolMallocAsync(void** ptr, size_t size, aclrtMemPool memPool, aclrtStream stream) {
  return guarded([&]() -> aclError {
    if (ptr == nullptr || size == 0) return ACL_ERROR_INVALID_PARAM;
    const aclError st = stream_status(stream);
    if (st != ACL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(soma_registry().m);
    soma_pool* p = live(memPool);
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (size > emulated_device_memory()) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    auto buffer = p->pool.allocate(host_stream(stream), size);
    void* data = buffer.data();
    soma_registry().allocations.emplace(data, soma_allocation{std::move(buffer)});
    *ptr = data;
    return ACL_SUCCESS;
  });
}

aclError aclrtMemPoolFreeAsync(void* ptr, aclrtStream stream) {
  return guarded([&]() -> aclError {
    if (ptr == nullptr) return ACL_ERROR_INVALID_PARAM;
    const aclError st = stream_status(stream);
    if (st != ACL_SUCCESS) return st;
    keel::host::pool_buffer buffer;
    {
      std::lock_guard<std::mutex> lock(soma_registry().m);
      auto it = soma_registry().allocations.find(ptr);
      if (it == soma_registry().allocations.end()) return ACL_ERROR_INVALID_PARAM;
      buffer = std::move(it->second.buffer);
      soma_registry().allocations.erase(it);
    }
    // CANN frees on any stream: the caller has ordered it after the uses.
    const auto s = host_stream(stream);
    buffer.rebind(s);
    buffer.release(s);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemPoolTrimTo(aclrtMemPool memPool, size_t minBytesToKeep) {
  return guarded([&]() -> aclError {
    std::lock_guard<std::mutex> lock(soma_registry().m);
    soma_pool* p = live(memPool);
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    // CANN's trim never touches memory in use: keep at least that much.
    const std::size_t used = p->pool.statistics().used;
    p->pool.trim_to(minBytesToKeep < used ? used : minBytesToKeep);
    return ACL_SUCCESS;
  });
}
