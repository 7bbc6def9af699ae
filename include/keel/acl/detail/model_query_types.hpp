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
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl
