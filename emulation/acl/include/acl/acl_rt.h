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

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACL_ACL_RT_H_ */
