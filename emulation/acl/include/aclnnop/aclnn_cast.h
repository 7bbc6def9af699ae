/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: aclnnCast, converts
 * self to dtype into out (same shape). Declarations from the CANN aolapi
 * reference page "aclnnCast". dtype is declared const by value, as there;
 * that does not change the function's type.
 */
#ifndef KEEL_EMULATION_ACLNNOP_ACLNN_CAST_H_
#define KEEL_EMULATION_ACLNNOP_ACLNN_CAST_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype,
                                                          aclTensor *out, uint64_t *workspaceSize,
                                                          aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnCast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNNOP_ACLNN_CAST_H_ */
