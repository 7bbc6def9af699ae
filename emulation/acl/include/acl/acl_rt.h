/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: the runtime subset.
 * Devices, streams, events (including external events), device and host
 * memory with synchronous and stream-ordered copies, and stream capture into
 * model run instances (aclmdlRI*) with task groups and task update.
 *
 * Written by keel from the documented CANN declarations. Sources (hicann/runtime):
 *   include/external/acl/acl_rt.h                      flags, enums, prototypes
 *   docs/zh/api_ref/04_device_management.md            aclrtSetDevice ..., aclrtResetDeviceForce
 *   docs/zh/api_ref/05_context_management.md           aclrtCreateContext ...
 *   docs/zh/api_ref/06_stream_management.md            aclrtCreateStream ...
 *   docs/zh/api_ref/07_event_management.md             aclrt*Event*
 *   docs/zh/api_ref/11-03_memory_copy_and_set.md       aclrtMemcpy* / aclrtMemset*
 *   docs/zh/api_ref/13_exception_handling.md           aclrtPeekAtLastError, aclrtGetLastError
 *   docs/zh/api_ref/25-02_Enumerations.md              aclrtLastErrLevel
 *   docs/zh/api_ref/15_model_running_instance_management.md   aclmdlRI*
 * Current CANN declares aclmdlRI* here in acl_rt.h (acl_mdl.h holds the
 * offline-model aclmdlLoad* API, which the emulation does not provide).
 */
#ifndef KEEL_EMULATION_ACL_ACL_RT_H_
#define KEEL_EMULATION_ACL_ACL_RT_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag flags
 * (07_event_management.md, "flag"). ACL_EVENT_EXTERNAL marks an event for
 * concurrent task update; it cannot be OR-ed with any other flag, its supply
 * is limited, and aclrtCreateEventExWithFlag does not accept it. */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010U
#define ACL_EVENT_EXTERNAL 0x00000020U
#define ACL_EVENT_IPC 0x00000040U

/* Operation-level flags of aclrtRecordEventWithFlag and
 * aclrtStreamWaitEventWithFlag (acl_rt.h "for event"): the *_EXTERNAL forms
 * order an update stream against a replaying model. */
#define ACL_EVENT_RECORD_DEFAULT 0x0U
#define ACL_EVENT_RECORD_EXTERNAL 0x01U
#define ACL_EVENT_WAIT_DEFAULT 0x0U
#define ACL_EVENT_WAIT_EXTERNAL 0x01U

/* aclrtCreateStreamWithConfig flags (06_stream_management.md). */
#define ACL_STREAM_FAST_LAUNCH 0x00000001U
#define ACL_STREAM_FAST_SYNC 0x00000002U
#define ACL_STREAM_PERSISTENT 0x00000004U
#define ACL_STREAM_HUGE 0x00000008U
#define ACL_STREAM_CPU_SCHEDULE 0x00000010U
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020U

typedef enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

typedef enum aclrtStreamStatus {
  ACL_STREAM_STATUS_COMPLETE = 0,
  ACL_STREAM_STATUS_NOT_READY = 1,
  ACL_STREAM_STATUS_RESERVED = 0xFFFF
} aclrtStreamStatus;

/* Host callbacks (aclrtLaunchCallback): whether the stream waits for the
 * callback before its later work. Implicitly numbered from 0 in CANN. */
typedef enum aclrtCallbackBlockType {
  ACL_CALLBACK_NO_BLOCK = 0,
  ACL_CALLBACK_BLOCK = 1
} aclrtCallbackBlockType;

/* A host callback, run on the thread subscribed to its stream. */
typedef void (*aclrtCallback)(void *userData);

/* A host function aclrtLaunchHostFunc runs in stream order. */
typedef void (*aclrtHostFunc)(void *args);

/* Implicitly numbered from 0 in CANN; spelled out here. */
typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
  ACL_MEMCPY_DEFAULT = 4,
  ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
  ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
  ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* Implicitly numbered from 0 in CANN up to HUGE1G_ONLY_P2P; the memory-type
 * bits are explicit there too. */
typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
  ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
  ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
  ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
  ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
  ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

/* A captured model run instance. */
typedef void *aclmdlRI;

/* Which threads may call capture-unsafe functions (aclrtMemcpy, aclrtMemset,
 * pageable aclrtMemcpyAsync, ...) while a stream captures
 * (aclmdlRICaptureThreadExchangeMode in 15_model_running_instance_management.md). */
typedef enum {
  ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,
  ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1,
  ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2
} aclmdlRICaptureMode;

typedef enum {
  ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,
  ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1,
  ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED = 2
} aclmdlRICaptureStatus;

