/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C examples' status check (acl_built_model.c, acl_capture_update.c), in
 * the vendor samples' style: CHECK(call) runs an ACL call and, on a failed
 * status, prints the call, its status and ACL's own text (aclGetRecentErrMsg)
 * and returns 1 from the calling function. Include after "acl/acl.h".
 */
#ifndef KEEL_EXAMPLES_ACL_CHECK_H
#define KEEL_EXAMPLES_ACL_CHECK_H

#include <stdio.h>

#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    int status_ = (int)(call);                                                                          \
    if (status_ != 0) {                                                                                 \
      const char *why_ = aclGetRecentErrMsg();                                                          \
      fprintf(stderr, "%s:%d: %s failed with %d: %s\n", __FILE__, __LINE__, #call, status_,            \
              why_ != NULL ? why_ : "(no message)");                                                    \
      return 1;                                                                                         \
    }                                                                                                   \
  } while (0)

#endif /* KEEL_EXAMPLES_ACL_CHECK_H */
