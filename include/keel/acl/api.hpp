// SPDX-License-Identifier: Apache-2.0
// The ACL function table: one typed entry per ACL function keel's ACL backend
// calls, filled by name at run time from any resolver (dlsym on a library
// handle, a keel plugin library lease), never linked at build time. A function
// the runtime lacks is no error when the table is filled; calling it throws
// keel::errc::not_supported naming the function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/acl/detail/model_query_types.hpp"
#include "keel/acl/library.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"
#include "keel/runtime/backend/built_model.hpp"

// X(library, return type, name, parameter list): the ACL subset keel uses,
// with the signatures CANN documents (hicann/runtime docs/zh/api_ref/
// 02, 04, 06, 07, 10, 11-03, 11-08, 11-10, 13 and 15; CANN aolapi reference for aclnn). keel's
// enums stand for CANN's by-value enum parameters (same size and values);
// tests/acl/headers_test.cpp checks each type against the declarations.
#define KEEL_DETAIL_ACL_FUNCTIONS(X)                                                                             \
  X(ascendcl, status, aclInit, (const char* configPath))                                                        \
  X(ascendcl, status, aclFinalize, ())                                                                          \
  X(ascendcl, const char*, aclGetRecentErrMsg, ())                                                              \
  X(ascendcl, status, aclrtPeekAtLastError, (last_error_level level))                                           \
  X(ascendcl, status, aclrtGetLastError, (last_error_level level))                                              \
  X(ascendcl, status, aclrtSetDevice, (std::int32_t deviceId))                                                  \
  X(ascendcl, status, aclrtResetDevice, (std::int32_t deviceId))                                                \
  X(ascendcl, status, aclrtGetDevice, (std::int32_t * deviceId))                                                \
  X(ascendcl, status, aclrtGetDeviceCount, (std::uint32_t * count))                                             \
  X(ascendcl, status, aclrtSynchronizeDevice, ())                                                               \
  X(ascendcl, status, aclrtSynchronizeDeviceWithTimeout, (std::int32_t timeout))                               \
  X(ascendcl, status, aclrtCreateStream, (stream_handle * stream))                                              \
  X(ascendcl, status, aclrtCreateStreamWithConfig, (stream_handle * stream, std::uint32_t priority,             \
                                                    std::uint32_t flag))                                        \
  X(ascendcl, status, aclrtDestroyStream, (stream_handle stream))                                               \
  X(ascendcl, status, aclrtDestroyStreamForce, (stream_handle stream))                                          \
  X(ascendcl, status, aclrtSynchronizeStream, (stream_handle stream))                                           \
  X(ascendcl, status, aclrtSynchronizeStreamWithTimeout, (stream_handle stream, std::int32_t timeout))          \
  X(ascendcl, status, aclrtStreamQuery, (stream_handle stream, stream_status * status))                         \
  X(ascendcl, status, aclrtStreamWaitEvent, (stream_handle stream, event_handle event))                         \
  X(ascendcl, status, aclrtStreamWaitEventWithTimeout, (stream_handle stream, event_handle event,               \
                                                        std::int32_t timeout))                                  \
  X(ascendcl, status, aclrtStreamWaitEventWithFlag, (stream_handle stream, event_handle event,                  \
                                                     std::uint32_t timeout, std::uint32_t flag))                \
  X(ascendcl, status, aclrtSubscribeReport, (std::uint64_t threadId, stream_handle stream))                     \
  X(ascendcl, status, aclrtLaunchCallback, (callback fn, void* userData, callback_block blockType,              \
                                            stream_handle stream))                                              \
  X(ascendcl, status, aclrtProcessReport, (std::int32_t timeout))                                               \
  X(ascendcl, status, aclrtUnSubscribeReport, (std::uint64_t threadId, stream_handle stream))                   \
  X(ascendcl, status, aclrtLaunchHostFunc, (stream_handle stream, host_func fn, void* args))                     \
  X(ascendcl, status, aclrtSubscribeHostFunc, (std::uint64_t hostFuncThreadId, stream_handle exeStream))         \
  X(ascendcl, status, aclrtProcessHostFunc, (std::int32_t timeout))                                              \
  X(ascendcl, status, aclrtUnSubscribeHostFunc, (std::uint64_t hostFuncThreadId, stream_handle exeStream))       \
  X(ascendcl, status, aclrtCreateContext, (context_handle * context, std::int32_t deviceId))                      \
  X(ascendcl, status, aclrtDestroyContext, (context_handle context))                                              \
  X(ascendcl, status, aclrtSetCurrentContext, (context_handle context))                                           \
  X(ascendcl, status, aclrtGetCurrentContext, (context_handle * context))                                         \
  X(ascendcl, status, aclrtResetDeviceForce, (std::int32_t deviceId))                                             \
  X(ascendcl, status, aclrtStreamGetId, (stream_handle stream, std::int32_t * streamId))                          \
  X(ascendcl, status, aclrtStreamGetFlags, (stream_handle stream, std::uint32_t * flags))                         \
  X(ascendcl, status, aclrtStreamGetPriority, (stream_handle stream, std::uint32_t * priority))                   \
  X(ascendcl, status, aclrtDeviceGetStreamPriorityRange, (std::int32_t * leastPriority,                           \
                                                          std::int32_t * greatestPriority))                       \
  X(ascendcl, status, aclrtCreateEvent, (event_handle * event))                                                 \
  X(ascendcl, status, aclrtCreateEventWithFlag, (event_handle * event, std::uint32_t flag))                     \
  X(ascendcl, status, aclrtCreateEventExWithFlag, (event_handle * event, std::uint32_t flag))                   \
  X(ascendcl, status, aclrtDestroyEvent, (event_handle event))                                                  \
  X(ascendcl, status, aclrtRecordEvent, (event_handle event, stream_handle stream))                             \
  X(ascendcl, status, aclrtRecordEventWithFlag, (event_handle event, stream_handle stream, std::uint32_t flag)) \
  X(ascendcl, status, aclrtResetEvent, (event_handle event, stream_handle stream))                              \
  X(ascendcl, status, aclrtQueryEventStatus, (event_handle event, event_recorded_status * status))              \
  X(ascendcl, status, aclrtSynchronizeEvent, (event_handle event))                                              \
  X(ascendcl, status, aclrtSynchronizeEventWithTimeout, (event_handle event, std::int32_t timeout))             \
  X(ascendcl, status, aclrtEventElapsedTime, (float* ms, event_handle startEvent, event_handle endEvent))       \
  X(ascendcl, status, aclrtMalloc, (void** devPtr, std::size_t size, malloc_policy policy))                     \
  X(ascendcl, status, aclrtFree, (void* devPtr))                                                                \
  X(ascendcl, status, aclrtMallocHost, (void** hostPtr, std::size_t size))                                      \
  X(ascendcl, status, aclrtFreeHost, (void* hostPtr))                                                           \
  X(ascendcl, status, aclrtMemcpy, (void* dst, std::size_t destMax, const void* src, std::size_t count,         \
                                    memcpy_kind kind))                                                          \
  X(ascendcl, status, aclrtMemcpyAsync, (void* dst, std::size_t destMax, const void* src, std::size_t count,    \
                                         memcpy_kind kind, stream_handle stream))                               \
  X(ascendcl, status, aclrtMemset, (void* devPtr, std::size_t maxCount, std::int32_t value, std::size_t count)) \
  X(ascendcl, status, aclrtMemsetAsync, (void* devPtr, std::size_t maxCount, std::int32_t value,                \
                                         std::size_t count, stream_handle stream))                              \
  X(ascendcl, status, aclrtMemPoolCreate, (mem_pool_handle * memPool, const mem_pool_props* poolProps))          \
  X(ascendcl, status, aclrtMemPoolDestroy, (mem_pool_handle memPool))                                           \
  X(ascendcl, status, aclrtMemPoolSetAttr, (mem_pool_handle memPool, mem_pool_attr attr, void* value))          \
  X(ascendcl, status, aclrtMemPoolGetAttr, (mem_pool_handle memPool, mem_pool_attr attr, void* value))          \
  X(ascendcl, status, aclrtMemPoolMallocAsync, (void** ptr, std::size_t size, mem_pool_handle memPool,          \
                                                stream_handle stream))                                          \
  X(ascendcl, status, aclrtMemPoolFreeAsync, (void* ptr, stream_handle stream))                                 \
  X(ascendcl, status, aclrtMemPoolTrimTo, (mem_pool_handle memPool, std::size_t minBytesToKeep))                \
  X(ascendcl, allocator_desc_handle, aclrtAllocatorCreateDesc, ())                                              \
  X(ascendcl, status, aclrtAllocatorDestroyDesc, (allocator_desc_handle allocatorDesc))                         \
  X(ascendcl, status, aclrtAllocatorSetObjToDesc, (allocator_desc_handle allocatorDesc, void* allocator))       \
  X(ascendcl, status, aclrtAllocatorSetAllocFuncToDesc, (allocator_desc_handle allocatorDesc,                   \
                                                         allocator_alloc_func func))                            \
  X(ascendcl, status, aclrtAllocatorSetFreeFuncToDesc, (allocator_desc_handle allocatorDesc,                    \
                                                        allocator_free_func func))                              \
  X(ascendcl, status, aclrtAllocatorSetAllocAdviseFuncToDesc, (allocator_desc_handle allocatorDesc,             \
                                                               allocator_alloc_advise_func func))               \
  X(ascendcl, status, aclrtAllocatorSetGetAddrFromBlockFuncToDesc, (allocator_desc_handle allocatorDesc,        \
                                                                    allocator_get_addr_func func))              \
  X(ascendcl, status, aclrtAllocatorRegister, (stream_handle stream, allocator_desc_handle allocatorDesc))      \
  X(ascendcl, status, aclrtAllocatorGetByStream, (stream_handle stream, allocator_desc_handle * allocatorDesc,  \
                                                  void** allocator, allocator_alloc_func* allocFunc,            \
                                                  allocator_free_func* freeFunc,                                \
                                                  allocator_alloc_advise_func* allocAdviseFunc,                 \
                                                  allocator_get_addr_func* getAddrFromBlockFunc))               \
  X(ascendcl, status, aclrtAllocatorUnregister, (stream_handle stream))                                         \
  X(ascendcl, status, aclmdlRICaptureBegin, (stream_handle stream, capture_mode mode))                          \
  X(ascendcl, status, aclmdlRICaptureGetInfo, (stream_handle stream, capture_status * status,                   \
                                               model_handle * modelRI))                                         \
  X(ascendcl, status, aclmdlRICaptureThreadExchangeMode, (capture_mode * mode))                                 \
  X(ascendcl, status, aclmdlRICaptureEnd, (stream_handle stream, model_handle * modelRI))                       \
  X(ascendcl, status, aclmdlRICaptureTaskGrpBegin, (stream_handle stream))                                      \
  X(ascendcl, status, aclmdlRICaptureTaskGrpEnd, (stream_handle stream, task_group_handle * handle))            \
  X(ascendcl, status, aclmdlRICaptureTaskUpdateBegin, (stream_handle stream, task_group_handle handle))         \
  X(ascendcl, status, aclmdlRICaptureTaskUpdateEnd, (stream_handle stream))                                     \
  X(ascendcl, status, aclmdlRIExecuteAsync, (model_handle modelRI, stream_handle stream))                       \
  X(ascendcl, status, aclmdlRIExecute, (model_handle modelRI, std::int32_t timeout))                            \
  X(ascendcl, status, aclmdlRIDestroy, (model_handle modelRI))                                                  \
  X(ascendcl, status, aclmdlRIBuildBegin, (model_handle * modelRI, std::uint32_t flag))                       \
  X(ascendcl, status, aclmdlRIBindStream, (model_handle modelRI, stream_handle stream, std::uint32_t flag))     \
  X(ascendcl, status, aclmdlRIEndTask, (model_handle modelRI, stream_handle stream))                            \
  X(ascendcl, status, aclmdlRIBuildEnd, (model_handle modelRI, void* reserve))                                  \
  X(ascendcl, status, aclmdlRIUnbindStream, (model_handle modelRI, stream_handle stream))                       \
  X(ascendcl, status, aclrtActiveStream, (stream_handle activeStream, stream_handle stream))                    \
  X(ascendcl, status, aclmdlRICondHandleCreate, (model_handle modelRI, std::uint32_t defaultLaunchValue,          \
                                                 cond_handle_flag flag, cond_handle * handle))                  \
  X(ascendcl, status, aclmdlRICondHandleGetCondPtr, (cond_handle handle, std::uint64_t * *ptr))                 \
  X(ascendcl, status, aclmdlRIAddCondTask, (cond_task_params params, stream_handle stream, std::uint32_t flags))  \
  X(ascendcl, status, aclmdlRICaptureToModelRIBegin, (stream_handle stream, model_handle modelRI,               \
                                                      capture_mode mode))                                       \
  X(ascendcl, status, aclrtSwitchStream, (void* leftValue, ::keel::compare_condition cond, void* rightValue,    \
                                          ::keel::compare_type dataType, stream_handle trueStream,              \
                                          stream_handle falseStream, stream_handle stream))                     \
  X(ascendcl, status, aclmdlRIGetId, (model_handle modelRI, std::uint32_t * modelRIId))                         \
  X(ascendcl, status, aclmdlRISetName, (model_handle modelRI, const char* name))                               \
  X(ascendcl, status, aclmdlRIGetName, (model_handle modelRI, std::uint32_t maxLen, char* name))               \
  X(ascendcl, status, aclmdlRIDestroyRegisterCallback, (model_handle modelRI, callback func, void* userData))   \
  X(ascendcl, status, aclmdlRIDestroyUnregisterCallback, (model_handle modelRI, callback func))                \
  X(ascendcl, status, aclmdlRIAbort, (model_handle modelRI))                                                    \
  X(ascendcl, status, aclmdlRIGetStreams, (model_handle modelRI, stream_handle * streams,                      \
                                           std::uint32_t * numStreams))                                         \
  X(ascendcl, status, aclmdlRIGetTasksByStream, (stream_handle stream, task_handle * tasks,                    \
                                                 std::uint32_t * numTasks))                                     \
  X(ascendcl, status, aclmdlRITaskGetType, (task_handle task, ri_task_type * type))                            \
  X(ascendcl, status, aclmdlRITaskGetSeqId, (task_handle task, std::uint32_t * id))                            \
  X(ascendcl, status, aclmdlRITaskGetParams, (task_handle task, ri_task_params * params))                      \
  X(ascendcl, status, aclmdlRITaskSetParams, (task_handle task, ri_task_params * params))                      \
  X(ascendcl, status, aclmdlRIKernelTaskGetAttribute, (task_handle task, kernel_attribute attrId,               \
                                                       kernel_attribute_value * attrValue))                     \
  X(ascendcl, status, aclmdlRITaskDisable, (task_handle task))                                                  \
  X(ascendcl, status, aclmdlRIUpdate, (model_handle modelRI))                                                   \
  X(ascendcl, status, aclrtGetFunctionName, (function_handle funcHandle, std::uint32_t maxLen, char* name))    \
  X(ascendcl, status, aclmdlRIDebugPrint, (model_handle modelRI))                                               \
  X(ascendcl, status, aclmdlRIDebugJsonPrint, (model_handle modelRI, const char* path, std::uint32_t flags))   \
  X(nnopbase, tensor_handle, aclCreateTensor, (const std::int64_t* viewDims, std::uint64_t viewDimsNum,         \
                                               data_type dataType, const std::int64_t* stride,                  \
                                               std::int64_t offset, format dataFormat,                              \
                                               const std::int64_t* storageDims, std::uint64_t storageDimsNum,   \
                                               void* tensorData))                                               \
  X(nnopbase, scalar_handle, aclCreateScalar, (void* value, data_type dataType))                                \
  X(nnopbase, int_array_handle, aclCreateIntArray, (const std::int64_t* value, std::uint64_t size))             \
  X(nnopbase, nn_status, aclDestroyTensor, (const ::aclTensor* tensor))                                         \
  X(nnopbase, nn_status, aclDestroyScalar, (const ::aclScalar* scalar))                                         \
  X(nnopbase, nn_status, aclDestroyIntArray, (const ::aclIntArray* array))                                      \
  X(nnopbase, nn_status, aclSetAclOpExecutorRepeatable, (executor_handle executor))                             \
  X(nnopbase, nn_status, aclDestroyAclOpExecutor, (executor_handle executor))                                   \
  X(opapi, nn_status, aclnnAddGetWorkspaceSize, (const ::aclTensor* self, const ::aclTensor* other,             \
                                                 const ::aclScalar* alpha, ::aclTensor* out,                    \
                                                 std::uint64_t* workspaceSize, ::aclOpExecutor** executor))     \
  X(opapi, nn_status, aclnnAdd, (void* workspace, std::uint64_t workspaceSize, executor_handle executor,        \
                                 stream_handle stream))                                                         \
  X(opapi, nn_status, aclnnAddcmulGetWorkspaceSize, (const ::aclTensor* self, const ::aclTensor* tensor1,       \
                                                     const ::aclTensor* tensor2, const ::aclScalar* value,      \
                                                     ::aclTensor* out, std::uint64_t* workspaceSize,            \
                                                     ::aclOpExecutor** executor))                               \
  X(opapi, nn_status, aclnnAddcmul, (void* workspace, std::uint64_t workspaceSize, executor_handle executor,    \
                                     stream_handle stream))                                                     \
  X(opapi, nn_status, aclnnMulGetWorkspaceSize, (const ::aclTensor* self, const ::aclTensor* other,             \
                                                 ::aclTensor* out, std::uint64_t* workspaceSize,                \
                                                 ::aclOpExecutor** executor))                                   \
  X(opapi, nn_status, aclnnMul, (void* workspace, std::uint64_t workspaceSize, executor_handle executor,        \
                                 stream_handle stream))                                                         \
  X(opapi, nn_status, aclnnCastGetWorkspaceSize, (const ::aclTensor* self, data_type dtype, ::aclTensor* out,   \
                                                  std::uint64_t* workspaceSize, ::aclOpExecutor** executor))    \
  X(opapi, nn_status, aclnnCast, (void* workspace, std::uint64_t workspaceSize, executor_handle executor,       \
                                  stream_handle stream))                                                        \
  X(opapi, nn_status, aclnnAdaptiveAvgPool2dGetWorkspaceSize, (const ::aclTensor* self,                         \
                                                               const ::aclIntArray* outputSize,                 \
                                                               ::aclTensor* out, std::uint64_t* workspaceSize,  \
                                                               ::aclOpExecutor** executor))                     \
  X(opapi, nn_status, aclnnAdaptiveAvgPool2d, (void* workspace, std::uint64_t workspaceSize,                    \
                                               executor_handle executor, stream_handle stream))                 \
  X(opapi, nn_status, aclnnBaddbmmGetWorkspaceSize, (const ::aclTensor* self, const ::aclTensor* batch1,        \
                                                     const ::aclTensor* batch2, const ::aclScalar* beta,        \
                                                     const ::aclScalar* alpha, ::aclTensor* out,                \
                                                     std::int8_t cubeMathType, std::uint64_t* workspaceSize,    \
                                                     ::aclOpExecutor** executor))                               \
  X(opapi, nn_status, aclnnBaddbmm, (void* workspace, std::uint64_t workspaceSize, executor_handle executor,    \
                                     stream_handle stream))                                                     \
  X(ascendcl, status, aclrtDeviceCanAccessPeer, (std::int32_t * canAccessPeer, std::int32_t deviceId,           \
                                                 std::int32_t peerDeviceId))                                    \
  X(ascendcl, status, aclrtDeviceEnablePeerAccess, (std::int32_t peerDeviceId, std::uint32_t flags))            \
  X(ascendcl, status, aclrtDeviceDisablePeerAccess, (std::int32_t peerDeviceId))                                \
  X(ascendcl, status, aclrtDevicePeerAccessStatus, (std::int32_t deviceId, std::int32_t peerDeviceId,           \
                                                    std::int32_t * status))                                     \
  X(ascendcl, status, aclrtGetMemInfo, (mem_attr attr, std::size_t * free, std::size_t * total))                 \
  X(ascendcl, status, aclrtGetRunMode, (run_mode * runMode))                                                    \
  X(ascendcl, status, aclsysGetVersionStr, (char* pkgName, char* versionStr))                                   \
  X(ascendcl, status, aclsysGetVersionNum, (char* pkgName, std::int32_t * versionNum))                          \
  X(ascendcl, const char*, aclrtGetSocName, ())                                                                 \
  X(ascendcl, status, aclrtGetDeviceInfo, (std::uint32_t deviceId, device_attribute attr, std::int64_t * value)) \
  X(ascendcl, status, aclrtCtxGetCurrentDefaultStream, (stream_handle * stream))                                \
  X(ascendcl, status, aclrtValueWrite, (void* devAddr, std::uint64_t value, std::uint32_t flag,                 \
                                        stream_handle stream))                                                  \
  X(ascendcl, status, aclrtValueWait, (void* devAddr, std::uint64_t value, std::uint32_t flag,                  \
                                       stream_handle stream))                                                   \
  X(ascendcl, ::aclDataBuffer*, aclCreateDataBuffer, (void* data, std::size_t size))                            \
  X(ascendcl, status, aclDestroyDataBuffer, (const ::aclDataBuffer* dataBuffer))                                \
  X(ascendcl, status, aclUpdateDataBuffer, (::aclDataBuffer * dataBuffer, void* data, std::size_t size))        \
  X(ascendcl, void*, aclGetDataBufferAddr, (const ::aclDataBuffer* dataBuffer))                                 \
  X(ascendcl, std::size_t, aclGetDataBufferSizeV2, (const ::aclDataBuffer* dataBuffer))                        \
  X(ascendcl, status, aclrtCreateNotify, (notify_handle * notify, std::uint64_t flag))                          \
  X(ascendcl, status, aclrtDestroyNotify, (notify_handle notify))                                               \
  X(ascendcl, status, aclrtRecordNotify, (notify_handle notify, stream_handle stream))                          \
  X(ascendcl, status, aclrtWaitAndResetNotify, (notify_handle notify, stream_handle stream,                     \
                                                std::uint32_t timeout))                                         \
  X(ascendcl, status, aclrtGetNotifyId, (notify_handle notify, std::uint32_t * notifyId))                       \
  X(ascendcl, status, aclrtNotifyBatchReset, (notify_handle * notifies, std::size_t num))                       \
  X(ascendcl, status, aclrtGetResInCurrentThread, (device_resource type, std::uint32_t * value))                \
  X(ascendcl, status, aclrtGetDeviceResLimit, (std::int32_t deviceId, device_resource type,                     \
                                               std::uint32_t * value))                                          \
  X(ascendcl, status, aclrtSetDeviceResLimit, (std::int32_t deviceId, device_resource type,                     \
                                               std::uint32_t value))                                            \
  X(ascendcl, status, aclrtResetDeviceResLimit, (std::int32_t deviceId))                                        \
  X(ascendcl, status, aclrtIpcGetEventHandle, (event_handle event, ipc_event_handle * handle))                  \
  X(ascendcl, status, aclrtIpcOpenEventHandle, (ipc_event_handle handle, event_handle * event))                  \
  X(ascendcl, status, aclrtCreateLabel, (label_handle * label))                                                  \
  X(ascendcl, status, aclrtSetLabel, (label_handle label, stream_handle stream))                                 \
  X(ascendcl, status, aclrtDestroyLabel, (label_handle label))                                                   \
  X(ascendcl, status, aclrtCreateLabelList, (label_handle * labels, std::size_t num,                             \
                                             label_list_handle * labelList))                                     \
  X(ascendcl, status, aclrtDestroyLabelList, (label_list_handle labelList))                                      \
  X(ascendcl, status, aclrtSwitchLabelByIndex, (void* ptr, std::uint32_t maxValue, label_list_handle labelList,  \
                                                stream_handle stream))                                           \
  X(ascendcl, status, aclrtSetDeviceSatMode, (float_overflow_mode mode))                                         \
  X(ascendcl, status, aclrtGetDeviceSatMode, (float_overflow_mode * mode))                                       \
  X(ascendcl, status, aclrtSetStreamOverflowSwitch, (stream_handle stream, std::uint32_t flag))                  \
  X(ascendcl, status, aclrtGetStreamOverflowSwitch, (stream_handle stream, std::uint32_t * flag))                \
  X(ascendcl, status, aclrtGetOverflowStatus, (void* outputAddr, std::size_t outputSize, stream_handle stream))  \
  X(ascendcl, status, aclrtResetOverflowStatus, (stream_handle stream))                                          \
  X(ascendcl, status, aclrtSetExceptionInfoCallback, (exception_info_callback callback))                         \
  X(ascendcl, status, aclrtExceptionInfoCallbackRegister, (exception_info_callback callback))                    \
  X(ascendcl, status, aclrtExceptionInfoCallbackUnregister, (exception_info_callback callback))                  \
  X(ascendcl, std::uint32_t, aclrtGetTaskIdFromExceptionInfo, (const exception_info* info))                      \
  X(ascendcl, std::uint32_t, aclrtGetStreamIdFromExceptionInfo, (const exception_info* info))                    \
  X(ascendcl, std::uint32_t, aclrtGetThreadIdFromExceptionInfo, (const exception_info* info))                    \
  X(ascendcl, std::uint32_t, aclrtGetDeviceIdFromExceptionInfo, (const exception_info* info))                    \
  X(ascendcl, std::uint32_t, aclrtGetErrorCodeFromExceptionInfo, (const exception_info* info))                   \
  X(ascendcl, status, aclrtGetArgsFromExceptionInfo,                                                             \
    (const exception_info* info, void** devArgsPtr, std::uint32_t* devArgsLen))                                  \
  X(ascendcl, status, aclrtGetFuncHandleFromExceptionInfo, (const exception_info* info, func_handle* func))      \
  X(ascendcl, status, aclrtGetDeviceUtilizationRate, (std::int32_t deviceId, utilization_info* utilizationInfo)) \
  X(ascendcl, status, aclrtStreamAbort, (stream_handle stream))                                                  \
  X(ascendcl, status, aclrtRegStreamStateCallback,                                                               \
    (const char* regName, stream_state_callback callback, void* args))

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

template <class Signature>
class api_function;

/**
 * @brief One entry of the ACL function table: the function's name and its
 * address in the runtime, or null when the runtime lacks it.
 *
 * Ownership: none; the library that holds the code must stay loaded while
 * the entry is called. Thread safety: immutable; calls are as thread-safe as
 * the ACL function. Exceptions: calling a missing function throws
 * keel::error(keel::errc::not_supported); otherwise the call is the C call.
 *
 * @code
 * keel::acl::status s = api.aclrtCreateStream(&stream);   // throws if absent
 * if (api.aclmdlRICaptureTaskGrpBegin) { ... }            // feature test
 * @endcode
 */
template <class R, class... Args>
class api_function<R(Args...)> {
 public:
  /// The C function pointer type.
  using pointer = R (*)(Args...);

  /** @brief An entry for @p name, resolved to @p address (null: missing). */
  constexpr explicit api_function(const char* name, pointer address = nullptr) noexcept
      : name_(name), address_(address) {}

  /** @brief Calls the function. @throws keel::error(not_supported) when it is missing. */
  R operator()(Args... args) const {
    if (address_ == nullptr) throw_missing(name_);
    return address_(args...);
  }

  /** @brief The ACL name, e.g. "aclrtCreateStream". Throws: nothing. */
  constexpr const char* name() const noexcept { return name_; }
  /** @brief The resolved address, or null. Throws: nothing. */
  constexpr pointer get() const noexcept { return address_; }
  /** @brief Whether the runtime provides the function. Throws: nothing. */
  constexpr explicit operator bool() const noexcept { return address_ != nullptr; }

