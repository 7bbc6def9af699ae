// SPDX-License-Identifier: Apache-2.0
// The types of CANN's model-task queries (aclmdlRITask, aclmdlRITaskType,
// aclmdlRITaskParams; hicann/runtime docs/zh/api_ref/25-02_Enumerations.md
// and 25-04_Structs.md) in keel's ACL namespace, laid out as CANN's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/// @cond

using task_handle = void*;      ///< aclmdlRITask
using function_handle = void*;  ///< aclrtFuncHandle

/// aclmdlRITaskType.
enum class ri_task_type : int { other = 0, kernel = 1, event_record = 2, event_wait = 3, event_reset = 4, value_write = 5, value_wait = 6 };

/// aclmdlRIKernelTaskParams.
struct ri_kernel_params {
  function_handle function;  ///< funcHandle
  void* config;              ///< cfg
  void* args;
  std::uint32_t host_args;   ///< isHostArgs
  std::size_t args_size;
  std::uint32_t blocks;      ///< numBlocks
  std::uint32_t rsv[10];
};

/// aclmdlRIEventRecordTaskParams, aclmdlRIEventWaitTaskParams, aclmdlRIEventResetTaskParams.
struct ri_event_params {
  void* event;
  std::uint32_t event_flag;
  std::uint32_t flag;
};

/// aclmdlRITaskParams (the members keel reads; the layout is CANN's).
struct ri_task_params {
  ri_task_type type;
  std::uint32_t rsv0[3];
  void* task_group;   ///< taskGrp
  void* op_info;      ///< opInfoPtr
  std::size_t op_info_size;
  std::uint8_t rsv1[32];
  union {
    std::uint8_t rsv2[128];
    ri_kernel_params kernel;
    ri_event_params event;
  };
};
static_assert(sizeof(ri_task_params) == 4 * 4 + 3 * sizeof(void*) + 32 + 128, "aclmdlRITaskParams' layout");

/// aclrtLaunchKernelAttrId: the attributes aclmdlRIKernelTaskGetAttribute answers for.
enum class kernel_attribute : int { schedule_mode = 1, dynamic_ub_size = 2, data_dump = 6, timeout = 7, timeout_us = 8 };

/// aclrtTimeoutUs.
struct timeout_us_value {
  std::uint32_t low;   ///< timeoutLow
  std::uint32_t high;  ///< timeoutHigh
};

/// aclrtLaunchKernelAttrValue (the members keel reads; the layout is CANN's).
union kernel_attribute_value {
  std::uint8_t schedule_mode;       ///< schemMode
  std::uint32_t dynamic_ub_bytes;   ///< dynUBufSize
  std::uint8_t data_dump;           ///< isDataDump
  std::uint16_t timeout;            ///< timeout (seconds)
  timeout_us_value timeout_us;      ///< timeoutUs
  std::uint32_t rsv[4];
};
static_assert(sizeof(kernel_attribute_value) == 16, "aclrtLaunchKernelAttrValue's layout");
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl
