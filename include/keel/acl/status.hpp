// SPDX-License-Identifier: Apache-2.0
// ACL status codes as std::error_code: acl_category() with a message and the
// CANN symbol for every documented aclError / aclnnStatus value, equivalences
// to keel's own conditions, and check(), which turns a failed status into a
// keel::error carrying the code, the function and the runtime's own message.
#pragma once

#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"

// X(enumerator, value, CANN symbol, message). Values, symbols and meanings
// from CANN: hicann/runtime include/external/acl/acl_base_rt.h and
// error_codes/rt_error_codes.h, docs/zh/api_ref/25-01_aclError.md, and the
// aclnn return codes page of the CANN operator API reference
// (aolapi atlasascendc_api_07_1205). The messages are keel's wording.
// ACLNN_ERR_INNER_KEY_CONFILICT (the deprecated misspelling) shares 561105
// with ACLNN_ERR_INNER_KEY_CONFLICT and is reported under the latter.
#define KEEL_DETAIL_ACL_STATUS_CODES(X)                                                                         \
  X(success, 0, "ACL_SUCCESS", "success")                                                                       \
  X(invalid_param, 100000, "ACL_ERROR_INVALID_PARAM", "invalid parameter")                                      \
  X(uninitialize, 100001, "ACL_ERROR_UNINITIALIZE", "ACL is not initialized (call aclInit first)")              \
  X(repeat_initialize, 100002, "ACL_ERROR_REPEAT_INITIALIZE", "ACL is already initialized")                     \
  X(invalid_file, 100003, "ACL_ERROR_INVALID_FILE", "invalid file")                                             \
  X(write_file, 100004, "ACL_ERROR_WRITE_FILE", "writing the file failed")                                      \
  X(invalid_file_size, 100005, "ACL_ERROR_INVALID_FILE_SIZE", "invalid file size")                              \
  X(parse_file, 100006, "ACL_ERROR_PARSE_FILE", "parsing the file failed")                                      \
  X(file_missing_attr, 100007, "ACL_ERROR_FILE_MISSING_ATTR", "the file lacks a required attribute")            \
  X(file_attr_invalid, 100008, "ACL_ERROR_FILE_ATTR_INVALID", "a file attribute is invalid")                    \
  X(invalid_dump_config, 100009, "ACL_ERROR_INVALID_DUMP_CONFIG", "invalid dump configuration")                 \
  X(invalid_profiling_config, 100010, "ACL_ERROR_INVALID_PROFILING_CONFIG", "invalid profiling configuration")  \
  X(invalid_model_id, 100011, "ACL_ERROR_INVALID_MODEL_ID", "invalid model id")                                 \
  X(deserialize_model, 100012, "ACL_ERROR_DESERIALIZE_MODEL", "deserializing the model failed")                 \
  X(parse_model, 100013, "ACL_ERROR_PARSE_MODEL", "parsing the model failed")                                   \
  X(read_model_failure, 100014, "ACL_ERROR_READ_MODEL_FAILURE", "reading the model failed")                     \
  X(model_size_invalid, 100015, "ACL_ERROR_MODEL_SIZE_INVALID", "invalid model size")                           \
  X(model_missing_attr, 100016, "ACL_ERROR_MODEL_MISSING_ATTR", "the model lacks a required attribute")         \
  X(model_input_not_match, 100017, "ACL_ERROR_MODEL_INPUT_NOT_MATCH", "the model inputs do not match")          \
  X(model_output_not_match, 100018, "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH", "the model outputs do not match")       \
  X(model_not_dynamic, 100019, "ACL_ERROR_MODEL_NOT_DYNAMIC", "the model is not dynamic")                       \
  X(op_type_not_match, 100020, "ACL_ERROR_OP_TYPE_NOT_MATCH", "the operator type does not match")               \
  X(op_input_not_match, 100021, "ACL_ERROR_OP_INPUT_NOT_MATCH", "the operator inputs do not match")             \
  X(op_output_not_match, 100022, "ACL_ERROR_OP_OUTPUT_NOT_MATCH", "the operator outputs do not match")          \
  X(op_attr_not_match, 100023, "ACL_ERROR_OP_ATTR_NOT_MATCH", "the operator attributes do not match")           \
  X(op_not_found, 100024, "ACL_ERROR_OP_NOT_FOUND", "operator not found")                                       \
  X(op_load_failed, 100025, "ACL_ERROR_OP_LOAD_FAILED", "loading the operator failed")                          \
  X(unsupported_data_type, 100026, "ACL_ERROR_UNSUPPORTED_DATA_TYPE", "unsupported data type")                  \
  X(format_not_match, 100027, "ACL_ERROR_FORMAT_NOT_MATCH", "the format does not match")                        \
  X(bin_selector_not_registered, 100028, "ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED",                               \
    "no binary selector is registered for the operator")                                                        \
  X(kernel_not_found, 100029, "ACL_ERROR_KERNEL_NOT_FOUND", "kernel not found")                                 \
  X(bin_selector_already_registered, 100030, "ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED",                       \
    "a binary selector is already registered for the operator")                                                 \
  X(kernel_already_registered, 100031, "ACL_ERROR_KERNEL_ALREADY_REGISTERED", "the kernel is already registered") \
  X(invalid_queue_id, 100032, "ACL_ERROR_INVALID_QUEUE_ID", "invalid queue id")                                 \
  X(repeat_subscribe, 100033, "ACL_ERROR_REPEAT_SUBSCRIBE", "already subscribed")                               \
  X(stream_not_subscribe, 100034, "ACL_ERROR_STREAM_NOT_SUBSCRIBE", "the stream is not subscribed")             \
  X(thread_not_subscribe, 100035, "ACL_ERROR_THREAD_NOT_SUBSCRIBE", "the thread is not subscribed")             \
  X(wait_callback_timeout, 100036, "ACL_ERROR_WAIT_CALLBACK_TIMEOUT", "waiting for the callback timed out")     \
  X(repeat_finalize, 100037, "ACL_ERROR_REPEAT_FINALIZE", "ACL is already finalized")                           \
  X(not_static_aipp, 100038, "ACL_ERROR_NOT_STATIC_AIPP", "the AIPP configuration is not static")               \
  X(compiling_stub_mode, 100039, "ACL_ERROR_COMPILING_STUB_MODE",                                               \
    "the program was linked against the stub library, which does not run")                                      \
  X(group_not_set, 100040, "ACL_ERROR_GROUP_NOT_SET", "group not set")                                          \
  X(group_not_create, 100041, "ACL_ERROR_GROUP_NOT_CREATE", "group not created")                                \
  X(prof_already_run, 100042, "ACL_ERROR_PROF_ALREADY_RUN", "profiling is already running")                     \
  X(prof_not_run, 100043, "ACL_ERROR_PROF_NOT_RUN", "profiling is not running")                                 \
  X(dump_already_run, 100044, "ACL_ERROR_DUMP_ALREADY_RUN", "dump is already running")                          \
  X(dump_not_run, 100045, "ACL_ERROR_DUMP_NOT_RUN", "dump is not running")                                      \
  X(prof_repeat_subscribe, 148046, "ACL_ERROR_PROF_REPEAT_SUBSCRIBE", "profiling is already subscribed")        \
  X(prof_api_conflict, 148047, "ACL_ERROR_PROF_API_CONFLICT", "conflicting profiling APIs were used")           \
  X(invalid_max_opqueue_num_config, 148048, "ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG",                         \
    "invalid operator cache size configuration")                                                                \
  X(invalid_opp_path, 148049, "ACL_ERROR_INVALID_OPP_PATH", "invalid operator package path (ASCEND_OPP_PATH)")  \
  X(op_unsupported_dynamic, 148050, "ACL_ERROR_OP_UNSUPPORTED_DYNAMIC", "the operator does not support dynamic shapes") \
  X(relative_resource_not_cleared, 148051, "ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED",                          \
    "related resources have not been released")                                                                 \
  X(unsupported_jpeg, 148052, "ACL_ERROR_UNSUPPORTED_JPEG", "unsupported JPEG")                                 \
  X(invalid_bundle_model_id, 148053, "ACL_ERROR_INVALID_BUNDLE_MODEL_ID", "invalid bundle model id")            \
  X(bad_alloc, 200000, "ACL_ERROR_BAD_ALLOC", "memory allocation failed")                                       \
  X(api_not_support, 200001, "ACL_ERROR_API_NOT_SUPPORT", "API not supported")                                  \
  X(invalid_device, 200002, "ACL_ERROR_INVALID_DEVICE", "invalid device")                                       \
  X(memory_address_unaligned, 200003, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED", "memory address not aligned")       \
  X(resource_not_match, 200004, "ACL_ERROR_RESOURCE_NOT_MATCH", "the resources do not match")                   \
  X(invalid_resource_handle, 200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE", "invalid resource handle")            \
  X(feature_unsupported, 200006, "ACL_ERROR_FEATURE_UNSUPPORTED", "feature not supported")                      \
  X(prof_modules_unsupported, 200007, "ACL_ERROR_PROF_MODULES_UNSUPPORTED", "profiling modules not supported")  \
  X(storage_over_limit, 300000, "ACL_ERROR_STORAGE_OVER_LIMIT", "storage over limit")                           \
  X(internal_error, 500000, "ACL_ERROR_INTERNAL_ERROR", "internal error")                                       \
  X(failure, 500001, "ACL_ERROR_FAILURE", "failure")                                                            \
  X(ge_failure, 500002, "ACL_ERROR_GE_FAILURE", "graph engine failure")                                         \
  X(rt_failure, 500003, "ACL_ERROR_RT_FAILURE", "runtime failure")                                              \
  X(drv_failure, 500004, "ACL_ERROR_DRV_FAILURE", "driver failure")                                             \
  X(profiling_failure, 500005, "ACL_ERROR_PROFILING_FAILURE", "profiling failure")                              \
  X(rt_param_invalid, 107000, "ACL_ERROR_RT_PARAM_INVALID", "invalid parameter")                                \
  X(rt_invalid_deviceid, 107001, "ACL_ERROR_RT_INVALID_DEVICEID", "invalid device id")                          \
  X(rt_context_null, 107002, "ACL_ERROR_RT_CONTEXT_NULL", "no current context (call aclrtSetDevice first)")     \
  X(rt_stream_context, 107003, "ACL_ERROR_RT_STREAM_CONTEXT", "the stream is not in the current context")       \
  X(rt_model_context, 107004, "ACL_ERROR_RT_MODEL_CONTEXT", "the model is not in the current context")          \
  X(rt_stream_model, 107005, "ACL_ERROR_RT_STREAM_MODEL", "the stream is not in the model")                     \
  X(rt_event_timestamp_invalid, 107006, "ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID", "invalid event timestamp")      \
  X(rt_event_timestamp_reversal, 107007, "ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL",                               \
    "the end event was recorded before the start event")                                                        \
  X(rt_addr_unaligned, 107008, "ACL_ERROR_RT_ADDR_UNALIGNED", "memory address not aligned")                     \
  X(rt_file_open, 107009, "ACL_ERROR_RT_FILE_OPEN", "opening the file failed")                                  \
  X(rt_file_write, 107010, "ACL_ERROR_RT_FILE_WRITE", "writing the file failed")                                \
  X(rt_stream_subscribe, 107011, "ACL_ERROR_RT_STREAM_SUBSCRIBE", "stream subscription error")                  \
  X(rt_thread_subscribe, 107012, "ACL_ERROR_RT_THREAD_SUBSCRIBE", "thread subscription error")                  \
  X(rt_group_not_set, 107013, "ACL_ERROR_RT_GROUP_NOT_SET", "group not set")                                    \
  X(rt_group_not_create, 107014, "ACL_ERROR_RT_GROUP_NOT_CREATE", "group not created")                          \
  X(rt_stream_no_cb_reg, 107015, "ACL_ERROR_RT_STREAM_NO_CB_REG", "no callback is registered on the stream")    \
  X(rt_invalid_memory_type, 107016, "ACL_ERROR_RT_INVALID_MEMORY_TYPE", "invalid memory type")                  \
  X(rt_invalid_handle, 107017, "ACL_ERROR_RT_INVALID_HANDLE", "invalid handle")                                 \
  X(rt_invalid_malloc_type, 107018, "ACL_ERROR_RT_INVALID_MALLOC_TYPE", "invalid allocation type")              \
  X(rt_wait_timeout, 107019, "ACL_ERROR_RT_WAIT_TIMEOUT", "wait timed out")                                     \
  X(rt_task_timeout, 107020, "ACL_ERROR_RT_TASK_TIMEOUT", "task timed out")                                     \
  X(rt_sysparamopt_not_set, 107021, "ACL_ERROR_RT_SYSPARAMOPT_NOT_SET", "system parameter option not set")      \
  X(rt_device_task_abort, 107022, "ACL_ERROR_RT_DEVICE_TASK_ABORT", "device tasks are being aborted")           \
  X(rt_stream_abort, 107023, "ACL_ERROR_RT_STREAM_ABORT", "the stream is being aborted")                        \
  X(rt_capture_dependency, 107024, "ACL_ERROR_RT_CAPTURE_DEPENDENCY", "capture dependency failure")             \
  X(rt_stream_unjoined, 107025, "ACL_ERROR_RT_STREAM_UNJOINED",                                                 \
    "a stream forked into the capture was not joined back before capture end")                                  \
  X(rt_model_captured, 107026, "ACL_ERROR_RT_MODEL_CAPTURED", "the model is being captured")                    \
  X(rt_stream_captured, 107027, "ACL_ERROR_RT_STREAM_CAPTURED", "the stream is capturing")                      \
  X(rt_event_captured, 107028, "ACL_ERROR_RT_EVENT_CAPTURED", "the event was recorded in a capture")            \
  X(rt_stream_not_captured, 107029, "ACL_ERROR_RT_STREAM_NOT_CAPTURED", "the stream is not capturing")          \
  X(rt_capture_mode_not_support, 107030, "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT",                               \
    "the current capture mode does not allow this operation")                                                   \
  X(rt_stream_capture_implicit, 107031, "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT",                                 \
    "disallowed implicit dependency on the default stream during capture")                                      \
  X(stream_capture_conflict, 107032, "ACL_ERROR_STREAM_CAPTURE_CONFLICT",                                       \
    "interdependent streams cannot begin capture together")                                                     \
  X(stream_task_group_status, 107033, "ACL_ERROR_STREAM_TASK_GROUP_STATUS",                                     \
    "the task group is not in a state that allows this call")                                                   \
  X(stream_task_group_intr, 107034, "ACL_ERROR_STREAM_TASK_GROUP_INTR", "the task group was interrupted")       \
  X(rt_task_abort_stop, 107035, "ACL_ERROR_RT_TASK_ABORT_STOP", "task abort stopped before post-processing")    \
  X(rt_stream_capture_unmatched, 107036, "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED",                               \
    "the capture was not begun on this stream")                                                                 \
  X(rt_model_running, 107037, "ACL_ERROR_RT_MODEL_RUNNING", "the model is still running")                       \
  X(rt_stream_capture_wrong_thread, 107038, "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD",                         \
    "capture must end on the thread that began it")                                                             \
  X(rt_insufficient_input_array, 107039, "ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY", "the input array is too small") \
  X(rt_model_update_failed, 107040, "ACL_ERROR_RT_MODEL_UPDATE_FAILED", "updating the model failed")            \
  X(rt_capture_mode_block_async, 107041, "ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC",                               \
    "the call would turn synchronous, which the capturing stream does not allow")                               \
  X(rt_feature_not_support, 207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",                                         \
    "feature not supported by this device or driver")                                                           \
  X(rt_memory_allocation, 207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "out of memory")                            \
  X(rt_memory_free, 207002, "ACL_ERROR_RT_MEMORY_FREE", "freeing memory failed")                                \
  X(rt_aicore_over_flow, 207003, "ACL_ERROR_RT_AICORE_OVER_FLOW", "AI Core overflow")                           \
  X(rt_no_device, 207004, "ACL_ERROR_RT_NO_DEVICE", "no device")                                                \
  X(rt_resource_alloc_fail, 207005, "ACL_ERROR_RT_RESOURCE_ALLOC_FAIL", "resource allocation failed")           \
  X(rt_no_permission, 207006, "ACL_ERROR_RT_NO_PERMISSION", "no permission")                                    \
  X(rt_no_event_resource, 207007, "ACL_ERROR_RT_NO_EVENT_RESOURCE", "no event resources left")                  \
  X(rt_no_stream_resource, 207008, "ACL_ERROR_RT_NO_STREAM_RESOURCE", "no stream resources left")               \
  X(rt_no_notify_resource, 207009, "ACL_ERROR_RT_NO_NOTIFY_RESOURCE", "no notify resources left")               \
  X(rt_no_model_resource, 207010, "ACL_ERROR_RT_NO_MODEL_RESOURCE", "no model resources left")                  \
  X(rt_no_cdq_resource, 207011, "ACL_ERROR_RT_NO_CDQ_RESOURCE", "no CDQ resources left")                        \
  X(rt_over_limit, 207012, "ACL_ERROR_RT_OVER_LIMIT", "over limit")                                             \
  X(rt_queue_empty, 207013, "ACL_ERROR_RT_QUEUE_EMPTY", "the queue is empty")                                   \
  X(rt_queue_full, 207014, "ACL_ERROR_RT_QUEUE_FULL", "the queue is full")                                      \
  X(rt_repeated_init, 207015, "ACL_ERROR_RT_REPEATED_INIT", "already initialized")                              \
  X(rt_aivec_over_flow, 207016, "ACL_ERROR_RT_AIVEC_OVER_FLOW", "AI Vector overflow")                           \
  X(rt_over_flow, 207017, "ACL_ERROR_RT_OVER_FLOW", "overflow")                                                 \
  X(rt_device_oom, 207018, "ACL_ERROR_RT_DEVICE_OOM", "device out of memory")                                   \
  X(rt_feature_not_support_update_op, 207019, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP",                     \
    "this operator's tasks cannot be updated")                                                                  \
  X(rt_timeout, 207020, "ACL_ERROR_RT_TIMEOUT", "driver timeout")                                               \
  X(rt_internal_error, 507000, "ACL_ERROR_RT_INTERNAL_ERROR", "runtime internal error")                         \
  X(rt_ts_error, 507001, "ACL_ERROR_RT_TS_ERROR", "task scheduler internal error")                              \
  X(rt_stream_task_full, 507002, "ACL_ERROR_RT_STREAM_TASK_FULL", "the stream's task queue is full")            \
  X(rt_stream_task_empty, 507003, "ACL_ERROR_RT_STREAM_TASK_EMPTY", "the stream's task queue is empty")         \
  X(rt_stream_not_complete, 507004, "ACL_ERROR_RT_STREAM_NOT_COMPLETE", "the stream has not completed")         \
  X(rt_end_of_sequence, 507005, "ACL_ERROR_RT_END_OF_SEQUENCE", "end of sequence")                              \
  X(rt_event_not_complete, 507006, "ACL_ERROR_RT_EVENT_NOT_COMPLETE", "the event has not completed")            \
  X(rt_context_release_error, 507007, "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR", "releasing the context failed")     \
  X(rt_soc_version, 507008, "ACL_ERROR_RT_SOC_VERSION", "SoC version error")                                    \
  X(rt_task_type_not_support, 507009, "ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT",                                     \
    "task type not supported here (a task group accepts single-operator tasks only)")                          \
  X(rt_lost_heartbeat, 507010, "ACL_ERROR_RT_LOST_HEARTBEAT", "the task scheduler lost its heartbeat")          \
  X(rt_model_execute, 507011, "ACL_ERROR_RT_MODEL_EXECUTE", "model execution failed")                           \
  X(rt_report_timeout, 507012, "ACL_ERROR_RT_REPORT_TIMEOUT", "report timed out")                               \
  X(rt_sys_dma, 507013, "ACL_ERROR_RT_SYS_DMA", "system DMA error")                                             \
  X(rt_aicore_timeout, 507014, "ACL_ERROR_RT_AICORE_TIMEOUT", "AI Core timeout")                                \
  X(rt_aicore_exception, 507015, "ACL_ERROR_RT_AICORE_EXCEPTION", "AI Core exception")                          \
  X(rt_aicore_trap_exception, 507016, "ACL_ERROR_RT_AICORE_TRAP_EXCEPTION", "AI Core trap exception")           \
  X(rt_aicpu_timeout, 507017, "ACL_ERROR_RT_AICPU_TIMEOUT", "AI CPU timeout")                                   \
  X(rt_aicpu_exception, 507018, "ACL_ERROR_RT_AICPU_EXCEPTION", "AI CPU exception")                             \
  X(rt_aicpu_datadump_rsp_err, 507019, "ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR", "AI CPU data dump response error") \
  X(rt_aicpu_model_rsp_err, 507020, "ACL_ERROR_RT_AICPU_MODEL_RSP_ERR", "AI CPU model operation response error") \
  X(rt_profiling_error, 507021, "ACL_ERROR_RT_PROFILING_ERROR", "profiling error")                              \
  X(rt_ipc_error, 507022, "ACL_ERROR_RT_IPC_ERROR", "IPC error")                                                \
  X(rt_model_abort_normal, 507023, "ACL_ERROR_RT_MODEL_ABORT_NORMAL", "the model was aborted")                  \
  X(rt_kernel_unregistering, 507024, "ACL_ERROR_RT_KERNEL_UNREGISTERING", "the kernel is being unregistered")   \
  X(rt_ringbuffer_not_init, 507025, "ACL_ERROR_RT_RINGBUFFER_NOT_INIT", "ring buffer not initialized")          \
  X(rt_ringbuffer_no_data, 507026, "ACL_ERROR_RT_RINGBUFFER_NO_DATA", "ring buffer has no data")                \
  X(rt_kernel_lookup, 507027, "ACL_ERROR_RT_KERNEL_LOOKUP", "kernel lookup failed")                             \
  X(rt_kernel_duplicate, 507028, "ACL_ERROR_RT_KERNEL_DUPLICATE", "the kernel is registered twice")             \
  X(rt_debug_register_fail, 507029, "ACL_ERROR_RT_DEBUG_REGISTER_FAIL", "debug registration failed")            \
  X(rt_debug_unregister_fail, 507030, "ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL", "debug unregistration failed")      \
  X(rt_label_context, 507031, "ACL_ERROR_RT_LABEL_CONTEXT", "the label is not in the current context")          \
  X(rt_program_use_out, 507032, "ACL_ERROR_RT_PROGRAM_USE_OUT", "no program registrations left")                \
  X(rt_dev_setup_error, 507033, "ACL_ERROR_RT_DEV_SETUP_ERROR", "device setup failed")                          \
  X(rt_vector_core_timeout, 507034, "ACL_ERROR_RT_VECTOR_CORE_TIMEOUT", "Vector Core timeout")                  \
  X(rt_vector_core_exception, 507035, "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION", "Vector Core exception")            \
  X(rt_vector_core_trap_exception, 507036, "ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION", "Vector Core trap exception") \
  X(rt_cdq_batch_abnormal, 507037, "ACL_ERROR_RT_CDQ_BATCH_ABNORMAL", "CDQ batch allocation failed")            \
  X(rt_die_mode_change_error, 507038, "ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR", "the die mode cannot be changed")   \
  X(rt_die_set_error, 507039, "ACL_ERROR_RT_DIE_SET_ERROR", "single-die mode cannot select a die")              \
  X(rt_invalid_dieid, 507040, "ACL_ERROR_RT_INVALID_DIEID", "invalid die id")                                   \
  X(rt_die_mode_not_set, 507041, "ACL_ERROR_RT_DIE_MODE_NOT_SET", "die mode not set")                           \
  X(rt_aicore_trap_read_overflow, 507042, "ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW", "AI Core trap: read out of bounds") \
  X(rt_aicore_trap_write_overflow, 507043, "ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW",                           \
    "AI Core trap: write out of bounds")                                                                        \
  X(rt_vector_core_trap_read_overflow, 507044, "ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW",                   \
    "Vector Core trap: read out of bounds")                                                                     \
  X(rt_vector_core_trap_write_overflow, 507045, "ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW",                 \
    "Vector Core trap: write out of bounds")                                                                    \
  X(rt_stream_sync_timeout, 507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "stream synchronization timed out")      \
  X(rt_event_sync_timeout, 507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", "event synchronization timed out")        \
  X(rt_ffts_plus_timeout, 507048, "ACL_ERROR_RT_FFTS_PLUS_TIMEOUT", "FFTS+ timeout")                            \
  X(rt_ffts_plus_exception, 507049, "ACL_ERROR_RT_FFTS_PLUS_EXCEPTION", "FFTS+ exception")                      \
  X(rt_ffts_plus_trap_exception, 507050, "ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION", "FFTS+ trap exception")       \
  X(rt_send_msg, 507051, "ACL_ERROR_RT_SEND_MSG", "sending a host-device message failed")                       \
  X(rt_copy_data, 507052, "ACL_ERROR_RT_COPY_DATA", "copying data failed")                                      \
  X(rt_device_mem_error, 507053, "ACL_ERROR_RT_DEVICE_MEM_ERROR", "device memory error")                        \
  X(rt_hbm_multi_bit_ecc_error, 507054, "ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR", "HBM multi-bit ECC error")      \
  X(rt_suspect_device_mem_error, 507055, "ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR", "suspected device memory error") \
  X(rt_link_error, 507056, "ACL_ERROR_RT_LINK_ERROR", "link error")                                             \
  X(rt_suspect_remote_error, 507057, "ACL_ERROR_RT_SUSPECT_REMOTE_ERROR", "suspected remote error")             \
  X(rt_drv_internal_error, 507899, "ACL_ERROR_RT_DRV_INTERNAL_ERROR", "driver internal error")                  \
  X(rt_aicpu_internal_error, 507900, "ACL_ERROR_RT_AICPU_INTERNAL_ERROR", "AI CPU internal error")              \
  X(rt_socket_close, 507901, "ACL_ERROR_RT_SOCKET_CLOSE", "the host-device connection closed")                  \
  X(rt_aicpu_info_load_rsp_err, 507902, "ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR", "AI CPU info load response error") \
  X(rt_stream_capture_invalidated, 507903, "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED",                           \
    "the capture was invalidated by an earlier error")                                                          \
  X(rt_comm_op_retry_fail, 507904, "ACL_ERROR_RT_COMM_OP_RETRY_FAIL", "retrying the HCCL operation failed")     \
  X(snapshot_lock_timeout, 507905, "ACL_ERROR_SNAPSHOT_LOCK_TIMEOUT", "snapshot lock timed out")                \
  X(snapshot_lock_failed, 507906, "ACL_ERROR_SNAPSHOT_LOCK_FAILED", "snapshot lock failed")                     \
  X(snapshot_unlock_failed, 507907, "ACL_ERROR_SNAPSHOT_UNLOCK_FAILED", "snapshot unlock failed")               \
  X(snapshot_backup_failed, 507908, "ACL_ERROR_SNAPSHOT_BACKUP_FAILED", "snapshot backup failed")               \
  X(snapshot_restore_failed, 507909, "ACL_ERROR_SNAPSHOT_RESTORE_FAILED", "snapshot restore failed")            \
  X(host_memory_already_registered, 507910, "ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED",                         \
    "the host memory range is already registered")                                                              \
  X(host_memory_not_registered, 507911, "ACL_ERROR_HOST_MEMORY_NOT_REGISTERED", "the host memory is not registered") \
  X(snapshot_callback_failed, 507912, "ACL_ERROR_SNAPSHOT_CALLBACK_FAILED", "a snapshot callback failed")       \
  X(snapshot_register_callback_failed, 507913, "ACL_ERROR_SNAPSHOT_REGISTER_CALLBACK_FAILED",                   \
    "registering a snapshot callback failed")                                                                   \
  X(rt_l3_port_error, 507914, "ACL_ERROR_RT_L3_PORT_ERROR", "UB memory error")                                  \
  X(rt_symbol_not_found, 507915, "ACL_ERROR_RT_SYMBOL_NOT_FOUND", "symbol not found")                           \
  X(nn_param_nullptr, 161001, "ACLNN_ERR_PARAM_NULLPTR", "a required pointer argument is null")                 \
  X(nn_param_invalid, 161002, "ACLNN_ERR_PARAM_INVALID",                                                        \
    "invalid argument (dtype, shape, format or value outside what the operator accepts)")                       \
  X(nn_runtime_error, 361001, "ACLNN_ERR_RUNTIME_ERROR", "a runtime call made by the operator failed")          \
  X(nn_inner, 561000, "ACLNN_ERR_INNER", "operator internal error")                                             \
  X(nn_inner_infershape_error, 561001, "ACLNN_ERR_INNER_INFERSHAPE_ERROR", "operator internal error: output shape inference failed") \
  X(nn_inner_tiling_error, 561002, "ACLNN_ERR_INNER_TILING_ERROR", "operator internal error: kernel tiling failed") \
  X(nn_inner_find_kernel_error, 561003, "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",                                    \
    "operator internal error: no kernel found (is the operator binary package installed?)")                     \
  X(nn_inner_create_executor, 561101, "ACLNN_ERR_INNER_CREATE_EXECUTOR", "operator internal error: creating the executor failed") \
  X(nn_inner_not_trans_executor, 561102, "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR",                                  \
    "operator internal error: the executor was not handed over")                                                \
  X(nn_inner_nullptr, 561103, "ACLNN_ERR_INNER_NULLPTR", "operator internal error: null pointer")               \
  X(nn_inner_wrong_attr_info_size, 561104, "ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE",                              \
    "operator internal error: wrong number of attributes")                                                      \
  X(nn_inner_key_conflict, 561105, "ACLNN_ERR_INNER_KEY_CONFLICT", "operator internal error: kernel key conflict") \
  X(nn_inner_invalid_impl_mode, 561106, "ACLNN_ERR_INNER_INVALID_IMPL_MODE",                                    \
    "operator internal error: invalid implementation mode")

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/**
 * @brief Every documented ACL status (aclError and aclnnStatus share one
 * numbering), named after CANN's symbol without its prefix:
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT is errc::rt_feature_not_support,
 * ACLNN_ERR_PARAM_NULLPTR is errc::nn_param_nullptr.
 *
 * A std::error_code enum of acl_category(): `ec == keel::acl::errc::rt_model_running`.
 */
enum class errc : int {
#define KEEL_DETAIL_ACL_ENUMERATOR(name, value, symbol, text) name = value,
  KEEL_DETAIL_ACL_STATUS_CODES(KEEL_DETAIL_ACL_ENUMERATOR)
#undef KEEL_DETAIL_ACL_ENUMERATOR
};

/**
 * @brief CANN's symbol for @p code ("ACL_ERROR_RT_MODEL_RUNNING"), or null
 * when the code is not documented. Throws: nothing.
 */
constexpr const char* status_name(status code) noexcept {
  switch (code) {
#define KEEL_DETAIL_ACL_NAME_CASE(name, value, symbol, text) \
  case value: return symbol;
    KEEL_DETAIL_ACL_STATUS_CODES(KEEL_DETAIL_ACL_NAME_CASE)
#undef KEEL_DETAIL_ACL_NAME_CASE
    default: return nullptr;
  }
}

namespace detail {

/// keel's description of a documented code, or null.
constexpr const char* status_text(status code) noexcept {
  switch (code) {
#define KEEL_DETAIL_ACL_TEXT_CASE(name, value, symbol, text) \
  case value: return text;
    KEEL_DETAIL_ACL_STATUS_CODES(KEEL_DETAIL_ACL_TEXT_CASE)
#undef KEEL_DETAIL_ACL_TEXT_CASE
    default: return nullptr;
  }
}

/// The keel::errc condition an ACL status is an instance of, or -1 for none.
/// Only the codes whose documented meaning is exactly that condition map.
constexpr int keel_condition(status code) noexcept {
  switch (code) {
    case 0: return static_cast<int>(keel::errc::success);
    case 161001:  // ACLNN_ERR_PARAM_NULLPTR
      return static_cast<int>(keel::errc::null_parameter);
    case 100000:  // ACL_ERROR_INVALID_PARAM
    case 107000:  // ACL_ERROR_RT_PARAM_INVALID
    case 107001:  // ACL_ERROR_RT_INVALID_DEVICEID
    case 161002:  // ACLNN_ERR_PARAM_INVALID
      return static_cast<int>(keel::errc::invalid_parameter);
    case 200001:  // ACL_ERROR_API_NOT_SUPPORT
    case 200006:  // ACL_ERROR_FEATURE_UNSUPPORTED
    case 207000:  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
      return static_cast<int>(keel::errc::not_supported);
    case 107024:  // ACL_ERROR_RT_CAPTURE_DEPENDENCY
    case 107025:  // ACL_ERROR_RT_STREAM_UNJOINED
    case 107026:  // ACL_ERROR_RT_MODEL_CAPTURED
    case 107027:  // ACL_ERROR_RT_STREAM_CAPTURED
    case 107028:  // ACL_ERROR_RT_EVENT_CAPTURED
    case 107029:  // ACL_ERROR_RT_STREAM_NOT_CAPTURED
    case 107030:  // ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
    case 107031:  // ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT
    case 107032:  // ACL_ERROR_STREAM_CAPTURE_CONFLICT
    case 107036:  // ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED
    case 107038:  // ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD
    case 107041:  // ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC
    case 507903:  // ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED
      return static_cast<int>(keel::errc::capture_violation);
    // Task groups and their update: hicann/runtime docs/zh/api_ref/
    // 15_model_running_instance_management.md names 507009 for a non-aclnn
    // task inside a group.
    case 107033:  // ACL_ERROR_STREAM_TASK_GROUP_STATUS
    case 107034:  // ACL_ERROR_STREAM_TASK_GROUP_INTR
    case 107040:  // ACL_ERROR_RT_MODEL_UPDATE_FAILED
    case 207019:  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP
    case 507009:  // ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT
      return static_cast<int>(keel::errc::update_violation);
    case 207005:  // ACL_ERROR_RT_RESOURCE_ALLOC_FAIL
    case 207007:  // ACL_ERROR_RT_NO_EVENT_RESOURCE
    case 207008:  // ACL_ERROR_RT_NO_STREAM_RESOURCE
    case 207009:  // ACL_ERROR_RT_NO_NOTIFY_RESOURCE
    case 207010:  // ACL_ERROR_RT_NO_MODEL_RESOURCE
    case 207011:  // ACL_ERROR_RT_NO_CDQ_RESOURCE
    case 207012:  // ACL_ERROR_RT_OVER_LIMIT
    case 300000:  // ACL_ERROR_STORAGE_OVER_LIMIT
      return static_cast<int>(keel::errc::resource_limit);
    case 507915:  // ACL_ERROR_RT_SYMBOL_NOT_FOUND
      return static_cast<int>(keel::errc::symbol_not_found);
    case 107017:  // ACL_ERROR_RT_INVALID_HANDLE
    case 200005:  // ACL_ERROR_INVALID_RESOURCE_HANDLE
      return static_cast<int>(keel::errc::invalid_handle);
    case 507011:  // ACL_ERROR_RT_MODEL_EXECUTE
    case 507015:  // ACL_ERROR_RT_AICORE_EXCEPTION
    case 507016:  // ACL_ERROR_RT_AICORE_TRAP_EXCEPTION
    case 507018:  // ACL_ERROR_RT_AICPU_EXCEPTION
    case 507035:  // ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    case 507036:  // ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION
    case 507049:  // ACL_ERROR_RT_FFTS_PLUS_EXCEPTION
    case 507050:  // ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION
      return static_cast<int>(keel::errc::task_failed);
    case 200000:  // ACL_ERROR_BAD_ALLOC
    case 207001:  // ACL_ERROR_RT_MEMORY_ALLOCATION
    case 207018:  // ACL_ERROR_RT_DEVICE_OOM
      return static_cast<int>(keel::errc::out_of_memory);
    case 100001:  // ACL_ERROR_UNINITIALIZE
    case 100002:  // ACL_ERROR_REPEAT_INITIALIZE
    case 100037:  // ACL_ERROR_REPEAT_FINALIZE
    case 107002:  // ACL_ERROR_RT_CONTEXT_NULL
    case 107037:  // ACL_ERROR_RT_MODEL_RUNNING
    case 207015:  // ACL_ERROR_RT_REPEATED_INIT
      return static_cast<int>(keel::errc::invalid_state);
    case 100036:  // ACL_ERROR_WAIT_CALLBACK_TIMEOUT
    case 107019:  // ACL_ERROR_RT_WAIT_TIMEOUT
    case 107020:  // ACL_ERROR_RT_TASK_TIMEOUT
    case 207020:  // ACL_ERROR_RT_TIMEOUT
    case 507046:  // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    case 507047:  // ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
      return static_cast<int>(keel::errc::timeout);
    default: return -1;
  }
}

class acl_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "acl"; }
  // Out of line (keel/acl/impl/status.ipp): with KEEL_SEPARATE_COMPILATION
  // they and the vtable are compiled once, in keel_acl_runtime.
  KEEL_DECL std::string message(int code) const override;
  KEEL_DECL std::error_condition default_error_condition(int code) const noexcept override;
  // One step further than the default: a code equivalent to a keel condition
  // is also equivalent to the portable std::errc condition keel maps that
  // condition to, so `status == std::errc::invalid_argument` holds for
  // ACL_ERROR_INVALID_PARAM as it does for keel::errc::invalid_parameter.
  KEEL_DECL bool equivalent(int code, const std::error_condition& condition) const noexcept override;
};

}  // namespace detail

