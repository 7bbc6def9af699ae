// SPDX-License-Identifier: Apache-2.0
// The few ACL C ABI types keel's ACL backend passes across the C boundary,
// declared by keel itself so keel builds (and its ACL code compiles) where
// neither CANN nor the emulation headers are installed.
//
// Why keel does not include CANN's <acl/acl.h>: keel is header-only and must
// build on machines without CANN, so it cannot require the header; and a
// `__has_include(<acl/acl.h>)` switch would make keel's types depend on which
// header happens to be on the include path (CANN's, the emulation's, or one
// of the many vendored stubs), changing keel's API from build to build.
// Instead keel mirrors the handful of ABI facts it needs: the handle types
// (all void* in CANN), aclError (int), aclnnStatus (int32_t), and the enums it
// passes by value as keel enums with the same size and values. The opaque
// aclnn objects keep CANN's own struct tags at global scope, so a program that
// also includes CANN's headers uses the very same pointer types.
// tests/acl/headers_test.cpp checks every value and every function type here
// against the documented declarations (the emulation headers) at compile time.
#pragma once

#include <cstddef>
#include <cstdint>

/// @cond
// Incomplete types may be declared any number of times; CANN's
// `typedef struct aclTensor aclTensor;` names these same types.
struct aclTensor;
struct aclScalar;
struct aclIntArray;
struct aclOpExecutor;
struct aclDataBuffer;
struct rtExceptionInfo;  // CANN's aclrtExceptionInfo
struct aclrtUtilizationExtendInfo;
/// @endcond

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/// aclError: the status every aclrt* / aclmdlRI* function returns; 0 is success.
using status = int;
/// aclnnStatus: the status of aclnn* calls; same numbering space as aclError.
using nn_status = std::int32_t;

using stream_handle = void*;      ///< aclrtStream
using event_handle = void*;       ///< aclrtEvent
using model_handle = void*;       ///< aclmdlRI, a captured model run instance
using task_group_handle = void*;  ///< aclrtTaskGrp

using tensor_handle = ::aclTensor*;          ///< aclTensor*
using scalar_handle = ::aclScalar*;          ///< aclScalar*
using int_array_handle = ::aclIntArray*;     ///< aclIntArray*
using executor_handle = ::aclOpExecutor*;    ///< aclOpExecutor*

/// aclDataType. The gaps in the numbering are CANN's.
enum class data_type : int {
  undefined = -1,
  float32 = 0,     ///< ACL_FLOAT
  float16 = 1,     ///< ACL_FLOAT16
  int8 = 2,
  int32 = 3,
  uint8 = 4,
  int16 = 6,
  uint16 = 7,
  uint32 = 8,
  int64 = 9,
  uint64 = 10,
  float64 = 11,    ///< ACL_DOUBLE
  boolean = 12,    ///< ACL_BOOL
  string = 13,
  complex64 = 16,
  complex128 = 17,
  bfloat16 = 27,   ///< ACL_BF16
  int4 = 29,
  uint1 = 30,
  complex32 = 33,
};

/// aclFormat.
enum class format : int {
  undefined = -1,
  nchw = 0,
  nhwc = 1,
  nd = 2,
  nc1hwc0 = 3,
  fractal_z = 4,
  nc1hwc0_c04 = 12,
  hwcn = 16,
  ndhwc = 27,
  fractal_nz = 29,
  ncdhw = 30,
  ndc1hwc0 = 32,
  fractal_z_3d = 33,  ///< ACL_FRACTAL_Z_3D
  nc = 35,
  ncl = 47,
};

/// aclrtMemcpyKind.
enum class memcpy_kind : int {
  host_to_host = 0,
  host_to_device = 1,
  device_to_host = 2,
  device_to_device = 3,
  automatic = 4,  ///< ACL_MEMCPY_DEFAULT: the runtime infers the direction
  host_to_buf_to_device = 5,
  inner_device_to_device = 6,
  inter_device_to_device = 7,
};

/// aclrtMemMallocPolicy: a page policy, optionally OR-ed with a memory-type bit.
enum class malloc_policy : int {
  huge_first = 0,
  huge_only = 1,
  normal_only = 2,
  huge_first_p2p = 3,
  huge_only_p2p = 4,
  normal_only_p2p = 5,
  huge1g_only = 6,
  huge1g_only_p2p = 7,
  low_band_width = 0x0100,
  high_band_width = 0x1000,
  user_space_readonly = 0x100000,  ///< ACL_MEM_ACCESS_USER_SPACE_READONLY
};

/// aclmdlRICaptureMode: who may call capture-unsafe functions while capturing.
enum class capture_mode : int {
  global = 0,      ///< no thread may
  per_thread = 1,  ///< ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL: the capturing thread may not
  relaxed = 2,     ///< every thread may
};

/// aclmdlRICaptureStatus.
enum class capture_status : int { none = 0, active = 1, invalidated = 2 };

/// aclrtEventRecordedStatus (aclrtQueryEventStatus).
enum class event_recorded_status : int { not_ready = 0, complete = 1 };

/// aclrtLastErrLevel (aclrtPeekAtLastError / aclrtGetLastError).
enum class last_error_level : int { thread = 0 };

/// aclrtStreamStatus (aclrtStreamQuery).
enum class stream_status : int { complete = 0, not_ready = 1, reserved = 0xFFFF };

/// aclrtCallbackBlockType (aclrtLaunchCallback): whether the stream waits for the callback.
enum class callback_block : int { no_block = 0, block = 1 };

/// aclrtMemPool: a stream-ordered memory pool (acl_rt_memory_soma.h).
using mem_pool_handle = void*;

/// aclrtMemPoolAttr (aclrtMemPoolSetAttr / aclrtMemPoolGetAttr).
enum class mem_pool_attr : int {
  reuse_follow_event_dependencies = 0x1,     ///< ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES
  reuse_allow_opportunistic = 0x2,           ///< ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC
  reuse_allow_internal_dependencies = 0x3,   ///< ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES
  release_threshold = 0x4,                   ///< ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD
  reserved_mem_current = 0x5,                ///< ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT
  reserved_mem_high = 0x6,                   ///< ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH
  used_mem_current = 0x7,                    ///< ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT
  used_mem_high = 0x8,                       ///< ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH
};

/// aclrtMemLocation: where memory lives (type 1: ACL_MEM_LOCATION_TYPE_DEVICE, with its id).
struct mem_location {
  std::uint32_t id = 0;  ///< the device id
  int type = 1;          ///< aclrtMemLocationType
};

/// aclrtMemPoolProps (aclrtMemPoolCreate): pinned device memory, no handle type, at most max_size bytes.
struct mem_pool_props {
  int alloc_type = 0;             ///< aclrtMemAllocationType: ACL_MEM_ALLOCATION_TYPE_PINNED
  int handle_type = 0;            ///< aclrtMemHandleType: ACL_MEM_HANDLE_TYPE_NONE
  mem_location location;          ///< the device
  std::size_t max_size = 0;       ///< most bytes the pool holds
  unsigned char reserved[32] = {};  ///< zero
};

/// aclrtAllocatorDesc: a custom allocator's description (acl_rt_allocator.h).
using allocator_desc_handle = void*;
/// aclrtAllocatorAllocFunc: returns a block of at least the size, or null.
using allocator_alloc_func = void* (*)(void* allocator, std::size_t size);
/// aclrtAllocatorFreeFunc: gives a block back.
using allocator_free_func = void (*)(void* allocator, void* block);
/// aclrtAllocatorAllocAdviseFunc: a block, preferably at the address given.
using allocator_alloc_advise_func = void* (*)(void* allocator, std::size_t size, void* addr);
/// aclrtAllocatorGetAddrFromBlockFunc: a block's device address.
using allocator_get_addr_func = void* (*)(void* block);

/// aclrtCallback: a host callback, run on the thread subscribed to its stream.
using callback = void (*)(void* userData);
/// aclrtHostFunc: a host function aclrtLaunchHostFunc runs in stream order.
using host_func = void (*)(void* args);
/// aclrtContext.
using context_handle = void*;

/// Flags of aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag.
namespace event_flags {
/// ACL_EVENT_SYNC (acl_rt.h).
inline constexpr std::uint32_t sync = 0x01U;
/// ACL_EVENT_CAPTURE_STREAM_PROGRESS (acl_rt.h).
inline constexpr std::uint32_t capture_stream_progress = 0x02U;
/// ACL_EVENT_TIME_LINE: the event records a timestamp (aclrtEventElapsedTime).
inline constexpr std::uint32_t time_line = 0x08U;
/// ACL_EVENT_DEVICE_USE_ONLY (acl_rt.h).
inline constexpr std::uint32_t device_use_only = 0x10U;
/// ACL_EVENT_EXTERNAL: for concurrent task update; not combinable with any other flag.
inline constexpr std::uint32_t external = 0x20U;
/// ACL_EVENT_IPC (acl_rt.h).
inline constexpr std::uint32_t ipc = 0x40U;
}  // namespace event_flags

/// Flags of aclrtRecordEventWithFlag (ACL_EVENT_RECORD_*).
namespace record_flags {
/// ACL_EVENT_RECORD_DEFAULT: a plain record.
inline constexpr std::uint32_t none = 0x0U;
/// ACL_EVENT_RECORD_EXTERNAL: signals an external event; on an aclrtCreateEventExWithFlag event inside a capture, a record visible outside the model.
inline constexpr std::uint32_t external = 0x1U;
}  // namespace record_flags

/// Flags of aclrtStreamWaitEventWithFlag (ACL_EVENT_WAIT_*).
namespace wait_flags {
/// ACL_EVENT_WAIT_DEFAULT: a plain wait.
inline constexpr std::uint32_t none = 0x0U;
/// ACL_EVENT_WAIT_EXTERNAL: waits for an external event's signal; on an aclrtCreateEventExWithFlag event inside a capture, waits on a record made outside the model.
inline constexpr std::uint32_t external = 0x1U;
}  // namespace wait_flags

/// Flags of aclrtCreateStreamWithConfig (ACL_STREAM_*).
namespace stream_flags {
/// ACL_STREAM_FAST_LAUNCH (acl_rt.h).
inline constexpr std::uint32_t fast_launch = 0x01U;
/// ACL_STREAM_FAST_SYNC (acl_rt.h).
inline constexpr std::uint32_t fast_sync = 0x02U;
/// ACL_STREAM_PERSISTENT (acl_rt.h).
inline constexpr std::uint32_t persistent = 0x04U;
/// ACL_STREAM_HUGE (acl_rt.h).
inline constexpr std::uint32_t huge = 0x08U;
/// ACL_STREAM_CPU_SCHEDULE (acl_rt.h).
inline constexpr std::uint32_t cpu_schedule = 0x10U;
/// ACL_STREAM_DEVICE_USE_ONLY (acl_rt.h).
inline constexpr std::uint32_t device_use_only = 0x20U;
}  // namespace stream_flags

/// aclmdlRICondHandle: a condition of a model being captured (hicann/runtime
/// docs/zh/api_ref/15_model_running_instance_management.md).
using cond_handle = void*;

/// aclmdlRICondHandleFlag (0: the program manages the value).
enum class cond_handle_flag : int { none = 0, assign_default = 1 };

/// aclmdlRICondTaskType.
enum class cond_task_type : int { if_ = 0, while_ = 1, switch_ = 2 };

/// aclmdlRICondTaskParams (hicann/runtime docs/zh/api_ref/25-04_Structs.md), passed by value to aclmdlRIAddCondTask.
struct cond_task_params {
  cond_handle handle;          ///< the condition the task reads
  cond_task_type type;         ///< IF, WHILE or SWITCH
  std::uint32_t size;          ///< branches: IF 1 or 2, WHILE 1, SWITCH at least 1
  model_handle* modelRIArray;  ///< filled with the body models
};

/// aclrtMemAttr (aclrtGetMemInfo): the kind of device memory asked about.
enum class mem_attr : int {
  ddr = 0,
  hbm = 1,
  ddr_huge = 2,
  ddr_normal = 3,
  hbm_huge = 4,
  hbm_normal = 5,
  ddr_p2p_huge = 6,
  ddr_p2p_normal = 7,
  hbm_p2p_huge = 8,
  hbm_p2p_normal = 9,
  hbm_huge1g = 10,
  hbm_p2p_huge1g = 11,
  normal = 12,
  huge = 13,
  huge1g = 14,
  p2p_normal = 15,
  p2p_huge = 16,
  p2p_huge1g = 17
};

/// aclrtRunMode (aclrtGetRunMode): where the program runs.
enum class run_mode : int { device = 0, host = 1 };

/// aclrtDevAttr (aclrtGetDeviceInfo): the device attributes keel asks about.
enum class device_attribute : int {
  aicpu_core_num = 1,
  aicore_core_num = 101,
  cube_core_num = 102,
  vector_core_num = 201,
  total_global_mem_size = 301,
  l2_cache_size = 302
};

/// aclrtNotify: a flag one stream records and another waits for and resets (08_notify_management.md).
using notify_handle = void*;

/// aclrtDevResLimitType (aclrtSetDeviceResLimit, aclrtGetResInCurrentThread): a device's cores.
enum class device_resource : int { cube_core = 0, vector_core = 1 };

/// aclrtIpcEventHandle: an ACL_EVENT_IPC event's handle, which another process opens (07_event_management.md).
struct ipc_event_handle {
  /// The handle's bytes, as the runtime made them.
  char reserved[64];
};

/// aclrtLabel: a marked place on a stream bound to a model being built (10_label_management.md).
using label_handle = void*;
/// aclrtLabelList: the labels a switch by label index chooses from.
using label_list_handle = void*;

/// aclrtFloatOverflowMode (aclrtSetDeviceSatMode): what an overflowing floating-point result becomes.
enum class float_overflow_mode : int { saturation = 0, inf_nan = 1, undefined = 2 };

/// aclrtExceptionInfo: what an exception callback is told of a failed task (13_exception_handling.md).
using exception_info = ::rtExceptionInfo;
/// aclrtExceptionInfoCallback: a process-wide callback told of each failed task.
using exception_info_callback = void (*)(exception_info* exceptionInfo);
/// aclrtFuncHandle: a kernel function's handle (14_Kernel_loading_and_execution.md).
using func_handle = void*;

/// aclrtUtilizationInfo (aclrtGetDeviceUtilizationRate): a device's units busy, in percent; -1 for none reported.
struct utilization_info {
  std::int32_t cube_utilization = 0;    ///< the cube cores
  std::int32_t vector_utilization = 0;  ///< the vector cores (-1: the device has none)
  std::int32_t aicpu_utilization = 0;   ///< the AI CPUs
  std::int32_t memory_utilization = 0;  ///< device memory (-1: not reported)
  ::aclrtUtilizationExtendInfo* utilization_extend = nullptr;  ///< reserved: null
};

/// aclrtStreamState: the change a stream state callback is told of (06_stream_management.md).
enum class stream_state : int {
  create_post = 1,  ///< after a stream was made
  destroy_pre = 2   ///< before a stream is destroyed
};
/// aclrtStreamStateCallback: a process-wide callback told of each stream made and destroyed.
using stream_state_callback = void (*)(stream_handle stm, stream_state state, void* args);

/// aclrtValueWait's conditions (11-09_stream_memory_operation.md) on the 64-bit value at an address.
namespace value_wait {
inline constexpr std::uint32_t geq = 0x0;  ///< (int64_t)(*addr - value) >= 0
inline constexpr std::uint32_t eq = 0x1;   ///< *addr == value
inline constexpr std::uint32_t and_ = 0x2; ///< (*addr & value) != 0
inline constexpr std::uint32_t nor = 0x3;  ///< ~(*addr | value) != 0
}  // namespace value_wait

} KEEL_END_NAMESPACE  // namespace keel::acl
