/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in ACL runtime for api_test.cpp: exports aclrtCreateStream,
 * aclrtSynchronizeStream (which always fails) and aclGetRecentErrMsg, and
 * nothing else, so the test sees both resolved and missing functions
 * through dlsym. Defined against the emulation headers, so a signature
 * drift there breaks this build. */
#include "acl/acl.h"

static int keel_fake_stream;

aclError aclrtCreateStream(aclrtStream *stream) {
  if (stream == NULL) return ACL_ERROR_INVALID_PARAM;
  *stream = &keel_fake_stream;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return stream == &keel_fake_stream ? ACL_ERROR_RT_STREAM_SYNC_TIMEOUT : ACL_ERROR_RT_PARAM_INVALID;
}

const char *aclGetRecentErrMsg(void) { return "fake runtime: the stream did not finish in time"; }