/* The scope of aclrtPeekAtLastError / aclrtGetLastError (25-02_Enumerations.md). */
typedef enum aclrtLastErrLevel {
  ACL_RT_THREAD_LEVEL = 0
} aclrtLastErrLevel;

/* Initialization and errors. configPath may be NULL. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/* The calling thread's most recent error text, or NULL; owned by the runtime. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);
/* The calling thread's last runtime error code: Peek leaves it, Get clears it
 * to ACL_SUCCESS (13_exception_handling.md). */
ACL_FUNC_VISIBILITY aclError aclrtPeekAtLastError(aclrtLastErrLevel level);
ACL_FUNC_VISIBILITY aclError aclrtGetLastError(aclrtLastErrLevel level);

/* Devices. */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/* Releases the default context, its default stream and the streams made in
 * it (after their work), however many aclrtSetDevice calls came before; fails
 * once the device was reset (04_device_management.md). */
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
/* Lowest (largest number) and highest stream priorities: 7 and 0. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority, int32_t *greatestPriority);

/* Contexts (05_context_management.md). aclrtCreateContext also makes the new
 * context the calling thread's current one; the default context
 * (aclrtSetDevice's) cannot be destroyed. */
ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);
/* Timeout in milliseconds; -1 waits forever. ACL_ERROR_RT_STREAM_SYNC_TIMEOUT when it passes. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);

/* Streams. Timeouts are in milliseconds; -1 waits forever. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);
/* The stream's id, and the flags and priority it was made with (0 and 0 for aclrtCreateStream's). */
ACL_FUNC_VISIBILITY aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
/* The wait fails (the stream's later synchronize reports ACL_ERROR_RT_WAIT_TIMEOUT
 * through the stream's error) if the record has not come within timeout ms
 * of the wait's turn; -1 waits forever. */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, int32_t timeout);
/* timeout must be 0 with ACL_EVENT_WAIT_EXTERNAL. */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, uint32_t timeout,
                                                          uint32_t flag);

/* Host callbacks. A callback launched on a stream runs, when the stream
 * reaches it, on the thread subscribed to that stream (aclrtSubscribeReport),
 * inside that thread's aclrtProcessReport. Timeouts are in milliseconds; -1
 * waits forever. (CANN runtime API reference: aclrtLaunchCallback,
 * aclrtSubscribeReport, aclrtProcessReport, aclrtUnSubscribeReport,
 * https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_0126.html) */
ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                                 aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);
/* fn(args) runs in stream order on a thread the runtime keeps for the
 * stream, which waits for it; capturable. Do not mix with aclrtLaunchCallback
 * on one stream. */
ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);
/* A thread of the program's may run a stream's host functions instead of the
 * runtime's (24_other_APIs.md): subscribed per stream, one thread each. */
ACL_FUNC_VISIBILITY aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);
ACL_FUNC_VISIBILITY aclError aclrtProcessHostFunc(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);

/* Events. */
ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);

/* Memory. destMax / maxCount bound the destination, count is what moves. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream);

/* Capture into model run instances, task groups and task update. */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus *status,
                                                    aclmdlRI *modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode *mode);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpBegin(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpEnd(aclrtStream stream, aclrtTaskGrp *handle);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream stream, aclrtTaskGrp handle);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclmdlRIExecute(aclmdlRI modelRI, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclmdlRIDestroy(aclmdlRI modelRI);

/* Models built from bound streams (15_model_running_instance_management.md:
 * aclmdlRIBuildBegin ... aclmdlRIUnbindStream; 06_stream_management.md:
 * aclrtActiveStream, aclrtSwitchStream). A bound stream must be made with
 * aclrtCreateStreamWithConfig(..., ACL_STREAM_PERSISTENT); the work issued to
 * it until aclmdlRIBuildEnd is recorded into the model, not run. */
#define ACL_MODEL_STREAM_FLAG_HEAD 0x00000000U
#define ACL_MODEL_STREAM_FLAG_DEFAULT 0x7FFFFFFFU

/* How aclrtSwitchStream compares its two device values (25-02_Enumerations.md). */
typedef enum {
  ACL_RT_EQUAL = 0,
  ACL_RT_NOT_EQUAL = 1,
  ACL_RT_GREATER = 2,
  ACL_RT_GREATER_OR_EQUAL = 3,
  ACL_RT_LESS = 4,
  ACL_RT_LESS_OR_EQUAL = 5
} aclrtCondition;

typedef enum {
  ACL_RT_SWITCH_INT32 = 0,
  ACL_RT_SWITCH_INT64 = 1
} aclrtCompareDataType;

/* flag is reserved: 0. */
ACL_FUNC_VISIBILITY aclError aclmdlRIBuildBegin(aclmdlRI *modelRI, uint32_t flag);
/* flag: ACL_MODEL_STREAM_FLAG_HEAD (runs when the model starts) or
 * ACL_MODEL_STREAM_FLAG_DEFAULT (runs when a task activates it). */
ACL_FUNC_VISIBILITY aclError aclmdlRIBindStream(aclmdlRI modelRI, aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclmdlRIEndTask(aclmdlRI modelRI, aclrtStream stream);
/* reserve must be NULL. */
ACL_FUNC_VISIBILITY aclError aclmdlRIBuildEnd(aclmdlRI modelRI, void *reserve);
ACL_FUNC_VISIBILITY aclError aclmdlRIUnbindStream(aclmdlRI modelRI, aclrtStream stream);
/* A task on stream that starts activeStream (both bound to one model). */
ACL_FUNC_VISIBILITY aclError aclrtActiveStream(aclrtStream activeStream, aclrtStream stream);
/* A task on stream: when *leftValue cond *rightValue, trueStream runs and
 * stream's remaining work does not. falseStream is reserved: NULL. */
ACL_FUNC_VISIBILITY aclError aclrtSwitchStream(void *leftValue, aclrtCondition cond, void *rightValue,
                                               aclrtCompareDataType dataType, aclrtStream trueStream,
                                               aclrtStream falseStream, aclrtStream stream);

/* Conditional tasks (15_model_running_instance_management.md, 25-02, 25-04):
 * a condition of the model a stream captures, an 8-byte device value its
 * work writes; a conditional task on a capturing stream runs the body models
 * it makes (filled by aclmdlRICaptureToModelRIBegin ... aclmdlRICaptureEnd)
 * by the value when it runs: IF body 0 when it is not 0 (body 1, if any,
 * when it is), WHILE body 0 while it is not 0, SWITCH body `value` (none
 * past the last). A body goes with its parent: aclmdlRIDestroy refuses it. */
typedef void *aclmdlRICondHandle;

typedef enum {
  ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT = 1  /* the value is reset to the default at each execution */
} aclmdlRICondHandleFlag;

typedef enum {
  ACL_MODEL_RI_COND_TYPE_IF = 0,
  ACL_MODEL_RI_COND_TYPE_WHILE = 1,
  ACL_MODEL_RI_COND_TYPE_SWITCH = 2
} aclmdlRICondTaskType;

typedef struct tagAclmdlRICondTaskParams {
  aclmdlRICondHandle handle;
  aclmdlRICondTaskType type;
  uint32_t size;             /* IF 1 or 2, WHILE 1, SWITCH more than 0 */
  aclmdlRI *modelRIArray;    /* filled with the body models */
} aclmdlRICondTaskParams;

/* flag: 0 or ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT. */
ACL_FUNC_VISIBILITY aclError aclmdlRICondHandleCreate(aclmdlRI modelRI, uint32_t defaultLaunchValue,
                                                      aclmdlRICondHandleFlag flag, aclmdlRICondHandle *handle);
ACL_FUNC_VISIBILITY aclError aclmdlRICondHandleGetCondPtr(aclmdlRICondHandle handle, uint64_t **ptr);
/* flags is reserved: 0. */
ACL_FUNC_VISIBILITY aclError aclmdlRIAddCondTask(aclmdlRICondTaskParams params, aclrtStream stream, uint32_t flags);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureToModelRIBegin(aclrtStream stream, aclmdlRI modelRI,
                                                           aclmdlRICaptureMode mode);
/* A model run instance's identity, lifetime and tasks
 * (15_model_running_instance_management.md; types in 25-02_Enumerations.md
 * and 25-04_Structs.md). */
typedef void *aclmdlRITask;
typedef void *aclrtFuncHandle;

typedef enum aclmdlRITaskType {
  ACL_MODEL_RI_TASK_DEFAULT = 0,
  ACL_MODEL_RI_TASK_KERNEL = 1,
  ACL_MODEL_RI_TASK_EVENT_RECORD = 2,
  ACL_MODEL_RI_TASK_EVENT_WAIT = 3,
  ACL_MODEL_RI_TASK_EVENT_RESET = 4,
  ACL_MODEL_RI_TASK_VALUE_WRITE = 5,
  ACL_MODEL_RI_TASK_VALUE_WAIT = 6
} aclmdlRITaskType;

typedef enum aclrtLaunchKernelAttrId {
  ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE = 1,
  ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE = 2,
  ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE = 3,
  ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET = 4,
  ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH = 5,
  ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP = 6,
  ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7,
  ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US = 8,
  ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING = 9
} aclrtLaunchKernelAttrId;

typedef enum { ACL_RT_ENGINE_TYPE_AIC = 0, ACL_RT_ENGINE_TYPE_AIV = 1 } aclrtEngineType;

typedef struct {
  uint32_t timeoutLow;
  uint32_t timeoutHigh;
} aclrtTimeoutUs;

typedef union aclrtLaunchKernelAttrValue {
  uint8_t schemMode;
  uint32_t dynUBufSize;
  aclrtEngineType engineType;
  uint32_t blockDimOffset;
  uint8_t isBlockTaskPrefetch;
  uint8_t isDataDump;
  uint16_t timeout;
  aclrtTimeoutUs timeoutUs;
  uint32_t rsv[4];
} aclrtLaunchKernelAttrValue;

typedef struct aclrtLaunchKernelAttr {
  aclrtLaunchKernelAttrId id;
  aclrtLaunchKernelAttrValue value;
} aclrtLaunchKernelAttr;

typedef struct aclrtLaunchKernelCfg {
  aclrtLaunchKernelAttr *attrs;
  size_t numAttrs;
} aclrtLaunchKernelCfg;

typedef struct aclmdlRIKernelTaskParams {
  aclrtFuncHandle funcHandle;
  aclrtLaunchKernelCfg *cfg;
  void *args;
  uint32_t isHostArgs;
  size_t argsSize;
  uint32_t numBlocks;
  uint32_t rsv[10];
} aclmdlRIKernelTaskParams;

typedef struct aclmdlRIEventRecordTaskParams {
  aclrtEvent event;
  uint32_t eventFlag;
  uint32_t recordFlag;
} aclmdlRIEventRecordTaskParams;

typedef struct aclmdlRIEventWaitTaskParams {
  aclrtEvent event;
  uint32_t eventFlag;
  uint32_t waitFlag;
} aclmdlRIEventWaitTaskParams;

typedef struct aclmdlRIEventResetTaskParams {
  aclrtEvent event;
  uint32_t eventFlag;
  uint32_t resetFlag;
} aclmdlRIEventResetTaskParams;

typedef struct aclmdlRIValueWriteTaskParams {
  void *devAddr;
  uint64_t value;
} aclmdlRIValueWriteTaskParams;

typedef struct aclmdlRIValueWaitTaskParams {
  void *devAddr;
  uint64_t value;
  uint32_t flag;
} aclmdlRIValueWaitTaskParams;

/* CANN's anonymous union is C11 (and C++): a C99 build with -Wpedantic
 * takes it as the GCC / Clang extension it is there. */
#if defined(__GNUC__) && !defined(__cplusplus) && (!defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L)
#define ACL_EMULATION_ANONYMOUS_UNION __extension__ union
#else
#define ACL_EMULATION_ANONYMOUS_UNION union
#endif
typedef struct aclmdlRITaskParams {
  aclmdlRITaskType type;
  uint32_t rsv0[3];
  aclrtTaskGrp taskGrp;
  void *opInfoPtr;
  size_t opInfoSize;
  uint8_t rsv1[32];
  ACL_EMULATION_ANONYMOUS_UNION {
    uint8_t rsv2[128];
    struct aclmdlRIKernelTaskParams kernelTaskParams;
    struct aclmdlRIEventRecordTaskParams eventRecordTaskParams;
    struct aclmdlRIEventWaitTaskParams eventWaitTaskParams;
    struct aclmdlRIEventResetTaskParams eventResetTaskParams;
    struct aclmdlRIValueWriteTaskParams valueWriteTaskParams;
    struct aclmdlRIValueWaitTaskParams valueWaitTaskParams;
  };
} aclmdlRITaskParams;

#define ACL_MDLRI_DEBUG_JSON_PRINT_SUMMARY 0x0UL
#define ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE 0x1UL

ACL_FUNC_VISIBILITY aclError aclmdlRIGetId(aclmdlRI modelRI, uint32_t *modelRIId);
ACL_FUNC_VISIBILITY aclError aclmdlRISetName(aclmdlRI modelRI, const char *name);
ACL_FUNC_VISIBILITY aclError aclmdlRIGetName(aclmdlRI modelRI, uint32_t maxLen, char *name);
ACL_FUNC_VISIBILITY aclError aclmdlRIDestroyRegisterCallback(aclmdlRI modelRI, aclrtCallback func, void *userData);
ACL_FUNC_VISIBILITY aclError aclmdlRIDestroyUnregisterCallback(aclmdlRI modelRI, aclrtCallback func);
ACL_FUNC_VISIBILITY aclError aclmdlRIAbort(aclmdlRI modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRIGetStreams(aclmdlRI modelRI, aclrtStream *streams, uint32_t *numStreams);
ACL_FUNC_VISIBILITY aclError aclmdlRIGetTasksByStream(aclrtStream stream, aclmdlRITask *tasks, uint32_t *numTasks);
ACL_FUNC_VISIBILITY aclError aclmdlRITaskGetType(aclmdlRITask task, aclmdlRITaskType *type);
ACL_FUNC_VISIBILITY aclError aclmdlRITaskGetSeqId(aclmdlRITask task, uint32_t *id);
ACL_FUNC_VISIBILITY aclError aclmdlRITaskGetParams(aclmdlRITask task, aclmdlRITaskParams *params);
ACL_FUNC_VISIBILITY aclError aclmdlRIKernelTaskGetAttribute(aclmdlRITask task, aclrtLaunchKernelAttrId attrId,
                                                            aclrtLaunchKernelAttrValue *attrValue);
ACL_FUNC_VISIBILITY aclError aclmdlRITaskSetParams(aclmdlRITask task, aclmdlRITaskParams *params);
ACL_FUNC_VISIBILITY aclError aclmdlRITaskDisable(aclmdlRITask task);
ACL_FUNC_VISIBILITY aclError aclmdlRIUpdate(aclmdlRI modelRI);
ACL_FUNC_VISIBILITY aclError aclrtGetFunctionName(aclrtFuncHandle funcHandle, uint32_t maxLen, char *name);
ACL_FUNC_VISIBILITY aclError aclmdlRIDebugPrint(aclmdlRI modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRIDebugJsonPrint(aclmdlRI modelRI, const char *path, uint32_t flags);

/* ---- several devices (04_device_management.md, dev_guide/05_multi_device_programming.md) ----
 * The emulation has KEEL_ACL_EMULATION_DEVICES devices (default 1). Peer
 * access is enabled per direction, from the calling thread's current device. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);
ACL_FUNC_VISIBILITY aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId);
ACL_FUNC_VISIBILITY aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t *status);

/* aclrtGetMemInfo's memory kinds (11-01_device_memory_malloc_and_free.md). */
typedef enum aclrtMemAttr {
  ACL_DDR_MEM,
  ACL_HBM_MEM,
  ACL_DDR_MEM_HUGE,
  ACL_DDR_MEM_NORMAL,
  ACL_HBM_MEM_HUGE,
  ACL_HBM_MEM_NORMAL,
  ACL_DDR_MEM_P2P_HUGE,
  ACL_DDR_MEM_P2P_NORMAL,
  ACL_HBM_MEM_P2P_HUGE,
  ACL_HBM_MEM_P2P_NORMAL,
  ACL_HBM_MEM_HUGE1G,
  ACL_HBM_MEM_P2P_HUGE1G,
  ACL_MEM_NORMAL,
  ACL_MEM_HUGE,
  ACL_MEM_HUGE1G,
  ACL_MEM_P2P_NORMAL,
  ACL_MEM_P2P_HUGE,
  ACL_MEM_P2P_HUGE1G
} aclrtMemAttr;
/* The current device's free and total memory of that kind. */
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);

/* ---- system and device queries (03_runtime_configuration.md, 04_device_management.md, 24_other_APIs.md) ---- */
typedef enum aclrtRunMode {
  ACL_DEVICE,
  ACL_HOST
} aclrtRunMode;
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64
/* The version of a CANN package ("runtime", "cann", ...). */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionStr(char *pkgName, char *versionStr);
ACL_FUNC_VISIBILITY aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);

typedef enum {
  ACL_DEV_ATTR_AICPU_CORE_NUM = 1,
  ACL_DEV_ATTR_AICORE_CORE_NUM = 101,
  ACL_DEV_ATTR_CUBE_CORE_NUM = 102,
  ACL_DEV_ATTR_VECTOR_CORE_NUM = 201,
  ACL_DEV_ATTR_WARP_SIZE = 202,
  ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE = 203,
  ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE = 204,
  ACL_DEV_ATTR_MAX_GRID_DIM_X = 205,
  ACL_DEV_ATTR_MAX_GRID_DIM_Y = 206,
  ACL_DEV_ATTR_MAX_GRID_DIM_Z = 207,
  ACL_DEV_ATTR_MAX_BLOCK_PER_GRID = 208,
  ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK = 209,
  ACL_DEV_ATTR_MAX_BLOCK_DIM_X = 210,
  ACL_DEV_ATTR_MAX_BLOCK_DIM_Y = 211,
  ACL_DEV_ATTR_MAX_BLOCK_DIM_Z = 212,
  ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE = 301,
  ACL_DEV_ATTR_L2_CACHE_SIZE = 302,
  ACL_DEV_ATTR_SMP_ID = 401U,
  ACL_DEV_ATTR_PHY_CHIP_ID = 402U,
  ACL_DEV_ATTR_SUPER_POD_DEVICE_ID = 403U,
  ACL_DEV_ATTR_SUPER_POD_SERVER_ID = 404U,
  ACL_DEV_ATTR_SUPER_POD_ID = 405U,
  ACL_DEV_ATTR_CUST_OP_PRIVILEGE = 406U,
  ACL_DEV_ATTR_MAINBOARD_ID = 407U,
  ACL_DEV_ATTR_HD_CONNECT_TYPE = 408U,
  ACL_DEV_ATTR_DEVICE_FORM_FACTOR = 409U,
  ACL_DEV_ATTR_IS_VIRTUAL = 501U,
  ACL_DEV_ATTR_NPU_ARCH = 601U
} aclrtDevAttr;
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value);

typedef enum {
  ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV = 1,
  ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV = 21
} aclrtDevFeatureType;
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCapability(int32_t deviceId, aclrtDevFeatureType devFeatureType,
                                                      int32_t *value);
ACL_FUNC_VISIBILITY aclError aclrtCheckArchCompatibility(const char *socVersion, int32_t *canCompatible);

typedef enum {
  ACL_RT_DEV_RES_CUBE_CORE = 0,
  ACL_RT_DEV_RES_VECTOR_CORE
} aclrtDevResLimitType;
ACL_FUNC_VISIBILITY aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t *value);
/* The process's limit on a device's cores (recorded and reported; the
 * emulation's host threads are not limited by it). */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceResLimit(int32_t deviceId);

