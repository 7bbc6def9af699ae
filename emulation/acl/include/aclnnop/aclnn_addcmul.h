/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: aclnnAddcmul,
 * out = self + value * tensor1 * tensor2, with broadcasting (torch.addcmul).
 * Declarations from the CANN aolapi reference page
 * "aclnnAddcmul&aclnnInplaceAddcmul" (CANN 8.0 onwards: out is aclTensor*,
 * the run call takes aclOpExecutor*, as for every other operator; some older
 * pages showed const aclTensor* / aclOpExecutor**, which later releases
 * corrected). The emulation provides the out-of-place form.
 */
#ifndef KEEL_EMULATION_ACLNNOP_ACLNN_ADDCMUL_H_
#define KEEL_EMULATION_ACLNNOP_ACLNN_ADDCMUL_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnAddcmulGetWorkspaceSize(const aclTensor *self, const aclTensor *tensor1,
                                                             const aclTensor *tensor2, const aclScalar *value,
                                                             aclTensor *out, uint64_t *workspaceSize,
                                                             aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnAddcmul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNNOP_ACLNN_ADDCMUL_H_ */
