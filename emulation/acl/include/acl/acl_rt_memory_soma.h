/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: stream-ordered memory
 * allocation (SOMA), as CANN declares it (hicann/runtime
 * include/external/acl/acl_rt_memory_soma.h; semantics in
 * docs/zh/api_ref/11-10_ordered_stream_memory_allocation.md, which also gives
 * aclrtMemPoolTrimTo). The memory location and allocation types are CANN's
 * acl_rt.h ones (docs/zh/api_ref/25-02_Enumerations.md, 25-04_Structs.md).
 */
#ifndef KEEL_EMULATION_ACL_ACL_RT_MEMORY_SOMA_H_
#define KEEL_EMULATION_ACL_ACL_RT_MEMORY_SOMA_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtMemLocationType {
  ACL_MEM_LOCATION_TYPE_HOST = 0,
  ACL_MEM_LOCATION_TYPE_DEVICE = 1
} aclrtMemLocationType;

typedef struct aclrtMemLocation {
  uint32_t id;
  aclrtMemLocationType type;
} aclrtMemLocation;

typedef enum aclrtMemAllocationType { ACL_MEM_ALLOCATION_TYPE_PINNED = 0 } aclrtMemAllocationType;

typedef enum aclrtMemHandleType { ACL_MEM_HANDLE_TYPE_NONE = 0 } aclrtMemHandleType;

typedef void *aclrtMemPool;

typedef enum aclrtMemPoolAttr {
  ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES = 0x1,
  ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC = 0x2,
  ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 0x3,
  ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD = 0x4,
  ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT = 0x5,
  ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH = 0x6,
  ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT = 0x7,
  ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH = 0x8
} aclrtMemPoolAttr;

typedef struct {
  aclrtMemAllocationType allocType;
  aclrtMemHandleType handleType;
  aclrtMemLocation location;
  size_t maxSize;
  unsigned char reserved[32];
} aclrtMemPoolProps;

/* The emulation's attribute value types (CANN: "the type the attribute
 * names"): the three REUSE_* attributes are int (0 or 1), the release
 * threshold and the four statistics uint64_t bytes; setting RESERVED_MEM_HIGH
 * or USED_MEM_HIGH to 0 restarts the high-water mark, the *_CURRENT ones are
 * read-only. A pool destroyed with allocations outstanding goes when the last
 * is freed. */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolCreate(aclrtMemPool *memPool, const aclrtMemPoolProps *poolProps);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolDestroy(const aclrtMemPool memPool);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolSetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolGetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolMallocAsync(void **ptr, size_t size, aclrtMemPool memPool, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolFreeAsync(void *ptr, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemPoolTrimTo(aclrtMemPool memPool, size_t minBytesToKeep);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACL_ACL_RT_MEMORY_SOMA_H_ */