/* ---- error reporting (13_exception_handling.md) ---- */
typedef enum {
  ACL_RT_NO_ERROR = 0,
  ACL_RT_ERROR_MEMORY = 1,
  ACL_RT_ERROR_L2 = 2,
  ACL_RT_ERROR_AICORE = 3,
  ACL_RT_ERROR_LINK = 4,
  ACL_RT_ERROR_L3_PORT = 5,
  ACL_RT_ERROR_OTHERS = 0xFFFF
} aclrtErrorType;
#define UCE_INFO_RESERVED_SIZE 14
typedef struct aclrtMemUceInfo {
  void *addr;
  size_t len;
  size_t reserved[UCE_INFO_RESERVED_SIZE];
} aclrtMemUceInfo;
#define ACL_RT_MEM_UCE_INFO_MAX_NUM 20
typedef struct {
  size_t arraySize;
  aclrtMemUceInfo memUceInfoArray[ACL_RT_MEM_UCE_INFO_MAX_NUM];
} aclrtMemUceInfoArray;
typedef enum aclrtAicoreErrorType {
  ACL_RT_AICORE_ERROR_UNKNOWN,
  ACL_RT_AICORE_ERROR_SW,
  ACL_RT_AICORE_ERROR_HW_LOCAL
} aclrtAicoreErrorType;
typedef union aclrtErrorInfoDetail {
  aclrtMemUceInfoArray uceInfo;
  aclrtAicoreErrorType aicoreErrType;
} aclrtErrorInfoDetail;
typedef struct aclrtErrorInfo {
  uint8_t tryRepair;
  uint8_t hasDetail;
  uint8_t reserved[2];
  aclrtErrorType errorType;
  aclrtErrorInfoDetail detail;
} aclrtErrorInfo;
/* Whether a device is usable (04_device_management.md). */
typedef enum aclrtDeviceStatus {
  ACL_RT_DEVICE_STATUS_NORMAL = 0,
  ACL_RT_DEVICE_STATUS_ABNORMAL,
  ACL_RT_DEVICE_STATUS_END = 0xFFFF
} aclrtDeviceStatus;
ACL_FUNC_VISIBILITY aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus);

