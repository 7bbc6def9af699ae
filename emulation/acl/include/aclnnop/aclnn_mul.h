/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: aclnnMul,
 * out = self * other, with broadcasting (PyTorch's torch.mul).
 * Declarations from the CANN aolapi reference page "aclnnMul&aclnnInplaceMul"
 * (two-phase prototypes); the emulation provides the out-of-place form.
 */
#ifndef KEEL_EMULATION_ACLNNOP_ACLNN_MUL_H_
#define KEEL_EMULATION_ACLNNOP_ACLNN_MUL_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase one: checks the arguments, returns the device workspace size and an
 * executor that holds the computation. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor);
/* Phase two: runs the executor on stream with a workspace of workspaceSize bytes. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNNOP_ACLNN_MUL_H_ */
