// SPDX-License-Identifier: Apache-2.0
// The emulation's public C headers against keel's ABI mirror: both in one
// translation unit (no clash), every function of keel's table against its
// documented declaration, every mirrored value, and what a C99 compiler makes
// of the same headers (headers_c_probe.c).
#include <acl/acl.h>
#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_adaptive_avg_pool2d.h>
#include <aclnnop/aclnn_add.h>
#include <aclnnop/aclnn_addcmul.h>
#include <aclnnop/aclnn_baddbmm.h>
#include <aclnnop/aclnn_cast.h>
#include <aclnnop/aclnn_mul.h>

#include <catch2/catch.hpp>

#include <keel/acl.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

extern "C" std::size_t keel_acl_c_probe(long long* values, std::size_t capacity);

namespace {

template <class...>
struct type_list {};

template <class K, class C>
struct same_abi_function;

// Whether keel's parameter type K passes exactly like the C declaration's C:
// the same type, or enums of the same size and alignment (keel's enums stand
// for CANN's by-value enums), or pointers to such with the same qualifiers,
// or pointers to functions whose return and parameters are such.
template <class K, class C>
constexpr bool same_abi() {
  if constexpr (std::is_same_v<K, C>) {
    return true;
  } else if constexpr (std::is_pointer_v<K> && std::is_pointer_v<C>) {
    using kp = std::remove_pointer_t<K>;
    using cp = std::remove_pointer_t<C>;
    if constexpr (std::is_function_v<kp> && std::is_function_v<cp>) {
      return same_abi_function<K, C>::value;
    } else {
      return std::is_const_v<kp> == std::is_const_v<cp> && std::is_volatile_v<kp> == std::is_volatile_v<cp> &&
             same_abi<std::remove_cv_t<kp>, std::remove_cv_t<cp>>();
    }
  } else if constexpr (std::is_enum_v<K> && std::is_enum_v<C>) {
    return sizeof(K) == sizeof(C) && alignof(K) == alignof(C);
  } else if constexpr ((std::is_class_v<K> && std::is_class_v<C>) || (std::is_union_v<K> && std::is_union_v<C>)) {
    // A mirrored struct or union (keel::acl::mem_pool_props,
    // kernel_attribute_value): the layout, field by field, is checked
    // below; here its size and alignment.
    return std::is_standard_layout_v<K> && std::is_standard_layout_v<C> && sizeof(K) == sizeof(C) &&
           alignof(K) == alignof(C);
  } else {
    return false;
  }
}

template <class... K, class... C>
constexpr bool same_abi_parameters(type_list<K...>, type_list<C...>) {
  if constexpr (sizeof...(K) != sizeof...(C)) {
    return false;
  } else {
    return (same_abi<K, C>() && ...);
  }
}

template <class K, class C>
struct same_abi_function : std::false_type {};
template <class KR, class... KA, class CR, class... CA>
struct same_abi_function<KR (*)(KA...), CR (*)(CA...)>
    : std::bool_constant<same_abi<KR, CR>() && same_abi_parameters(type_list<KA...>{}, type_list<CA...>{})> {};

// The self-test of the checker: it must reject what differs.
static_assert(same_abi_function<int (*)(void*), aclError (*)(aclrtStream)>::value);
static_assert(!same_abi_function<int (*)(void*), int (*)(void*, int)>::value);
static_assert(!same_abi_function<int (*)(const void*), int (*)(void*)>::value);
static_assert(!same_abi_function<int (*)(long), int (*)(int)>::value);
static_assert(!same_abi<void (*)(long), void (*)(int)>());
static_assert(same_abi<void (*)(keel::acl::float_overflow_mode), void (*)(aclrtFloatOverflowMode)>());
static_assert(!same_abi_function<int (*)(keel::acl::data_type), int (*)(int)>::value);

}  // namespace

// Every entry of keel's table, against the declaration in the emulation
// headers. The list is also compared with keel::acl::functions below, so an
// entry added to the table without a documented declaration fails here.
#define KEEL_TEST_ACL_FUNCTIONS(X)                                                                             \
  X(aclInit) X(aclFinalize) X(aclGetRecentErrMsg) X(aclrtPeekAtLastError) X(aclrtGetLastError) X(aclrtSetDevice) X(aclrtResetDevice) X(aclrtGetDevice)      \
  X(aclrtGetDeviceCount) X(aclrtSynchronizeDevice) X(aclrtSynchronizeDeviceWithTimeout) X(aclrtCreateStream) X(aclrtCreateStreamWithConfig)         \
  X(aclrtDestroyStream) X(aclrtDestroyStreamForce) X(aclrtSynchronizeStream)                                  \
  X(aclrtSynchronizeStreamWithTimeout) X(aclrtStreamQuery) X(aclrtStreamWaitEvent)                            \
  X(aclrtStreamWaitEventWithTimeout) X(aclrtStreamWaitEventWithFlag) X(aclrtSubscribeReport) X(aclrtLaunchCallback) X(aclrtProcessReport)     \
  X(aclrtUnSubscribeReport) X(aclrtLaunchHostFunc) X(aclrtSubscribeHostFunc) X(aclrtProcessHostFunc)        \
  X(aclrtUnSubscribeHostFunc) X(aclrtCreateContext) X(aclrtDestroyContext) X(aclrtSetCurrentContext)          \
  X(aclrtGetCurrentContext) X(aclrtResetDeviceForce) X(aclrtStreamGetId) X(aclrtStreamGetFlags) X(aclrtStreamGetPriority) \
  X(aclrtDeviceGetStreamPriorityRange) X(aclrtCreateEvent) X(aclrtCreateEventWithFlag) X(aclrtCreateEventExWithFlag) \
  X(aclrtDestroyEvent) X(aclrtRecordEvent) X(aclrtRecordEventWithFlag) X(aclrtResetEvent)                     \
  X(aclrtQueryEventStatus) X(aclrtSynchronizeEvent) X(aclrtSynchronizeEventWithTimeout)                       \
  X(aclrtEventElapsedTime) X(aclrtMalloc) X(aclrtFree) X(aclrtMallocHost) X(aclrtFreeHost) X(aclrtMemcpy)     \
  X(aclrtMemcpyAsync) X(aclrtMemset) X(aclrtMemsetAsync) X(aclrtMemPoolCreate) X(aclrtMemPoolDestroy) X(aclrtMemPoolSetAttr) X(aclrtMemPoolGetAttr) \
  X(aclrtMemPoolMallocAsync) X(aclrtMemPoolFreeAsync) X(aclrtMemPoolTrimTo) X(aclrtAllocatorCreateDesc) \
  X(aclrtAllocatorDestroyDesc) X(aclrtAllocatorSetObjToDesc) X(aclrtAllocatorSetAllocFuncToDesc) X(aclrtAllocatorSetFreeFuncToDesc) \
  X(aclrtAllocatorSetAllocAdviseFuncToDesc) X(aclrtAllocatorSetGetAddrFromBlockFuncToDesc) X(aclrtAllocatorRegister) \
  X(aclrtAllocatorGetByStream) X(aclrtAllocatorUnregister) X(aclmdlRICaptureBegin) X(aclmdlRICaptureGetInfo)    \
  X(aclmdlRICaptureThreadExchangeMode) X(aclmdlRICaptureEnd) X(aclmdlRICaptureTaskGrpBegin)                   \
  X(aclmdlRICaptureTaskGrpEnd) X(aclmdlRICaptureTaskUpdateBegin) X(aclmdlRICaptureTaskUpdateEnd)              \
  X(aclmdlRIExecuteAsync) X(aclmdlRIExecute) X(aclmdlRIDestroy) X(aclmdlRIBuildBegin) X(aclmdlRIBindStream)      \
  X(aclmdlRIEndTask) X(aclmdlRIBuildEnd) X(aclmdlRIUnbindStream) X(aclrtActiveStream)                         \
  X(aclmdlRICondHandleCreate) X(aclmdlRICondHandleGetCondPtr) X(aclmdlRIAddCondTask)                          \
  X(aclmdlRICaptureToModelRIBegin) X(aclrtSwitchStream) X(aclmdlRIGetId) X(aclmdlRISetName)                   \
  X(aclmdlRIGetName) X(aclmdlRIDestroyRegisterCallback) X(aclmdlRIDestroyUnregisterCallback) X(aclmdlRIAbort) \
  X(aclmdlRIGetStreams) X(aclmdlRIGetTasksByStream) X(aclmdlRITaskGetType) X(aclmdlRITaskGetSeqId)            \
  X(aclmdlRITaskGetParams) X(aclmdlRITaskSetParams) X(aclmdlRIKernelTaskGetAttribute) X(aclmdlRITaskDisable) X(aclmdlRIUpdate)                 \
  X(aclrtGetFunctionName) X(aclmdlRIDebugPrint) X(aclmdlRIDebugJsonPrint)                                     \
  X(aclCreateTensor) X(aclCreateScalar)                                                                       \
  X(aclCreateIntArray) X(aclDestroyTensor) X(aclDestroyScalar) X(aclDestroyIntArray)                          \
  X(aclSetAclOpExecutorRepeatable) X(aclDestroyAclOpExecutor) X(aclnnAddGetWorkspaceSize) X(aclnnAdd)         \
  X(aclnnAddcmulGetWorkspaceSize) X(aclnnAddcmul) X(aclnnMulGetWorkspaceSize) X(aclnnMul)                    \
  X(aclnnCastGetWorkspaceSize) X(aclnnCast)                                                                   \
  X(aclnnAdaptiveAvgPool2dGetWorkspaceSize) X(aclnnAdaptiveAvgPool2d) X(aclnnBaddbmmGetWorkspaceSize)         \
  X(aclnnBaddbmm) X(aclrtDeviceCanAccessPeer) X(aclrtDeviceEnablePeerAccess) X(aclrtDeviceDisablePeerAccess)  \
  X(aclrtDevicePeerAccessStatus) X(aclrtGetMemInfo) X(aclrtGetRunMode) X(aclsysGetVersionStr)                \
  X(aclsysGetVersionNum) X(aclrtGetSocName) X(aclrtGetDeviceInfo) X(aclrtCtxGetCurrentDefaultStream)         \
  X(aclrtValueWrite) X(aclrtValueWait) X(aclCreateDataBuffer) X(aclDestroyDataBuffer) X(aclUpdateDataBuffer) \
  X(aclGetDataBufferAddr) X(aclGetDataBufferSizeV2) X(aclrtCreateNotify) X(aclrtDestroyNotify)              \
  X(aclrtRecordNotify) X(aclrtWaitAndResetNotify) X(aclrtGetNotifyId) X(aclrtNotifyBatchReset)               \
  X(aclrtGetResInCurrentThread) X(aclrtGetDeviceResLimit) X(aclrtSetDeviceResLimit) X(aclrtResetDeviceResLimit) \
  X(aclrtIpcGetEventHandle) X(aclrtIpcOpenEventHandle)                                                       \
  X(aclrtCreateLabel) X(aclrtSetLabel) X(aclrtDestroyLabel) X(aclrtCreateLabelList) X(aclrtDestroyLabelList)      \
  X(aclrtSwitchLabelByIndex) X(aclrtSetDeviceSatMode) X(aclrtGetDeviceSatMode) X(aclrtSetStreamOverflowSwitch)     \
  X(aclrtGetStreamOverflowSwitch) X(aclrtGetOverflowStatus) X(aclrtResetOverflowStatus)                            \
  X(aclrtSetExceptionInfoCallback) X(aclrtExceptionInfoCallbackRegister) X(aclrtExceptionInfoCallbackUnregister)   \
  X(aclrtGetTaskIdFromExceptionInfo) X(aclrtGetStreamIdFromExceptionInfo) X(aclrtGetThreadIdFromExceptionInfo)    \
  X(aclrtGetDeviceIdFromExceptionInfo) X(aclrtGetErrorCodeFromExceptionInfo)                                     \
  X(aclrtGetArgsFromExceptionInfo) X(aclrtGetFuncHandleFromExceptionInfo) X(aclrtGetDeviceUtilizationRate)        \
  X(aclrtStreamAbort) X(aclrtRegStreamStateCallback)

#define KEEL_TEST_SAME_ABI(name)                                                                  \
  static_assert(same_abi_function<decltype(keel::acl::api::name)::pointer, decltype(&::name)>::value, \
                "keel::acl::api::" #name " does not match the documented declaration");
KEEL_TEST_ACL_FUNCTIONS(KEEL_TEST_SAME_ABI)
#undef KEEL_TEST_SAME_ABI

// Types keel spells itself must be CANN's exactly.
static_assert(std::is_same_v<keel::acl::status, aclError>);
static_assert(std::is_same_v<keel::acl::nn_status, aclnnStatus>);
static_assert(std::is_same_v<keel::acl::stream_handle, aclrtStream>);
static_assert(std::is_same_v<keel::acl::event_handle, aclrtEvent>);
static_assert(std::is_same_v<keel::acl::context_handle, aclrtContext>);
static_assert(std::is_same_v<keel::acl::host_func, aclrtHostFunc>);
static_assert(std::is_same_v<keel::acl::model_handle, aclmdlRI>);
static_assert(std::is_same_v<keel::acl::task_group_handle, aclrtTaskGrp>);
static_assert(std::is_same_v<keel::acl::tensor_handle, aclTensor*>);
static_assert(std::is_same_v<keel::acl::scalar_handle, aclScalar*>);
static_assert(std::is_same_v<keel::acl::int_array_handle, aclIntArray*>);
static_assert(std::is_same_v<keel::acl::executor_handle, aclOpExecutor*>);
static_assert(std::is_same_v<keel::acl::notify_handle, aclrtNotify>);
static_assert(std::is_same_v<keel::acl::label_handle, aclrtLabel>);
static_assert(std::is_same_v<keel::acl::label_list_handle, aclrtLabelList>);
static_assert(std::is_same_v<keel::acl::exception_info, aclrtExceptionInfo>);
static_assert(std::is_same_v<keel::acl::exception_info_callback, aclrtExceptionInfoCallback>);
static_assert(std::is_same_v<keel::acl::func_handle, aclrtFuncHandle>);
static_assert(same_abi<keel::acl::stream_state_callback, aclrtStreamStateCallback>());
static_assert(sizeof(keel::acl::utilization_info) == sizeof(aclrtUtilizationInfo));
static_assert(offsetof(keel::acl::utilization_info, cube_utilization) == offsetof(aclrtUtilizationInfo, cubeUtilization));
static_assert(offsetof(keel::acl::utilization_info, vector_utilization) ==
              offsetof(aclrtUtilizationInfo, vectorUtilization));
static_assert(offsetof(keel::acl::utilization_info, aicpu_utilization) == offsetof(aclrtUtilizationInfo, aicpuUtilization));
static_assert(offsetof(keel::acl::utilization_info, memory_utilization) ==
              offsetof(aclrtUtilizationInfo, memoryUtilization));
static_assert(offsetof(keel::acl::utilization_info, utilization_extend) ==
              offsetof(aclrtUtilizationInfo, utilizationExtend));

#define KEEL_TEST_VALUE(keel_value, c_value) \
  static_assert(static_cast<long long>(keel_value) == static_cast<long long>(c_value), #keel_value " != " #c_value);

KEEL_TEST_VALUE(keel::acl::data_type::undefined, ACL_DT_UNDEFINED)
KEEL_TEST_VALUE(keel::acl::data_type::float32, ACL_FLOAT)
KEEL_TEST_VALUE(keel::acl::data_type::float16, ACL_FLOAT16)
KEEL_TEST_VALUE(keel::acl::data_type::int8, ACL_INT8)
KEEL_TEST_VALUE(keel::acl::data_type::int32, ACL_INT32)
KEEL_TEST_VALUE(keel::acl::data_type::uint8, ACL_UINT8)
KEEL_TEST_VALUE(keel::acl::data_type::int16, ACL_INT16)
KEEL_TEST_VALUE(keel::acl::data_type::uint16, ACL_UINT16)
KEEL_TEST_VALUE(keel::acl::data_type::uint32, ACL_UINT32)
KEEL_TEST_VALUE(keel::acl::data_type::int64, ACL_INT64)
KEEL_TEST_VALUE(keel::acl::data_type::uint64, ACL_UINT64)
KEEL_TEST_VALUE(keel::acl::data_type::float64, ACL_DOUBLE)
KEEL_TEST_VALUE(keel::acl::data_type::boolean, ACL_BOOL)
KEEL_TEST_VALUE(keel::acl::data_type::string, ACL_STRING)
KEEL_TEST_VALUE(keel::acl::data_type::complex64, ACL_COMPLEX64)
KEEL_TEST_VALUE(keel::acl::data_type::complex128, ACL_COMPLEX128)
KEEL_TEST_VALUE(keel::acl::data_type::bfloat16, ACL_BF16)
KEEL_TEST_VALUE(keel::acl::data_type::int4, ACL_INT4)
KEEL_TEST_VALUE(keel::acl::data_type::uint1, ACL_UINT1)
KEEL_TEST_VALUE(keel::acl::data_type::complex32, ACL_COMPLEX32)

KEEL_TEST_VALUE(keel::acl::format::undefined, ACL_FORMAT_UNDEFINED)
KEEL_TEST_VALUE(keel::acl::format::nchw, ACL_FORMAT_NCHW)
KEEL_TEST_VALUE(keel::acl::format::nhwc, ACL_FORMAT_NHWC)
KEEL_TEST_VALUE(keel::acl::format::nd, ACL_FORMAT_ND)
KEEL_TEST_VALUE(keel::acl::format::nc1hwc0, ACL_FORMAT_NC1HWC0)
KEEL_TEST_VALUE(keel::acl::format::fractal_z, ACL_FORMAT_FRACTAL_Z)
KEEL_TEST_VALUE(keel::acl::format::nc1hwc0_c04, ACL_FORMAT_NC1HWC0_C04)
KEEL_TEST_VALUE(keel::acl::format::hwcn, ACL_FORMAT_HWCN)
KEEL_TEST_VALUE(keel::acl::format::ndhwc, ACL_FORMAT_NDHWC)
KEEL_TEST_VALUE(keel::acl::format::fractal_nz, ACL_FORMAT_FRACTAL_NZ)
KEEL_TEST_VALUE(keel::acl::format::ncdhw, ACL_FORMAT_NCDHW)
KEEL_TEST_VALUE(keel::acl::format::ndc1hwc0, ACL_FORMAT_NDC1HWC0)
KEEL_TEST_VALUE(keel::acl::format::fractal_z_3d, ACL_FRACTAL_Z_3D)
KEEL_TEST_VALUE(keel::acl::format::nc, ACL_FORMAT_NC)
KEEL_TEST_VALUE(keel::acl::format::ncl, ACL_FORMAT_NCL)

KEEL_TEST_VALUE(keel::acl::callback_block::no_block, ACL_CALLBACK_NO_BLOCK)
KEEL_TEST_VALUE(keel::acl::callback_block::block, ACL_CALLBACK_BLOCK)
static_assert(sizeof(keel::acl::callback_block) == sizeof(aclrtCallbackBlockType));
static_assert(std::is_same_v<keel::acl::callback, aclrtCallback>);
KEEL_TEST_VALUE(keel::acl::memcpy_kind::host_to_host, ACL_MEMCPY_HOST_TO_HOST)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::host_to_device, ACL_MEMCPY_HOST_TO_DEVICE)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::device_to_host, ACL_MEMCPY_DEVICE_TO_HOST)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::device_to_device, ACL_MEMCPY_DEVICE_TO_DEVICE)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::automatic, ACL_MEMCPY_DEFAULT)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::host_to_buf_to_device, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::inner_device_to_device, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
KEEL_TEST_VALUE(keel::acl::memcpy_kind::inter_device_to_device, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)