/* The device's most recent hardware error (none on the emulated device). */
ACL_FUNC_VISIBILITY aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo);

/* ---- the context's default stream (05_context_management.md) ---- */
ACL_FUNC_VISIBILITY aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream);

/* ---- stream config handles (06_stream_management.md) ---- */
typedef enum {
  ACL_RT_STREAM_WORK_ADDR_PTR = 0,
  ACL_RT_STREAM_WORK_SIZE,
  ACL_RT_STREAM_FLAG,
  ACL_RT_STREAM_PRIORITY
} aclrtStreamConfigAttr;
typedef struct aclrtStreamConfigHandle {
  void *workptr;
  size_t workSize;
  size_t flag;
  uint32_t priority;
} aclrtStreamConfigHandle;
ACL_FUNC_VISIBILITY aclrtStreamConfigHandle *aclrtCreateStreamConfigHandle(void);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle *handle, aclrtStreamConfigAttr attr,
                                                     const void *attrValue, size_t valueSize);
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamV2(aclrtStream *stream, const aclrtStreamConfigHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle *handle);

/* ---- stream memory operations (11-09_stream_memory_operation.md) ----
 * aclrtValueWait's conditions on the 64-bit value at devAddr. A null stream
 * is the current context's default stream. */
#define ACL_STREAM_WAIT_VALUE_GEQ 0x00000000U
#define ACL_STREAM_WAIT_VALUE_EQ 0x00000001U
#define ACL_STREAM_WAIT_VALUE_AND 0x00000002U
#define ACL_STREAM_WAIT_VALUE_NOR 0x00000003U
ACL_FUNC_VISIBILITY aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);

