// SPDX-License-Identifier: Apache-2.0
// The emulation's per-stream custom allocators (acl/acl_rt_allocator.h):
// descriptions, and the registry of the allocator each stream's aclnn
// operators take their internal memory from.
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "acl/acl.h"
#include "allocator.hpp"
#include "detail/call_checks.hpp"

namespace {

using keel::acl_emulation::detail::context_status;
using keel::acl_emulation::detail::stream_status;

struct desc {
  aclrtAllocator object = nullptr;
  aclrtAllocatorAllocFunc alloc = nullptr;
  aclrtAllocatorFreeFunc free = nullptr;
  aclrtAllocatorAllocAdviseFunc advise = nullptr;
  aclrtAllocatorGetAddrFromBlockFunc address = nullptr;
};
struct registered {
  aclrtAllocatorDesc handle;
  desc functions;
};
struct allocator_books {
  std::mutex m;
  std::unordered_set<desc*> descs;
  std::unordered_map<aclrtStream, registered> streams;
};
allocator_books& registry() {
  static allocator_books* const b = new allocator_books;  // never destroyed, as the runtime's own books
  return *b;
}


template <class F>
aclError on_desc(aclrtAllocatorDesc d, F&& set) {
  std::lock_guard<std::mutex> lock(registry().m);
  auto* p = static_cast<desc*>(d);
  if (d == nullptr || !registry().descs.count(p)) return ACL_ERROR_INVALID_PARAM;
  set(*p);
  return ACL_SUCCESS;
}

}  // namespace

aclrtAllocatorDesc aclrtAllocatorCreateDesc(void) {
  auto* d = new (std::nothrow) desc;
  if (d == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(registry().m);
  try {
    registry().descs.insert(d);
  } catch (...) {
    delete d;
    return nullptr;
  }
  return d;
}
aclError aclrtAllocatorDestroyDesc(aclrtAllocatorDesc allocatorDesc) {
  std::lock_guard<std::mutex> lock(registry().m);
  auto* p = static_cast<desc*>(allocatorDesc);
  if (allocatorDesc == nullptr || !registry().descs.erase(p)) return ACL_ERROR_INVALID_PARAM;
  delete p;
  return ACL_SUCCESS;
}
aclError aclrtAllocatorSetObjToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocator allocator) {
  if (allocator == nullptr) return ACL_ERROR_INVALID_PARAM;
  return on_desc(allocatorDesc, [&](desc& d) { d.object = allocator; });
}
aclError aclrtAllocatorSetAllocFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocFunc func) {
  if (func == nullptr) return ACL_ERROR_INVALID_PARAM;
  return on_desc(allocatorDesc, [&](desc& d) { d.alloc = func; });
}
aclError aclrtAllocatorSetFreeFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorFreeFunc func) {
  if (func == nullptr) return ACL_ERROR_INVALID_PARAM;
  return on_desc(allocatorDesc, [&](desc& d) { d.free = func; });
}
aclError aclrtAllocatorSetAllocAdviseFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocAdviseFunc func) {
  if (func == nullptr) return ACL_ERROR_INVALID_PARAM;
  return on_desc(allocatorDesc, [&](desc& d) { d.advise = func; });
}
aclError aclrtAllocatorSetGetAddrFromBlockFuncToDesc(aclrtAllocatorDesc allocatorDesc,
                                                     aclrtAllocatorGetAddrFromBlockFunc func) {
  if (func == nullptr) return ACL_ERROR_INVALID_PARAM;
  return on_desc(allocatorDesc, [&](desc& d) { d.address = func; });
}

aclError aclrtAllocatorRegister(aclrtStream stream, aclrtAllocatorDesc allocatorDesc) {
  if (const aclError c = context_status(); c != ACL_SUCCESS) return c;
  if (const aclError s = stream_status(stream); s != ACL_SUCCESS) return s;
  std::lock_guard<std::mutex> lock(registry().m);
  auto* p = static_cast<desc*>(allocatorDesc);
  if (allocatorDesc == nullptr || !registry().descs.count(p)) return ACL_ERROR_INVALID_PARAM;
  if (p->object == nullptr || p->alloc == nullptr || p->free == nullptr || p->address == nullptr)
    return ACL_ERROR_INVALID_PARAM;  // an incomplete description
  try {
    registry().streams[stream] = registered{allocatorDesc, *p};  // a later registration replaces the earlier one
  } catch (...) {
    return ACL_ERROR_BAD_ALLOC;
  }
  return ACL_SUCCESS;
}
aclError aclrtAllocatorGetByStream(aclrtStream stream, aclrtAllocatorDesc* allocatorDesc, aclrtAllocator* allocator,
                                   aclrtAllocatorAllocFunc* allocFunc, aclrtAllocatorFreeFunc* freeFunc,
                                   aclrtAllocatorAllocAdviseFunc* allocAdviseFunc,
                                   aclrtAllocatorGetAddrFromBlockFunc* getAddrFromBlockFunc) {
  if (const aclError c = context_status(); c != ACL_SUCCESS) return c;
  if (const aclError s = stream_status(stream); s != ACL_SUCCESS) return s;
  if (allocatorDesc == nullptr || allocator == nullptr || allocFunc == nullptr || freeFunc == nullptr ||
      allocAdviseFunc == nullptr || getAddrFromBlockFunc == nullptr)
    return ACL_ERROR_INVALID_PARAM;
  std::lock_guard<std::mutex> lock(registry().m);
  auto it = registry().streams.find(stream);
  if (it == registry().streams.end()) return ACL_ERROR_INVALID_PARAM;  // nothing registered
  *allocatorDesc = it->second.handle;
  *allocator = it->second.functions.object;
  *allocFunc = it->second.functions.alloc;
  *freeFunc = it->second.functions.free;
  *allocAdviseFunc = it->second.functions.advise;
  *getAddrFromBlockFunc = it->second.functions.address;
  return ACL_SUCCESS;
}
aclError aclrtAllocatorUnregister(aclrtStream stream) {
  if (const aclError c = context_status(); c != ACL_SUCCESS) return c;
  if (stream == nullptr) return ACL_ERROR_INVALID_PARAM;
  std::lock_guard<std::mutex> lock(registry().m);
  return registry().streams.erase(stream) ? ACL_SUCCESS : ACL_ERROR_INVALID_PARAM;
}

namespace keel_emulation {

bool stream_workspace::take(aclrtStream stream, std::size_t bytes) {
  if (bytes == 0) return false;
  desc d;
  {
    std::lock_guard<std::mutex> lock(registry().m);
    auto it = registry().streams.find(stream);
    if (it == registry().streams.end()) return false;
    d = it->second.functions;
  }
  block_ = d.alloc(d.object, bytes);
  if (block_ == nullptr) return false;
  object_ = d.object;
  free_ = d.free;
  address_ = d.address(block_);
  return true;
}
stream_workspace::~stream_workspace() {
  if (block_ != nullptr) free_(object_, block_);  // the allocator orders the release on the stream
}

}  // namespace keel_emulation
