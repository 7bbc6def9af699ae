/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A built model and an IF conditional in plain C, against the ACL API only
 * (no keel headers), in the vendor's style (CANN's model-running-instance
 * guide: aclmdlRIBuildBegin, aclmdlRIBindStream, aclrtSwitchStream,
 * aclrtActiveStream, aclmdlRIEndTask, aclmdlRIBuildEnd; then
 * aclmdlRICondHandleCreate, aclmdlRIAddCondTask, aclmdlRICaptureToModelRIBegin).
 *
 * x = 1..8 and y = 2. The built model's head stream compares a device value
 * with 1: equal, it switches to the stream that computes x + 10 * y
 * (aclnnAdd); otherwise it activates the stream that computes x * y
 * (aclnnMul). The captured model copies a device decision into its
 * condition and runs an IF task: then-body x + y, else-body x * y. Each
 * model runs twice, once per branch, and prints what it computed.
 *
 * Builds against keel's emulation headers and links its libascendcl.so only;
 * the same source builds against CANN (link ascendcl, nnopbase and opapi).
 */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_mul.h"

/* Every call checked: on failure print the status, the call and ACL's own text. */
#include "acl_check.h"

#define N 8

static aclTensor *make_tensor(void *device_data) {
  const int64_t shape[1] = {N};
  const int64_t strides[1] = {1};
  return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, device_data);
}

/* Phase one of out = self + alpha * other, repeatable (a model replays it). */
static int prepare_add(aclTensor *self, aclTensor *other, float alpha_value, aclTensor *out, aclOpExecutor **executor) {
  uint64_t workspace_size = 0;
  aclScalar *alpha = aclCreateScalar(&alpha_value, ACL_FLOAT);
  int status;
  if (alpha == NULL) return 1;
  status = aclnnAddGetWorkspaceSize(self, other, alpha, out, &workspace_size, executor);
  aclDestroyScalar(alpha);
  if (status != 0) return status;
  if (workspace_size != 0) return 1; /* the element-wise operators need none */
  return aclSetAclOpExecutorRepeatable(*executor);
}

/* Phase one of out = self * other, repeatable. */
static int prepare_mul(aclTensor *self, aclTensor *other, aclTensor *out, aclOpExecutor **executor) {
  uint64_t workspace_size = 0;
  int status = aclnnMulGetWorkspaceSize(self, other, out, &workspace_size, executor);
  if (status != 0) return status;
  if (workspace_size != 0) return 1;
  return aclSetAclOpExecutorRepeatable(*executor);
}

/* Copies the result back and prints it. */
static int print_result(const char *label, void *device_out) {
  float host[N];
  int i;
  if (aclrtMemcpy(host, sizeof host, device_out, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST) != 0) return 1;
  printf("%s:", label);
  for (i = 0; i < N; ++i) printf(" %.0f", (double)host[i]);
  printf("\n");
  return 0;
}

/* Executes the model on the stream, waits for it and prints what it computed. */
static int execute_and_print(aclmdlRI model, aclrtStream stream, const char *label, void *device_out) {
  if (aclmdlRIExecuteAsync(model, stream) != 0 || aclrtSynchronizeStream(stream) != 0) return 1;
  return print_result(label, device_out);
}

int main(void) {
  const size_t bytes = N * sizeof(float);
  float x_host[N], y_host[N];
  int32_t one_host = 1, flag_host = 1;
  uint64_t decision_host = 1;
  void *x = NULL, *y = NULL, *out = NULL, *flag = NULL, *one = NULL, *decision = NULL;
  aclTensor *x_t = NULL, *y_t = NULL, *out_t = NULL;
  aclOpExecutor *add_ten = NULL, *mul = NULL, *add_one = NULL, *mul_else = NULL;
  aclrtStream run_stream = NULL, head = NULL, add_stream = NULL, mul_stream = NULL, side = NULL;
  aclmdlRI built = NULL, captured = NULL, ended = NULL;
  aclmdlRI bodies[2] = {NULL, NULL};
  aclmdlRICaptureStatus capture_status;
  aclmdlRICondHandle condition = NULL;
  aclmdlRICondTaskParams if_task;
  uint64_t *condition_value = NULL;
  int i;

  for (i = 0; i < N; ++i) {
    x_host[i] = (float)(i + 1);
    y_host[i] = 2.0f;
  }

  CHECK(aclInit(NULL));
  CHECK(aclrtSetDevice(0));
  CHECK(aclrtCreateStream(&run_stream));
  CHECK(aclrtCreateStream(&side));
  /* Streams bound to a model being built must be persistent. */
  CHECK(aclrtCreateStreamWithConfig(&head, 0, ACL_STREAM_PERSISTENT));
  CHECK(aclrtCreateStreamWithConfig(&add_stream, 0, ACL_STREAM_PERSISTENT));
  CHECK(aclrtCreateStreamWithConfig(&mul_stream, 0, ACL_STREAM_PERSISTENT));

  CHECK(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&out, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&flag, sizeof flag_host, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&one, sizeof one_host, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMalloc(&decision, sizeof decision_host, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMemcpy(x, bytes, x_host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(aclrtMemcpy(y, bytes, y_host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(aclrtMemcpy(one, sizeof one_host, &one_host, sizeof one_host, ACL_MEMCPY_HOST_TO_DEVICE));

  x_t = make_tensor(x);
  y_t = make_tensor(y);
  out_t = make_tensor(out);
  if (x_t == NULL || y_t == NULL || out_t == NULL) return 1;
  CHECK(prepare_add(x_t, y_t, 10.0f, out_t, &add_ten));
  CHECK(prepare_mul(x_t, y_t, out_t, &mul));
  CHECK(prepare_add(x_t, y_t, 1.0f, out_t, &add_one));
  CHECK(prepare_mul(x_t, y_t, out_t, &mul_else));

  /* ---- a built model: the head stream switches on a device value ---------- */
  CHECK(aclmdlRIBuildBegin(&built, 0));
  CHECK(aclmdlRIBindStream(built, head, ACL_MODEL_STREAM_FLAG_HEAD));
  CHECK(aclmdlRIBindStream(built, add_stream, ACL_MODEL_STREAM_FLAG_DEFAULT));
  CHECK(aclmdlRIBindStream(built, mul_stream, ACL_MODEL_STREAM_FLAG_DEFAULT));
  /* flag == 1: the add stream runs and the head's remaining work does not. */
  CHECK(aclrtSwitchStream(flag, ACL_RT_EQUAL, one, ACL_RT_SWITCH_INT32, add_stream, NULL, head));
  CHECK(aclrtActiveStream(mul_stream, head)); /* otherwise: the mul stream runs */
  CHECK(aclmdlRIEndTask(built, head));
  CHECK(aclnnAdd(NULL, 0, add_ten, add_stream)); /* recorded into the model, not run */
  CHECK(aclmdlRIEndTask(built, add_stream));
  CHECK(aclnnMul(NULL, 0, mul, mul_stream));
  CHECK(aclmdlRIEndTask(built, mul_stream));
  CHECK(aclmdlRIBuildEnd(built, NULL));

  CHECK(aclrtMemcpy(flag, sizeof flag_host, &flag_host, sizeof flag_host, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(execute_and_print(built, run_stream, "built, flag 1, x + 10 * y", out));
  flag_host = 0;
  CHECK(aclrtMemcpy(flag, sizeof flag_host, &flag_host, sizeof flag_host, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(execute_and_print(built, run_stream, "built, flag 0, x * y", out));

  /* ---- a captured model with an IF task ----------------------------------- */
  CHECK(aclmdlRICaptureBegin(run_stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
  CHECK(aclmdlRICaptureGetInfo(run_stream, &capture_status, &captured));
  CHECK(aclmdlRICondHandleCreate(captured, 0, (aclmdlRICondHandleFlag)0, &condition));
  CHECK(aclmdlRICondHandleGetCondPtr(condition, &condition_value));
  /* The condition is a device value the model's own work writes. */
  CHECK(aclrtMemcpyAsync(condition_value, sizeof decision_host, decision, sizeof decision_host,
                         ACL_MEMCPY_DEVICE_TO_DEVICE, run_stream));
  if_task.handle = condition;
  if_task.type = ACL_MODEL_RI_COND_TYPE_IF;
  if_task.size = 2;
  if_task.modelRIArray = bodies;
  CHECK(aclmdlRIAddCondTask(if_task, run_stream, 0));
  CHECK(aclmdlRICaptureToModelRIBegin(side, bodies[0], ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
  CHECK(aclnnAdd(NULL, 0, add_one, side)); /* then: x + y */
  CHECK(aclmdlRICaptureEnd(side, &ended));
  CHECK(aclmdlRICaptureToModelRIBegin(side, bodies[1], ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
  CHECK(aclnnMul(NULL, 0, mul_else, side)); /* else: x * y */
  CHECK(aclmdlRICaptureEnd(side, &ended));
  CHECK(aclmdlRICaptureEnd(run_stream, &captured));

  CHECK(aclrtMemcpy(decision, sizeof decision_host, &decision_host, sizeof decision_host, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(execute_and_print(captured, run_stream, "if, condition 1, x + y", out));
  decision_host = 0;
  CHECK(aclrtMemcpy(decision, sizeof decision_host, &decision_host, sizeof decision_host, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(execute_and_print(captured, run_stream, "if, condition 0, x * y", out));

  /* Bodies go with their parent; bound streams are unbound before they are destroyed. */
  CHECK(aclmdlRIDestroy(captured));
  CHECK(aclmdlRIUnbindStream(built, head));
  CHECK(aclmdlRIUnbindStream(built, add_stream));
  CHECK(aclmdlRIUnbindStream(built, mul_stream));
  CHECK(aclmdlRIDestroy(built));
  CHECK(aclDestroyAclOpExecutor(add_ten));
  CHECK(aclDestroyAclOpExecutor(mul));
  CHECK(aclDestroyAclOpExecutor(add_one));
  CHECK(aclDestroyAclOpExecutor(mul_else));
  CHECK(aclDestroyTensor(x_t));
  CHECK(aclDestroyTensor(y_t));
  CHECK(aclDestroyTensor(out_t));
  CHECK(aclrtFree(x));
  CHECK(aclrtFree(y));
  CHECK(aclrtFree(out));
  CHECK(aclrtFree(flag));
  CHECK(aclrtFree(one));
  CHECK(aclrtFree(decision));
  CHECK(aclrtDestroyStream(head));
  CHECK(aclrtDestroyStream(add_stream));
  CHECK(aclrtDestroyStream(mul_stream));
  CHECK(aclrtDestroyStream(side));
  CHECK(aclrtDestroyStream(run_stream));
  CHECK(aclrtResetDevice(0));
  CHECK(aclFinalize());
  return 0;
}