 private:
  [[noreturn]] static void throw_missing(const char* name) {
    throw keel::error(keel::errc::not_supported, name, "not supported by this runtime (CANN too old?)");
  }

  const char* name_;
  pointer address_;
};

/** @brief Name and home library of one function of the table. */
struct function_info {
  /// The function's ACL name.
  const char* name;
  /// The library that exports it.
  library home;
};

/**
 * @brief Every ACL function the table holds, in table order, with the CANN
 * library that exports it.
 */
inline constexpr function_info functions[] = {
#define KEEL_DETAIL_ACL_INFO(lib, ret, name, params) {#name, library::lib},
    KEEL_DETAIL_ACL_FUNCTIONS(KEEL_DETAIL_ACL_INFO)
#undef KEEL_DETAIL_ACL_INFO
};

namespace detail {

// dlsym and friends hand out void*; converting that to a function pointer is
// only conditionally supported by a cast, so copy the bits: POSIX guarantees
// the representations agree (dlsym's rationale).
template <class Pointer>
Pointer function_from_symbol(void* symbol) noexcept {
  static_assert(sizeof(Pointer) == sizeof(void*), "function and object pointers differ in size");
  Pointer function = nullptr;
  std::memcpy(&function, &symbol, sizeof function);
  return function;
}

template <class Resolver>
void* lookup_symbol(Resolver& resolver, library home, const char* name) {
  if constexpr (std::is_invocable_r_v<void*, Resolver&, library, const char*>) {
    return resolver(home, name);
  } else {
    static_assert(std::is_invocable_r_v<void*, Resolver&, const char*>,
                  "keel::acl::api::resolve: the resolver must be callable as void*(const char* name) "
                  "or void*(keel::acl::library, const char* name)");
    return resolver(name);
  }
}

}  // namespace detail

