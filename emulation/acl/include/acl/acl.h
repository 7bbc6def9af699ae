/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: the umbrella header an
 * ACL program includes, as in CANN (hicann/runtime include/external/acl/acl.h,
 * which includes acl_rt.h, acl_op.h and acl_mdl.h). The emulation provides
 * the runtime subset only, so this includes acl_rt.h; the operator API is
 * aclnn/ + aclnnop/, as in CANN.
 */
#ifndef KEEL_EMULATION_ACL_ACL_H_
#define KEEL_EMULATION_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "acl/acl_rt_allocator.h"
#include "acl/acl_rt_memory_soma.h"

#endif /* KEEL_EMULATION_ACL_ACL_H_ */
