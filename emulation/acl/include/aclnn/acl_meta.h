/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keel's host emulation of the Ascend CANN ACL C API: the aclnn meta objects
 * (aclTensor, aclScalar, aclIntArray, aclOpExecutor), their create/destroy
 * calls, and the aclnnStatus codes of the two-phase operator API.
 *
 * Written by keel from the documented CANN declarations. Sources:
 *   - CANN "aolapi" reference, basic APIs: aclCreateTensor (operatorlist_00019),
 *     aclCreateScalar, aclCreateIntArray, aclDestroy*, aclGetViewShape ...,
 *     aclSetAclOpExecutorRepeatable (operatorlist_00041),
 *     aclDestroyAclOpExecutor (operatorlist_00021);
 *   - CANN "aclnn return codes" (aolapi atlasascendc_api_07_1205) for the
 *     ACLNN_* values below;
 *   - the aclnn/acl_meta.h declarations shipped with CANN's op-api packages.
 * In CANN these objects live in libnnopbase.so; the operators in libopapi.so.
 */
#ifndef KEEL_EMULATION_ACLNN_ACL_META_H_
#define KEEL_EMULATION_ACLNN_ACL_META_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;

typedef int32_t aclnnStatus;

/* aclnnStatus values (aclnn return codes page, tables 1 and 2). 161xxx: the
 * caller's arguments; 361xxx: a runtime call made by the operator failed;
 * 561xxx: inside the operator. aclGetRecentErrMsg gives the details. */
#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_INFERSHAPE_ERROR 561001
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#define ACLNN_ERR_INNER_FIND_KERNEL_ERROR 561003
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR 561102
#define ACLNN_ERR_INNER_NULLPTR 561103
#define ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE 561104
#define ACLNN_ERR_INNER_KEY_CONFLICT 561105
/* The misspelt name is CANN's older one, documented as deprecated. */
#define ACLNN_ERR_INNER_KEY_CONFILICT 561105
#define ACLNN_ERR_INNER_INVALID_IMPL_MODE 561106

/* A strided view of device memory: shape viewDims, element strides stride
 * (non-negative), element offset into the storage, and the storage's own
 * shape. NULL on failure. The tensor does not own tensorData. */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                               const int64_t *stride, int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
/* A host scalar; *value is read (as dataType) when the scalar is created. */
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);

/* Read back a tensor's description. The arrays returned through viewDims,
 * storageDims and stridesValue are allocated by the callee and the caller
 * must release them with C++ delete[] (aclGetViewShape, operatorlist_00038),
 * so these three are usable from C++ only. */
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                                   uint64_t *storageDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                                  uint64_t *stridesNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size);

/* Executors. An executor from a GetWorkspaceSize call is consumed by its run
 * call, unless it was made repeatable right after GetWorkspaceSize; a
 * repeatable executor runs any number of times and is released with
 * aclDestroyAclOpExecutor. */
ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_EMULATION_ACLNN_ACL_META_H_ */