/**
 * @brief The ACL function table: a typed keel::acl::api_function per ACL
 * function keel uses, named exactly like the function.
 *
 * Ownership: holds addresses only; whoever resolved it keeps the libraries
 * loaded for as long as the table is used (the backend holds library leases).
 * Thread safety: immutable after resolve(); share it freely. Exceptions:
 * resolve() throws only what the resolver throws; calling a missing entry
 * throws keel::error(keel::errc::not_supported, "<name>", ...).
 * A default-constructed table has every entry missing.
 *
 * @code
 * void* handle = dlopen("libascendcl.so", RTLD_NOW | RTLD_LOCAL);
 * auto api = keel::acl::api::resolve([handle](const char* name) { return dlsym(handle, name); });
 * keel::acl::stream_handle stream = nullptr;
 * keel::acl::check(api.aclrtCreateStream(&stream), "aclrtCreateStream", api.aclGetRecentErrMsg);
 * @endcode
 */
struct api {
#define KEEL_DETAIL_ACL_MEMBER(lib, ret, name, params) api_function<ret params> name{#name};
  KEEL_DETAIL_ACL_FUNCTIONS(KEEL_DETAIL_ACL_MEMBER)
#undef KEEL_DETAIL_ACL_MEMBER

  /** @brief How many functions the table holds. */
  static constexpr std::size_t size() noexcept { return std::size(functions); }

  /**
   * @brief Fills a table by asking @p resolver for every function by name.
   *
   * @param resolver `void*(const char* name)` (e.g. dlsym on one handle that
   *        sees all three libraries) or `void*(keel::acl::library, const char*
   *        name)` to look each function up in its own library. A null answer
   *        marks the function missing; it is not an error here.
   */
  template <class Resolver>
  static api resolve(Resolver&& resolver) {
    api table;
#define KEEL_DETAIL_ACL_RESOLVE(lib, ret, name, params)                                                 \
  table.name = api_function<ret params>(                                                                \
      #name, detail::function_from_symbol<api_function<ret params>::pointer>(                           \
                 detail::lookup_symbol(resolver, library::lib, #name)));
    KEEL_DETAIL_ACL_FUNCTIONS(KEEL_DETAIL_ACL_RESOLVE)
#undef KEEL_DETAIL_ACL_RESOLVE
    return table;
  }

  /** @brief The names of the functions the runtime lacks, in table order. */
  std::vector<const char*> missing() const {
    std::vector<const char*> names;
#define KEEL_DETAIL_ACL_MISSING(lib, ret, name, params) \
  if (!name) names.push_back(#name);
    KEEL_DETAIL_ACL_FUNCTIONS(KEEL_DETAIL_ACL_MISSING)
#undef KEEL_DETAIL_ACL_MISSING
    return names;
  }
};

} KEEL_END_NAMESPACE  // namespace keel::acl

#undef KEEL_DETAIL_ACL_FUNCTIONS
