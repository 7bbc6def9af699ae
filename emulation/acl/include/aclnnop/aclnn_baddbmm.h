/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: aclnnBaddbmm,
 * out = beta * self + alpha * (batch1 @ batch2) for 3-D batch1 (b, n, m) and
 * batch2 (b, m, p), self broadcast to (b, n, p); with beta == 0 self is
 * ignored (torch.baddbmm). Declarations from the CANN aolapi reference page
 * "aclnnBaddbmm&aclnnInplaceBaddbmm". cubeMathType selects the device's
 * matmul precision mode; the page names 1 ALLOW_FP32_DOWN_PRECISION (float32
 * inputs may compute in float16 on the Cube unit). The emulation provides the
 * out-of-place form. (Older CANN samples include this header as
 * aclnnop/level2/aclnn_baddbmm.h; current releases as aclnnop/aclnn_baddbmm.h.)
 */
#ifndef KEEL_EMULATION_ACLNNOP_ACLNN_BADDBMM_H_
#define KEEL_EMULATION_ACLNNOP_ACLNN_BADDBMM_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBaddbmmGetWorkspaceSize(const aclTensor *self, const aclTensor *batch1,
                                                             const aclTensor *batch2, const aclScalar *beta,
                                                             const aclScalar *alpha, aclTensor *out,
                                                             int8_t cubeMathType, uint64_t *workspaceSize,
                                                             aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnBaddbmm(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNNOP_ACLNN_BADDBMM_H_ */