/** @brief The error category of ACL statuses. Throws: nothing. */
inline const std::error_category& acl_category() noexcept {
  static const detail::acl_category_impl category;
  return category;
}

/** @brief An ACL status as a std::error_code of acl_category(). Throws: nothing. */
inline std::error_code make_status_code(status code) noexcept { return {code, acl_category()}; }

inline std::error_code make_error_code(errc code) noexcept { return {static_cast<int>(code), acl_category()}; }

/**
 * @brief keel's condition @p value as a std::error_condition, to test an
 * ACL status against it: `ec == keel::acl::condition(keel::errc::null_parameter)`
 * holds for ACLNN_ERR_PARAM_NULLPTR. Throws: nothing.
 */
inline std::error_condition condition(keel::errc value) noexcept {
  return {static_cast<int>(value), keel::keel_category()};
}

namespace detail {

// The runtime's own text for the failure that just happened, or "". Never
// throws: a provider that is null, missing from an old runtime (a keel::acl
// api_function throws not_supported) or failing must not hide the status.
template <class MessageProvider>
std::string recent_message(MessageProvider& provider) noexcept {
  using provider_type = std::decay_t<MessageProvider>;
  if constexpr (std::is_null_pointer_v<provider_type>) {
    return {};
  } else {
    try {
      const char* text = nullptr;
      if constexpr (std::is_pointer_v<provider_type>) {
        // Through a copy: a function named directly never compares equal to
        // null, and compilers warn about the comparison.
        const provider_type pointer = provider;
        if (pointer == nullptr) return {};
        text = pointer();
      } else {
        text = provider();
      }
      return text == nullptr ? std::string() : std::string(text);
    } catch (...) {
      return {};
    }
  }
}

// Throws keel::error for a failed status (keel/acl/impl/status.ipp): cold,
// never inlined, compiled once in keel_acl_runtime with KEEL_SEPARATE_COMPILATION.
[[noreturn]] KEEL_COLD KEEL_DECL void throw_status(status code, const char* function, const std::string& recent);

}  // namespace detail

/**
 * @brief Throws keel::error for a failed ACL status; does nothing on success.
 *
 * @param code the aclError / aclnnStatus a call returned.
 * @param function the ACL function that returned it ("aclrtMalloc").
 * @param recent_message a callable returning the runtime's recent error text
 *        (`const char*`, may be null), called only on failure and on this
 *        thread, right after the failed call as CANN requires: typically
 *        `api.aclGetRecentErrMsg`, a function pointer (null allowed), or nullptr.
 * @throws keel::error whose code() is make_status_code(code), whose api() is
 *         @p function and whose rule() holds the status and the runtime's text.
 *
 * @code
 * keel::acl::check(api.aclrtMalloc(&p, n, keel::acl::malloc_policy::huge_first),
 *                  "aclrtMalloc", api.aclGetRecentErrMsg);
 * @endcode
 */
template <class MessageProvider>
void check(status code, const char* function, MessageProvider&& recent_message) {
  if (code == 0) return;
  detail::throw_status(code, function, detail::recent_message(recent_message));
}

/** @brief check() without a message provider. */
inline void check(status code, const char* function) {
  if (code == 0) return;
  detail::throw_status(code, function, std::string());
}

} KEEL_END_NAMESPACE  // namespace keel::acl

// The standard library's trait, specialized: nothing of keel's to document.
/// @cond
template <>
struct std::is_error_code_enum<keel::acl::errc> : std::true_type {};
/// @endcond

#undef KEEL_DETAIL_ACL_STATUS_CODES

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/status.ipp"
#endif