KEEL_TEST_VALUE(keel::acl::mem_pool_attr::reuse_follow_event_dependencies, ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::reuse_allow_opportunistic, ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::reuse_allow_internal_dependencies, ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::release_threshold, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::reserved_mem_current, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::reserved_mem_high, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::used_mem_current, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT)
KEEL_TEST_VALUE(keel::acl::mem_pool_attr::used_mem_high, ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH)
static_assert(std::is_same_v<keel::acl::mem_pool_handle, aclrtMemPool>);
static_assert(sizeof(keel::acl::mem_pool_props) == sizeof(aclrtMemPoolProps));
static_assert(offsetof(keel::acl::mem_pool_props, alloc_type) == offsetof(aclrtMemPoolProps, allocType));
static_assert(offsetof(keel::acl::mem_pool_props, handle_type) == offsetof(aclrtMemPoolProps, handleType));
static_assert(offsetof(keel::acl::mem_pool_props, location) == offsetof(aclrtMemPoolProps, location));
static_assert(offsetof(keel::acl::mem_pool_props, max_size) == offsetof(aclrtMemPoolProps, maxSize));
static_assert(offsetof(keel::acl::mem_pool_props, reserved) == offsetof(aclrtMemPoolProps, reserved));
// aclrtLaunchKernelAttrValue, the members keel reads (a union: each at offset 0, of CANN's size).
static_assert(sizeof(keel::acl::kernel_attribute_value) == sizeof(aclrtLaunchKernelAttrValue));
static_assert(sizeof(keel::acl::kernel_attribute_value::schedule_mode) == sizeof(aclrtLaunchKernelAttrValue::schemMode));
static_assert(sizeof(keel::acl::kernel_attribute_value::dynamic_ub_bytes) ==
              sizeof(aclrtLaunchKernelAttrValue::dynUBufSize));
static_assert(sizeof(keel::acl::kernel_attribute_value::data_dump) == sizeof(aclrtLaunchKernelAttrValue::isDataDump));
static_assert(sizeof(keel::acl::kernel_attribute_value::timeout) == sizeof(aclrtLaunchKernelAttrValue::timeout));
static_assert(offsetof(keel::acl::timeout_us_value, low) == offsetof(aclrtTimeoutUs, timeoutLow));
static_assert(offsetof(keel::acl::timeout_us_value, high) == offsetof(aclrtTimeoutUs, timeoutHigh));
static_assert(sizeof(keel::acl::ipc_event_handle) == sizeof(aclrtIpcEventHandle));
static_assert(offsetof(keel::acl::ipc_event_handle, reserved) == offsetof(aclrtIpcEventHandle, reserved));
static_assert(static_cast<int>(keel::acl::kernel_attribute::schedule_mode) == ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE);
static_assert(static_cast<int>(keel::acl::kernel_attribute::timeout_us) == ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US);

// aclmdlRITaskParams, the members keel reads (25-04_Structs.md).
static_assert(offsetof(keel::acl::ri_task_params, task_group) == offsetof(aclmdlRITaskParams, taskGrp));
static_assert(offsetof(keel::acl::ri_task_params, kernel) == offsetof(aclmdlRITaskParams, kernelTaskParams));
static_assert(offsetof(keel::acl::ri_kernel_params, function) == offsetof(aclmdlRIKernelTaskParams, funcHandle));
static_assert(offsetof(keel::acl::ri_kernel_params, args) == offsetof(aclmdlRIKernelTaskParams, args));
static_assert(offsetof(keel::acl::ri_kernel_params, args_size) == offsetof(aclmdlRIKernelTaskParams, argsSize));
static_assert(offsetof(keel::acl::ri_kernel_params, blocks) == offsetof(aclmdlRIKernelTaskParams, numBlocks));
static_assert(offsetof(keel::acl::ri_task_params, event) == offsetof(aclmdlRITaskParams, eventWaitTaskParams));
static_assert(offsetof(keel::acl::ri_event_params, event) == offsetof(aclmdlRIEventWaitTaskParams, event));
static_assert(sizeof(keel::acl::mem_location) == sizeof(aclrtMemLocation));
static_assert(offsetof(keel::acl::mem_location, type) == offsetof(aclrtMemLocation, type));
static_assert(sizeof(aclrtMemLocationType) == sizeof(int) && ACL_MEM_LOCATION_TYPE_DEVICE == 1);
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge_first, ACL_MEM_MALLOC_HUGE_FIRST)
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge_only, ACL_MEM_MALLOC_HUGE_ONLY)
KEEL_TEST_VALUE(keel::acl::malloc_policy::normal_only, ACL_MEM_MALLOC_NORMAL_ONLY)
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge_first_p2p, ACL_MEM_MALLOC_HUGE_FIRST_P2P)
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge_only_p2p, ACL_MEM_MALLOC_HUGE_ONLY_P2P)
KEEL_TEST_VALUE(keel::acl::malloc_policy::normal_only_p2p, ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge1g_only, ACL_MEM_MALLOC_HUGE1G_ONLY)
KEEL_TEST_VALUE(keel::acl::malloc_policy::huge1g_only_p2p, ACL_MEM_MALLOC_HUGE1G_ONLY_P2P)
KEEL_TEST_VALUE(keel::acl::malloc_policy::low_band_width, ACL_MEM_TYPE_LOW_BAND_WIDTH)
KEEL_TEST_VALUE(keel::acl::malloc_policy::high_band_width, ACL_MEM_TYPE_HIGH_BAND_WIDTH)
KEEL_TEST_VALUE(keel::acl::malloc_policy::user_space_readonly, ACL_MEM_ACCESS_USER_SPACE_READONLY)

