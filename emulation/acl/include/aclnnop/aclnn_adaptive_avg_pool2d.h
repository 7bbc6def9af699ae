/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: aclnnAdaptiveAvgPool2d,
 * 2-D adaptive average pooling of an (N, C, H, W) or (C, H, W) self to
 * outputSize = [Hout, Wout] (torch.nn.functional.adaptive_avg_pool2d).
 * Declarations from the CANN aolapi reference page "aclnnAdaptiveAvgPool2d"
 * (CANN 8.0 onwards: out is aclTensor*, workspaceSize of the run call is
 * uint64_t; the 23.0 pages showed const aclTensor* / uint64_t*). The stream
 * is declared const by value, as there.
 */
#ifndef KEEL_EMULATION_ACLNNOP_ACLNN_ADAPTIVE_AVG_POOL2D_H_
#define KEEL_EMULATION_ACLNNOP_ACLNN_ADAPTIVE_AVG_POOL2D_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveAvgPool2dGetWorkspaceSize(const aclTensor *self,
                                                                       const aclIntArray *outputSize,
                                                                       aclTensor *out, uint64_t *workspaceSize,
                                                                       aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveAvgPool2d(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNNOP_ACLNN_ADAPTIVE_AVG_POOL2D_H_ */
