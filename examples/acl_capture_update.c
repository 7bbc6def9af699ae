/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACL capture-and-update sample in plain C, against the ACL API only (no
 * keel headers): out = tmp + alpha * other with tmp = 1.1 and other = 1,
 * captured once as a task group of a model; the first execution uses alpha
 * 1.1 (prints 2.2), then alpha is updated to 5.5 on an update stream
 * *while* the second execution waits at an external event (prints 6.6).
 *
 * Builds against keel's emulation headers and links its libascendcl.so only;
 * the same source builds against CANN (link ascendcl, nnopbase and opapi).
 */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add.h"

/* Every call checked: on failure print the status, the call and ACL's own text. */
#include "acl_check.h"

#define N 8

static int make_tensor(float *device_data, aclTensor **out) {
  const int64_t shape[1] = {N};
  const int64_t strides[1] = {1};
  *out = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, device_data);
  return *out != NULL ? 0 : 1;
}

/* Phase one of out = self + alpha * other: the executor and its workspace size. */
static int prepare_add(aclTensor *self, aclTensor *other, float alpha_value, aclTensor *out, aclOpExecutor **executor,
                       uint64_t *workspace_size) {
  aclScalar *alpha = aclCreateScalar(&alpha_value, ACL_FLOAT);
  int status;
  if (alpha == NULL) return 1;
  status = aclnnAddGetWorkspaceSize(self, other, alpha, out, workspace_size, executor);
  aclDestroyScalar(alpha);
  return status;
}

static void print_result(const char *label, const float *values) {
  int i;
  printf("%s:", label);
  for (i = 0; i < N; ++i) printf(" %.1f", (double)values[i]);
  printf("\n");
}

int main(void) {
  const size_t bytes = N * sizeof(float);
  float tmp_host[N], other_host[N];
  float *out_host = NULL;
  void *tmp = NULL, *other = NULL, *out = NULL;
  aclTensor *tmp_t = NULL, *other_t = NULL, *out_t = NULL;
  aclOpExecutor *executor = NULL, *update_executor = NULL;
  uint64_t workspace_size = 0, update_workspace_size = 0;
  aclrtStream main_stream = NULL, update_stream = NULL;
  aclrtEvent fence = NULL;
  aclmdlRI model = NULL;
  aclrtTaskGrp group = NULL;
  int i;

  for (i = 0; i < N; ++i) {
    tmp_host[i] = 1.1f;
    other_host[i] = 1.0f;
  }

  CHECK(aclInit(NULL));
  CHECK(aclrtSetDevice(0));
  CHECK(aclrtCreateStream(&main_stream));
  CHECK(aclrtCreateStream(&update_stream));
  /* The fence of the concurrent update: an external event. */
  CHECK(aclrtCreateEventWithFlag(&fence, ACL_EVENT_EXTERNAL));

  CHECK(aclrtMalloc(&tmp, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&other, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&out, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMallocHost((void **)&out_host, bytes));
  CHECK(aclrtMemcpy(tmp, bytes, tmp_host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(aclrtMemcpy(other, bytes, other_host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(make_tensor(tmp, &tmp_t));
  CHECK(make_tensor(other, &other_t));
  CHECK(make_tensor(out, &out_t));

  /* Capture: wait for the fence and reset it, then the task group holding
   * the add, then the copy of the result to the host. Phase one (no device
   * work) is done before the capture; the add's workspace is 0 bytes. */
  CHECK(prepare_add(tmp_t, other_t, 1.1f, out_t, &executor, &workspace_size));
  if (workspace_size != 0) {
    fprintf(stderr, "unexpected workspace of %llu bytes\n", (unsigned long long)workspace_size);
    return 1;
  }
  CHECK(aclmdlRICaptureBegin(main_stream, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL));
  CHECK(aclrtStreamWaitEventWithFlag(main_stream, fence, 0, ACL_EVENT_WAIT_EXTERNAL));
  CHECK(aclrtResetEvent(fence, main_stream));
  CHECK(aclmdlRICaptureTaskGrpBegin(main_stream));
  CHECK(aclnnAdd(NULL, 0, executor, main_stream)); /* consumes the executor */
  CHECK(aclmdlRICaptureTaskGrpEnd(main_stream, &group));
  CHECK(aclrtMemcpyAsync(out_host, bytes, out, bytes, ACL_MEMCPY_DEVICE_TO_HOST, main_stream));
  CHECK(aclmdlRICaptureEnd(main_stream, &model));

  /* Execution 1: let it pass the fence with the group as captured. */
  CHECK(aclrtRecordEventWithFlag(fence, update_stream, ACL_EVENT_RECORD_EXTERNAL));
  CHECK(aclmdlRIExecuteAsync(model, main_stream));
  CHECK(aclrtSynchronizeStream(main_stream));
  print_result("alpha 1.1", out_host);

  /* Execution 2 starts first and waits at the fence; meanwhile the update
   * stream replaces the group's add (same count and type) and signals. */
  CHECK(aclmdlRIExecuteAsync(model, main_stream));
  CHECK(prepare_add(tmp_t, other_t, 5.5f, out_t, &update_executor, &update_workspace_size));
  CHECK(aclmdlRICaptureTaskUpdateBegin(update_stream, group));
  CHECK(aclnnAdd(NULL, 0, update_executor, update_stream));
  CHECK(aclmdlRICaptureTaskUpdateEnd(update_stream));
  CHECK(aclrtRecordEventWithFlag(fence, update_stream, ACL_EVENT_RECORD_EXTERNAL));
  CHECK(aclrtSynchronizeStream(update_stream));
  CHECK(aclrtSynchronizeStream(main_stream));
  print_result("alpha 5.5", out_host);

  CHECK(aclmdlRIDestroy(model));
  CHECK(aclDestroyTensor(tmp_t));
  CHECK(aclDestroyTensor(other_t));
  CHECK(aclDestroyTensor(out_t));
  CHECK(aclrtFreeHost(out_host));
  CHECK(aclrtFree(tmp));
  CHECK(aclrtFree(other));
  CHECK(aclrtFree(out));
  CHECK(aclrtDestroyEvent(fence));
  CHECK(aclrtDestroyStream(update_stream));
  CHECK(aclrtDestroyStream(main_stream));
  CHECK(aclrtResetDevice(0));
  CHECK(aclFinalize());
  return 0;
}
