// SPDX-License-Identifier: Apache-2.0
// CANN's stream-ordered memory allocation under keel's pool on the ACL
// backend (keel/runtime/backend/runtime_pool.hpp): when the function table
// has all seven aclrtMemPool* calls, a keel pool of device memory reserves
// its blocks with aclrtMemPoolMallocAsync from a pool of its own
// (aclrtMemPoolCreate) and gives them back with aclrtMemPoolFreeAsync;
// otherwise it is keel's own pool over aclrtMalloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "keel/acl/api.hpp"
#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/detail/device.hpp"
#include "keel/acl/status.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"
#include "keel/runtime/backend/runtime_pool.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

namespace acl {
struct backend;
}  // namespace acl

/**
 * @brief On ACL a keel pool of device memory reserves from an aclrtMemPool
 * of its own when the runtime has the SOMA calls (aclrtMemPoolCreate,
 * Destroy, SetAttr, GetAttr, MallocAsync, FreeAsync, TrimTo): what keel
 * frees or trims goes back to that pool, whose release threshold is 0, so
 * the runtime returns it to the device. Pinned host pools, runtimes without
 * the calls and pools made with pool_options::use_runtime_pool false are
 * keel's own over aclrtMalloc / aclrtMallocHost.
 */
template <>
struct runtime_memory_pool<acl::backend> {
  /// The runtime's pools exist (whether this runtime has them is has_calls()).
  static constexpr bool available = true;
  /// aclrtMemPool.
  using handle = acl::mem_pool_handle;

  /** @brief Whether @p api has all seven calls. Throws: nothing. */
  static bool has_calls(const acl::api& api) noexcept {
    return api.aclrtMemPoolCreate && api.aclrtMemPoolDestroy && api.aclrtMemPoolSetAttr && api.aclrtMemPoolGetAttr &&
           api.aclrtMemPoolMallocAsync && api.aclrtMemPoolFreeAsync && api.aclrtMemPoolTrimTo;
  }

  /**
   * @brief A runtime pool of @p max_size bytes (0: no bound) on @p s's device
   * under @p a's reuse rules, or null for pinned host memory or a runtime
   * without the calls. @throws keel::error with the ACL status.
   */
  static handle create(acl::detail::stream_box* s, memory_kind kind, std::size_t max_size, const pool_attributes& a) {
    const acl::api& api = s->dev->functions();
    if (kind != memory_kind::device || !has_calls(api)) return nullptr;
    acl::mem_pool_props props;
    props.location.id = static_cast<std::uint32_t>(s->dev->id());
    props.max_size = max_size;
    handle pool = nullptr;
    s->dev->check(api.aclrtMemPoolCreate(&pool, &props), "aclrtMemPoolCreate");
    std::uint64_t keep_none = 0;  // what keel lets go of goes back to the device
    const acl::status st = api.aclrtMemPoolSetAttr(pool, acl::mem_pool_attr::release_threshold, &keep_none);
    if (st == 0) {
      try {
        set_reuse(api, *s->dev, pool, a);
        return pool;
      } catch (...) {
        (void)api.aclrtMemPoolDestroy(pool);
        throw;
      }
    }
    (void)api.aclrtMemPoolDestroy(pool);
    s->dev->check(st, "aclrtMemPoolSetAttr");
    return nullptr;
  }
  /**
   * @brief @p bytes from @p pool, ordered on @p s (aclrtMemPoolMallocAsync).
   * @throws keel::error out_of_memory for ACL_ERROR_RT_MEMORY_ALLOCATION, or
   * the ACL status.
   */
  static void* allocate(handle pool, acl::detail::stream_box* s, std::size_t bytes) {
    void* p = nullptr;
    const acl::status st = s->dev->functions().aclrtMemPoolMallocAsync(&p, bytes, pool, s->native);
    if (st == 207001)  // ACL_ERROR_RT_MEMORY_ALLOCATION
      throw_error(errc::out_of_memory, "aclrtMemPoolMallocAsync",
                  "the runtime's pool has no " + std::to_string(bytes) + " bytes (ACL status 207001)");
    s->dev->check(st, "aclrtMemPoolMallocAsync");
    return p;
  }
  /** @brief Gives @p p back in @p s's order (aclrtMemPoolFreeAsync). Throws: nothing (failures are reported). */
  static void free(void* p, acl::detail::stream_box* s) noexcept {
    const acl::status st = s->dev->functions().aclrtMemPoolFreeAsync.get()(p, s->native);
    if (st != 0) report_error(acl::make_status_code(st), "aclrtMemPoolFreeAsync", "a keel pool's block was not given back");
  }
  /** @brief The runtime's pool keeps at most @p keep idle-or-used bytes (aclrtMemPoolTrimTo). Throws: nothing. */
  static void trim_to(handle pool, acl::detail::stream_box* s, std::size_t keep) noexcept {
    const acl::status st = s->dev->functions().aclrtMemPoolTrimTo.get()(pool, keep);
    if (st != 0) report_error(acl::make_status_code(st), "aclrtMemPoolTrimTo", "the runtime's pool was not trimmed");
  }
  /** @brief The reuse rules of @p a for the runtime's own reuse (aclrtMemPoolSetAttr). Throws: nothing. */
  static void set_attributes(handle pool, acl::detail::stream_box* s, const pool_attributes& a) noexcept {
    try {
      set_reuse(s->dev->functions(), *s->dev, pool, a);
    } catch (...) {
      report_current_exception("aclrtMemPoolSetAttr");
    }
  }
  /** @brief aclrtMemPoolDestroy (the runtime defers it while blocks are out). Throws: nothing. */
  static void destroy(handle pool, acl::detail::stream_box* s) noexcept {
    const acl::status st = s->dev->functions().aclrtMemPoolDestroy.get()(pool);
    if (st != 0) report_error(acl::make_status_code(st), "aclrtMemPoolDestroy", "the runtime's pool was not destroyed");
  }

 private:
  static void set_reuse(const acl::api& api, const acl::device& dev, handle pool, const pool_attributes& a) {
    int follow = a.follow_event_dependencies ? 1 : 0, opportunistic = a.allow_opportunistic ? 1 : 0,
        internal = a.allow_internal_dependencies ? 1 : 0;
    dev.check(api.aclrtMemPoolSetAttr(pool, acl::mem_pool_attr::reuse_follow_event_dependencies, &follow),
              "aclrtMemPoolSetAttr");
    dev.check(api.aclrtMemPoolSetAttr(pool, acl::mem_pool_attr::reuse_allow_opportunistic, &opportunistic),
              "aclrtMemPoolSetAttr");
    dev.check(api.aclrtMemPoolSetAttr(pool, acl::mem_pool_attr::reuse_allow_internal_dependencies, &internal),
              "aclrtMemPoolSetAttr");
  }
};

KEEL_END_NAMESPACE  // namespace keel