/* ---- built-in tasks (12_execution_control.md) ----
 * aclrtReduceAsync: dst[i] = dst[i] (op) src[i] over count bytes, in stream
 * order; reserve must be NULL. */
typedef enum {
  ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM = 10,
  ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX = 11,
  ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN = 12,
  ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL = 13
} aclrtReduceKind;
ACL_FUNC_VISIBILITY aclError aclrtReduceAsync(void *dst, const void *src, uint64_t count, aclrtReduceKind kind,
                                              aclDataType type, aclrtStream stream, void *reserve);

/* ---- event timestamps (07_event_management.md) ----
 * The microsecond the event's last record completed, on a monotonic clock. */
ACL_FUNC_VISIBILITY aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp);

/* ---- stream failure modes (06_stream_management.md) ----
 * After a failed task, ACL_CONTINUE_ON_FAILURE (the default) runs the
 * stream's later tasks; ACL_STOP_ON_FAILURE runs none, for every stream of
 * the stream's context. Set once per stream. */
#define ACL_CONTINUE_ON_FAILURE 0x00000000U
#define ACL_STOP_ON_FAILURE 0x00000001U
ACL_FUNC_VISIBILITY aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);

/* ---- notifies (08_notify_management.md) ----
 * A flag a stream records and another stream waits for and resets; the
 * wait's timeout is in seconds, 0 for ever. */
#define ACL_NOTIFY_DEFAULT 0x00000000U
#define ACL_NOTIFY_DEVICE_USE_ONLY 0x00000001U
ACL_FUNC_VISIBILITY aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyNotify(aclrtNotify notify);
ACL_FUNC_VISIBILITY aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtGetNotifyId(aclrtNotify notify, uint32_t *notifyId);
ACL_FUNC_VISIBILITY aclError aclrtNotifyBatchReset(aclrtNotify *notifies, size_t num);

/* ---- the random-number task (12_execution_control.md, 25-04_Structs.md) ----
 * The numbers are the emulation's own (Philox4x32-10 keyed by the seed,
 * counter from the 64-bit offset at randomCounterAddr): docs/emulation.md. */
typedef struct {
  uint8_t isAddr;
  uint8_t valueOrAddr[8];
  uint8_t size;
  uint8_t rsv[6];
} aclrtRandomParaInfo;
typedef struct {
  aclrtRandomParaInfo dropoutRation;
} aclrtDropoutBitmaskInfo;
typedef struct {
  aclrtRandomParaInfo min;
  aclrtRandomParaInfo max;
} aclrtUniformDisInfo;
typedef struct {
  aclrtRandomParaInfo mean;
  aclrtRandomParaInfo stddev;
} aclrtNormalDisInfo;
typedef enum {
  ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK = 0,
  ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS,
  ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS,
  ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS
} aclrtRandomNumFuncType;
typedef struct {
  aclrtRandomNumFuncType funcType;
  union {
    aclrtDropoutBitmaskInfo dropoutBitmaskInfo;
    aclrtUniformDisInfo uniformDisInfo;
    aclrtNormalDisInfo normalDisInfo;
  } paramInfo;
} aclrtRandomNumFuncParaInfo;
typedef struct {
  aclDataType dataType;
  aclrtRandomNumFuncParaInfo randomNumFuncParaInfo;
  void *randomParaAddr;
  void *randomResultAddr;
  void *randomCounterAddr;
  aclrtRandomParaInfo randomSeed;
  aclrtRandomParaInfo randomNum;
  uint8_t rsv[8];
} aclrtRandomNumTaskInfo;
ACL_FUNC_VISIBILITY aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo *taskInfo, const aclrtStream stream,
                                                 void *reserve);

/* ---- events shared between processes (07_event_management.md) ----
 * An ACL_EVENT_IPC event's handle: another process opens it and records and
 * waits on the event in its own streams. */
#define ACL_IPC_EVENT_HANDLE_SIZE 64U
typedef struct aclrtIpcEventHandle {
  char reserved[ACL_IPC_EVENT_HANDLE_SIZE];
} aclrtIpcEventHandle;
ACL_FUNC_VISIBILITY aclError aclrtIpcGetEventHandle(aclrtEvent event, aclrtIpcEventHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtIpcOpenEventHandle(aclrtIpcEventHandle handle, aclrtEvent *event);

/* ---- labels (10_label_management.md) ----
 * A label marks a place on a stream bound to a model being built; a switch by
 * label index goes on from the label the uint32 at ptr names (past the last
 * label: the last one) and ends the switching stream's work there. */
ACL_FUNC_VISIBILITY aclError aclrtCreateLabel(aclrtLabel *label);
ACL_FUNC_VISIBILITY aclError aclrtSetLabel(aclrtLabel label, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyLabel(aclrtLabel label);
ACL_FUNC_VISIBILITY aclError aclrtCreateLabelList(aclrtLabel *labels, size_t num, aclrtLabelList *labelList);
ACL_FUNC_VISIBILITY aclError aclrtDestroyLabelList(aclrtLabelList labelList);
ACL_FUNC_VISIBILITY aclError aclrtSwitchLabelByIndex(void *ptr, uint32_t maxValue, aclrtLabelList labelList,
                                                     aclrtStream stream);

/* ---- floating-point overflow (04_device_management.md, 06_stream_management.md) ----
 * The device's result mode for overflowing floating-point results (Inf/NaN
 * by default on the A2 series), each stream's overflow-detection switch, and
 * the device's overflow status: 64 bytes, the first uint32 of which is
 * nonzero once a task of a stream with the switch on overflowed. */
typedef enum aclrtFloatOverflowMode {
  ACL_RT_OVERFLOW_MODE_SATURATION = 0,
  ACL_RT_OVERFLOW_MODE_INFNAN,
  ACL_RT_OVERFLOW_MODE_UNDEF
} aclrtFloatOverflowMode;
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, uint32_t *flag);
ACL_FUNC_VISIBILITY aclError aclrtGetOverflowStatus(void *outputAddr, size_t outputSize, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtResetOverflowStatus(aclrtStream stream);

/* ---- exception information (13_exception_handling.md) ----
 * Process-wide callbacks told of each task that fails on a device, with
 * the task, stream, thread and device ids and the error code. The
 * information lives only during the call. */
typedef struct rtExceptionInfo aclrtExceptionInfo;
typedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo);
ACL_FUNC_VISIBILITY aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info);
/* The failed task's kernel arguments and function (14_Kernel_loading_and_execution.md):
 * null and 0 for a task that launched no kernel. */
ACL_FUNC_VISIBILITY aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info, void **devArgsPtr,
                                                           uint32_t *devArgsLen);
ACL_FUNC_VISIBILITY aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info,
                                                                 aclrtFuncHandle *func);

/* ---- a device's utilisation (04_device_management.md) ----
 * Percentages; -1 for a unit the device lacks, and for memory (not
 * reported). utilizationExtend is reserved: null. */
typedef struct aclrtUtilizationExtendInfo aclrtUtilizationExtendInfo;
typedef struct aclrtUtilizationInfo {
  int32_t cubeUtilization;
  int32_t vectorUtilization;
  int32_t aicpuUtilization;
  int32_t memoryUtilization;
  aclrtUtilizationExtendInfo *utilizationExtend;
} aclrtUtilizationInfo;
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo *utilizationInfo);

/* ---- stream abort and state callbacks (06_stream_management.md) ----
 * aclrtStreamAbort discards the stream's tasks not yet run and ends when the
 * running one has; a synchronize of the stream meanwhile returns
 * ACL_ERROR_RT_STREAM_ABORT. A stream state callback, registered once under
 * its name (a null callback unregisters it), is told after each stream is
 * made and before each is destroyed, the default streams included. */
typedef enum {
  ACL_RT_STREAM_STATE_CREATE_POST = 1,
  ACL_RT_STREAM_STATE_DESTROY_PRE,
} aclrtStreamState;
typedef void (*aclrtStreamStateCallback)(aclrtStream stm, aclrtStreamState state, void *args);
ACL_FUNC_VISIBILITY aclError aclrtStreamAbort(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtRegStreamStateCallback(const char *regName, aclrtStreamStateCallback callback,
                                                         void *args);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACL_ACL_RT_H_ */