KEEL_TEST_VALUE(keel::acl::last_error_level::thread, ACL_RT_THREAD_LEVEL)
KEEL_TEST_VALUE(keel::acl::capture_mode::global, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)
KEEL_TEST_VALUE(keel::acl::capture_mode::per_thread, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL)
KEEL_TEST_VALUE(keel::acl::capture_mode::relaxed, ACL_MODEL_RI_CAPTURE_MODE_RELAXED)
KEEL_TEST_VALUE(keel::acl::capture_status::none, ACL_MODEL_RI_CAPTURE_STATUS_NONE)
KEEL_TEST_VALUE(keel::acl::capture_status::active, ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE)
KEEL_TEST_VALUE(keel::acl::capture_status::invalidated, ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED)
KEEL_TEST_VALUE(keel::acl::event_recorded_status::not_ready, ACL_EVENT_RECORDED_STATUS_NOT_READY)
KEEL_TEST_VALUE(keel::acl::event_recorded_status::complete, ACL_EVENT_RECORDED_STATUS_COMPLETE)
KEEL_TEST_VALUE(keel::acl::stream_status::complete, ACL_STREAM_STATUS_COMPLETE)
KEEL_TEST_VALUE(keel::acl::stream_status::not_ready, ACL_STREAM_STATUS_NOT_READY)
KEEL_TEST_VALUE(keel::acl::stream_status::reserved, ACL_STREAM_STATUS_RESERVED)

KEEL_TEST_VALUE(keel::acl::event_flags::sync, ACL_EVENT_SYNC)
KEEL_TEST_VALUE(keel::acl::event_flags::capture_stream_progress, ACL_EVENT_CAPTURE_STREAM_PROGRESS)
KEEL_TEST_VALUE(keel::acl::event_flags::time_line, ACL_EVENT_TIME_LINE)
KEEL_TEST_VALUE(keel::acl::event_flags::device_use_only, ACL_EVENT_DEVICE_USE_ONLY)
KEEL_TEST_VALUE(keel::acl::event_flags::external, ACL_EVENT_EXTERNAL)
KEEL_TEST_VALUE(keel::acl::event_flags::ipc, ACL_EVENT_IPC)
KEEL_TEST_VALUE(keel::acl::record_flags::none, ACL_EVENT_RECORD_DEFAULT)
KEEL_TEST_VALUE(keel::acl::record_flags::external, ACL_EVENT_RECORD_EXTERNAL)
KEEL_TEST_VALUE(keel::acl::wait_flags::none, ACL_EVENT_WAIT_DEFAULT)
KEEL_TEST_VALUE(keel::acl::wait_flags::external, ACL_EVENT_WAIT_EXTERNAL)
KEEL_TEST_VALUE(keel::acl::stream_flags::fast_launch, ACL_STREAM_FAST_LAUNCH)
KEEL_TEST_VALUE(keel::acl::stream_flags::fast_sync, ACL_STREAM_FAST_SYNC)
KEEL_TEST_VALUE(keel::acl::stream_flags::persistent, ACL_STREAM_PERSISTENT)
KEEL_TEST_VALUE(keel::acl::stream_flags::huge, ACL_STREAM_HUGE)
KEEL_TEST_VALUE(keel::acl::stream_flags::cpu_schedule, ACL_STREAM_CPU_SCHEDULE)
KEEL_TEST_VALUE(keel::acl::stream_flags::device_use_only, ACL_STREAM_DEVICE_USE_ONLY)
KEEL_TEST_VALUE(keel::compare_condition::equal, ACL_RT_EQUAL)
KEEL_TEST_VALUE(keel::compare_condition::less_or_equal, ACL_RT_LESS_OR_EQUAL)
KEEL_TEST_VALUE(keel::compare_type::int64, ACL_RT_SWITCH_INT64)
KEEL_TEST_VALUE(keel::acl::cond_handle_flag::assign_default, ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT)
KEEL_TEST_VALUE(keel::acl::cond_task_type::while_, ACL_MODEL_RI_COND_TYPE_WHILE)
KEEL_TEST_VALUE(keel::acl::cond_task_type::switch_, ACL_MODEL_RI_COND_TYPE_SWITCH)
KEEL_TEST_VALUE(keel::acl::mem_attr::ddr, ACL_DDR_MEM)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm, ACL_HBM_MEM)
KEEL_TEST_VALUE(keel::acl::mem_attr::ddr_huge, ACL_DDR_MEM_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::ddr_normal, ACL_DDR_MEM_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_huge, ACL_HBM_MEM_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_normal, ACL_HBM_MEM_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::ddr_p2p_huge, ACL_DDR_MEM_P2P_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::ddr_p2p_normal, ACL_DDR_MEM_P2P_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_p2p_huge, ACL_HBM_MEM_P2P_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_p2p_normal, ACL_HBM_MEM_P2P_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_huge1g, ACL_HBM_MEM_HUGE1G)
KEEL_TEST_VALUE(keel::acl::mem_attr::hbm_p2p_huge1g, ACL_HBM_MEM_P2P_HUGE1G)
KEEL_TEST_VALUE(keel::acl::mem_attr::normal, ACL_MEM_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::huge, ACL_MEM_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::huge1g, ACL_MEM_HUGE1G)
KEEL_TEST_VALUE(keel::acl::mem_attr::p2p_normal, ACL_MEM_P2P_NORMAL)
KEEL_TEST_VALUE(keel::acl::mem_attr::p2p_huge, ACL_MEM_P2P_HUGE)
KEEL_TEST_VALUE(keel::acl::mem_attr::p2p_huge1g, ACL_MEM_P2P_HUGE1G)
KEEL_TEST_VALUE(keel::acl::run_mode::device, ACL_DEVICE)
KEEL_TEST_VALUE(keel::acl::run_mode::host, ACL_HOST)
KEEL_TEST_VALUE(keel::acl::device_attribute::aicpu_core_num, ACL_DEV_ATTR_AICPU_CORE_NUM)
KEEL_TEST_VALUE(keel::acl::device_attribute::aicore_core_num, ACL_DEV_ATTR_AICORE_CORE_NUM)
KEEL_TEST_VALUE(keel::acl::device_attribute::cube_core_num, ACL_DEV_ATTR_CUBE_CORE_NUM)
KEEL_TEST_VALUE(keel::acl::device_attribute::vector_core_num, ACL_DEV_ATTR_VECTOR_CORE_NUM)
KEEL_TEST_VALUE(keel::acl::device_attribute::total_global_mem_size, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE)
KEEL_TEST_VALUE(keel::acl::device_attribute::l2_cache_size, ACL_DEV_ATTR_L2_CACHE_SIZE)
KEEL_TEST_VALUE(keel::acl::value_wait::geq, ACL_STREAM_WAIT_VALUE_GEQ)
KEEL_TEST_VALUE(keel::acl::value_wait::eq, ACL_STREAM_WAIT_VALUE_EQ)
KEEL_TEST_VALUE(keel::acl::value_wait::and_, ACL_STREAM_WAIT_VALUE_AND)
KEEL_TEST_VALUE(keel::acl::value_wait::nor, ACL_STREAM_WAIT_VALUE_NOR)
KEEL_TEST_VALUE(keel::acl::device_resource::cube_core, ACL_RT_DEV_RES_CUBE_CORE)
KEEL_TEST_VALUE(keel::acl::device_resource::vector_core, ACL_RT_DEV_RES_VECTOR_CORE)
KEEL_TEST_VALUE(keel::acl::float_overflow_mode::saturation, ACL_RT_OVERFLOW_MODE_SATURATION)
KEEL_TEST_VALUE(keel::acl::float_overflow_mode::inf_nan, ACL_RT_OVERFLOW_MODE_INFNAN)
KEEL_TEST_VALUE(keel::acl::float_overflow_mode::undefined, ACL_RT_OVERFLOW_MODE_UNDEF)
KEEL_TEST_VALUE(keel::acl::stream_state::create_post, ACL_RT_STREAM_STATE_CREATE_POST)
KEEL_TEST_VALUE(keel::acl::stream_state::destroy_pre, ACL_RT_STREAM_STATE_DESTROY_PRE)
#undef KEEL_TEST_VALUE

TEST_CASE("headers: keel's table lists exactly the functions checked against the declarations", "[acl][headers]") {
  const std::vector<std::string> checked = {
#define KEEL_TEST_NAME(name) #name,
      KEEL_TEST_ACL_FUNCTIONS(KEEL_TEST_NAME)
#undef KEEL_TEST_NAME
  };
  REQUIRE(checked.size() == keel::acl::api::size());
  for (std::size_t i = 0; i < checked.size(); ++i) {
    CHECK(checked[i] == keel::acl::functions[i].name);
  }
}

TEST_CASE("headers: every function is looked up in the CANN library that exports it", "[acl][headers]") {
  for (const auto& function : keel::acl::functions) {
    const std::string name = function.name;
    INFO(name);
    if (name.rfind("aclnn", 0) == 0) {
      CHECK(function.home == keel::acl::library::opapi);
    } else if (name.rfind("aclrt", 0) == 0 || name.rfind("aclmdl", 0) == 0 || name.rfind("aclsys", 0) == 0 ||
               name.find("DataBuffer") != std::string::npos || name == "aclInit" || name == "aclFinalize" ||
               name == "aclGetRecentErrMsg") {
      // The runtime's own calls, acl_base_rt.h's data buffers among them (libascendcl).
      CHECK(function.home == keel::acl::library::ascendcl);
    } else {
      // aclCreate*/aclDestroy*/aclSetAclOpExecutorRepeatable: the aclnn meta objects.
      CHECK(function.home == keel::acl::library::nnopbase);
    }
  }
}

TEST_CASE("headers: a C99 compiler sees the sizes and values keel mirrors", "[acl][headers]") {
  const std::vector<long long> expected = {
      static_cast<long long>(sizeof(keel::acl::data_type)),
      static_cast<long long>(sizeof(keel::acl::format)),
      static_cast<long long>(sizeof(keel::acl::memcpy_kind)),
      static_cast<long long>(sizeof(keel::acl::malloc_policy)),
      static_cast<long long>(sizeof(keel::acl::capture_mode)),
      static_cast<long long>(sizeof(keel::acl::capture_status)),
      static_cast<long long>(sizeof(keel::acl::event_recorded_status)),
      static_cast<long long>(sizeof(keel::acl::stream_status)),
      static_cast<long long>(sizeof(keel::acl::stream_handle)),
      static_cast<long long>(sizeof(keel::acl::status)),
      static_cast<long long>(sizeof(keel::acl::nn_status)),
      static_cast<long long>(keel::acl::data_type::undefined),
      static_cast<long long>(keel::acl::data_type::bfloat16),
      static_cast<long long>(keel::acl::format::ncl),
      static_cast<long long>(keel::acl::memcpy_kind::device_to_host),
      static_cast<long long>(keel::acl::malloc_policy::normal_only),
      static_cast<long long>(keel::acl::capture_mode::relaxed),
      static_cast<long long>(keel::acl::capture_status::invalidated),
      static_cast<long long>(keel::acl::stream_status::reserved),
      static_cast<long long>(keel::acl::event_flags::external),
      static_cast<long long>(keel::acl::record_flags::external),
      static_cast<long long>(keel::acl::wait_flags::external),
      static_cast<long long>(keel::acl::stream_flags::persistent),
      static_cast<long long>(keel::acl::errc::invalid_param),
      static_cast<long long>(keel::acl::errc::rt_feature_not_support),
      static_cast<long long>(keel::acl::errc::stream_task_group_status),
      static_cast<long long>(keel::acl::errc::nn_param_nullptr),
      static_cast<long long>(keel::acl::errc::nn_param_invalid),
  };
  std::vector<long long> seen(expected.size() + 1, -12345);
  const std::size_t count = keel_acl_c_probe(seen.data(), seen.size());
  REQUIRE(count == expected.size());
  seen.resize(count);
  CHECK(seen == expected);
  CHECK(seen[0] == 4);  // the C enums are int-sized, as keel's `: int` enums
}
