/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles every emulation header as C99 (twice, for the include guards) and
 * reports what a C compiler makes of the types and values, for
 * headers_test.cpp to compare with keel's C++ mirror. */
#include "acl/acl.h"
#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_adaptive_avg_pool2d.h"
#include "aclnnop/aclnn_adaptive_avg_pool2d.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_addcmul.h"
#include "aclnnop/aclnn_addcmul.h"
#include "aclnnop/aclnn_baddbmm.h"
#include "aclnnop/aclnn_baddbmm.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_mul.h"
#include "aclnnop/aclnn_mul.h"

/* C99 has no _Static_assert: a negative array size fails the build. */
typedef char keel_c_check_event_external[(ACL_EVENT_EXTERNAL == 0x20U) ? 1 : -1];
typedef char keel_c_check_record_external[(ACL_EVENT_RECORD_EXTERNAL == 0x1U) ? 1 : -1];
typedef char keel_c_check_wait_external[(ACL_EVENT_WAIT_EXTERNAL == 0x1U) ? 1 : -1];
typedef char keel_c_check_nullptr[(ACLNN_ERR_PARAM_NULLPTR == 161001) ? 1 : -1];
typedef char keel_c_check_bf16[(ACL_BF16 == 27) ? 1 : -1];

size_t keel_acl_c_probe(long long *values, size_t capacity);

size_t keel_acl_c_probe(long long *values, size_t capacity) {
  /* The order is the contract with headers_test.cpp. */
  const long long probe[] = {
      (long long)sizeof(aclDataType),
      (long long)sizeof(aclFormat),
      (long long)sizeof(aclrtMemcpyKind),
      (long long)sizeof(aclrtMemMallocPolicy),
      (long long)sizeof(aclmdlRICaptureMode),
      (long long)sizeof(aclmdlRICaptureStatus),
      (long long)sizeof(aclrtEventRecordedStatus),
      (long long)sizeof(aclrtStreamStatus),
      (long long)sizeof(aclrtStream),
      (long long)sizeof(aclError),
      (long long)sizeof(aclnnStatus),
      ACL_DT_UNDEFINED,
      ACL_BF16,
      ACL_FORMAT_NCL,
      ACL_MEMCPY_DEVICE_TO_HOST,
      ACL_MEM_MALLOC_NORMAL_ONLY,
      ACL_MODEL_RI_CAPTURE_MODE_RELAXED,
      ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED,
      ACL_STREAM_STATUS_RESERVED,
      ACL_EVENT_EXTERNAL,
      ACL_EVENT_RECORD_EXTERNAL,
      ACL_EVENT_WAIT_EXTERNAL,
      ACL_STREAM_PERSISTENT,
      ACL_ERROR_INVALID_PARAM,
      ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
      ACL_ERROR_STREAM_TASK_GROUP_STATUS,
      ACLNN_ERR_PARAM_NULLPTR,
      ACLNN_ERR_PARAM_INVALID,
  };
  const size_t count = sizeof probe / sizeof probe[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) values[i] = probe[i];
  return count;
}
