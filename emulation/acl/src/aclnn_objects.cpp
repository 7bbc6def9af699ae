// SPDX-License-Identifier: Apache-2.0
// The aclnn objects of acl_meta.h: tensors, scalars and int arrays (created,
// queried, destroyed) and the executor calls (repeatable, destroy). They
// touch no stream, so they need no current context.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "detail/aclnn_objects.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

// The aclDataType values keel's operators take (acl_base.h); the rest have no
// keel dtype and are refused.
bool dtype_of(aclDataType t, keel::ops::dtype& out) {
  switch (t) {
    case ACL_FLOAT: out = keel::ops::dtype::float32; return true;
    case ACL_FLOAT16: out = keel::ops::dtype::float16; return true;
    case ACL_BF16: out = keel::ops::dtype::bfloat16; return true;
    case ACL_INT32: out = keel::ops::dtype::int32; return true;
    case ACL_INT64: out = keel::ops::dtype::int64; return true;
    case ACL_INT8: out = keel::ops::dtype::int8; return true;
    case ACL_UINT8: out = keel::ops::dtype::uint8; return true;
    case ACL_BOOL: out = keel::ops::dtype::boolean; return true;
    default: return false;
  }
}

template <class T>
T read_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

aclnnStatus give_array(const char* api, const aclTensor* tensor, const std::vector<std::int64_t>& (*pick)(const aclTensor&),
                       std::int64_t** out, std::uint64_t* count) {
  return guarded(api, call::nn, [&] {
    require(tensor, api, "tensor");
    require(out, api, "output array");
    require(count, api, "output count");
    const std::vector<std::int64_t>& v = pick(*tensor);
    auto* copy = new std::int64_t[v.empty() ? 1 : v.size()];  // released by the caller with delete[]
    std::copy(v.begin(), v.end(), copy);
    *out = copy;
    *count = v.size();
  });
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclTensor* aclCreateTensor(const std::int64_t* viewDims, std::uint64_t viewDimsNum, aclDataType dataType,
                           const std::int64_t* stride, std::int64_t offset, aclFormat format,
                           const std::int64_t* storageDims, std::uint64_t storageDimsNum, void* tensorData) {
  static constexpr const char* api = "aclCreateTensor";
  aclTensor* made = nullptr;
  guarded(api, call::nn, [&] {
    if (viewDimsNum > 0) require(viewDims, api, "viewDims");
    if (viewDimsNum > 0) require(stride, api, "stride");
    if (storageDimsNum > 0) require(storageDims, api, "storageDims");
    keel::ops::dtype type{};
    if (!dtype_of(dataType, type))
      throw_rule(errc::invalid_parameter, api, "dataType " + std::to_string(static_cast<int>(dataType)) +
                                                   " is not one of the emulation's (float, float16, bf16, int8, "
                                                   "uint8, int32, int64, bool)");
    if (offset < 0) throw_rule(errc::invalid_parameter, api, "offset is negative");
    // Counts are bounded before anything reads the caller's arrays.
    if (viewDimsNum > keel::ops::tensor::max_dims || storageDimsNum > keel::ops::tensor::max_dims)
      throw_rule(errc::invalid_parameter, api,
                 "viewDimsNum and storageDimsNum must be at most " + std::to_string(keel::ops::tensor::max_dims));
    auto t = std::make_unique<aclTensor>();
    t->dims.assign(viewDims, viewDims + viewDimsNum);
    t->strides.assign(stride, stride + viewDimsNum);
    if (storageDimsNum > 0) t->storage.assign(storageDims, storageDims + storageDimsNum);
    t->type = dataType;
    t->format = format;
    t->offset = offset;
    t->view = keel::ops::tensor(tensorData, type, t->dims.data(), t->dims.size(), t->strides.data(),
                                t->strides.size(), offset);
    made = t.release();
  });
  return made;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  static constexpr const char* api = "aclCreateScalar";
  aclScalar* made = nullptr;
  guarded(api, call::nn, [&] {
    require(value, api, "value");
    keel::ops::scalar v;
    switch (dataType) {
      case ACL_FLOAT: v = keel::ops::scalar(read_as<float>(value)); break;
      case ACL_DOUBLE: v = keel::ops::scalar(read_as<double>(value)); break;
      case ACL_FLOAT16: v = keel::ops::scalar(keel::ops::half_bits_to_float(read_as<std::uint16_t>(value))); break;
      case ACL_BF16: v = keel::ops::scalar(keel::ops::bfloat16_bits_to_float(read_as<std::uint16_t>(value))); break;
      case ACL_INT8: v = keel::ops::scalar(std::int64_t{read_as<std::int8_t>(value)}); break;
      case ACL_UINT8: v = keel::ops::scalar(std::int64_t{read_as<std::uint8_t>(value)}); break;
      case ACL_INT16: v = keel::ops::scalar(std::int64_t{read_as<std::int16_t>(value)}); break;
      case ACL_INT32: v = keel::ops::scalar(read_as<std::int32_t>(value)); break;
      case ACL_INT64: v = keel::ops::scalar(read_as<std::int64_t>(value)); break;
      case ACL_BOOL: v = keel::ops::scalar(read_as<std::uint8_t>(value) != 0); break;
      default:
        throw_rule(errc::invalid_parameter, api,
                   "dataType " + std::to_string(static_cast<int>(dataType)) + " is not a scalar type the emulation reads");
    }
    made = new aclScalar{v};
  });
  return made;
}

aclIntArray* aclCreateIntArray(const std::int64_t* value, std::uint64_t size) {
  aclIntArray* made = nullptr;
  guarded("aclCreateIntArray", call::nn, [&] {
    if (size > 0) require(value, "aclCreateIntArray", "value");
    if (size > static_cast<std::uint64_t>(PTRDIFF_MAX) / sizeof(std::int64_t))
      throw_rule(errc::invalid_parameter, "aclCreateIntArray", "size is larger than any array can be");
    made = new aclIntArray{std::vector<std::int64_t>(value, value + size)};
  });
  return made;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return guarded("aclDestroyTensor", call::nn, [&] {
    require(tensor, "aclDestroyTensor", "tensor");
    delete tensor;
  });
}
aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return guarded("aclDestroyScalar", call::nn, [&] {
    require(scalar, "aclDestroyScalar", "scalar");
    delete scalar;
  });
}
aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return guarded("aclDestroyIntArray", call::nn, [&] {
    require(array, "aclDestroyIntArray", "array");
    delete array;
  });
}


aclnnStatus aclGetViewShape(const aclTensor* tensor, std::int64_t** viewDims, std::uint64_t* viewDimsNum) {
  return give_array("aclGetViewShape", tensor, [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.dims; },
                    viewDims, viewDimsNum);
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, std::int64_t** storageDims, std::uint64_t* storageDimsNum) {
  return give_array("aclGetStorageShape", tensor,
                    [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.storage; }, storageDims,
                    storageDimsNum);
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, std::int64_t** stridesValue, std::uint64_t* stridesNum) {
  return give_array("aclGetViewStrides", tensor,
                    [](const aclTensor& t) -> const std::vector<std::int64_t>& { return t.strides; }, stridesValue,
                    stridesNum);
}
aclnnStatus aclGetViewOffset(const aclTensor* tensor, std::int64_t* offset) {
  return guarded("aclGetViewOffset", call::nn, [&] {
    require(tensor, "aclGetViewOffset", "tensor");
    require(offset, "aclGetViewOffset", "offset");
    *offset = tensor->offset;
  });
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  return guarded("aclGetFormat", call::nn, [&] {
    require(tensor, "aclGetFormat", "tensor");
    require(format, "aclGetFormat", "format");
    *format = tensor->format;
  });
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  return guarded("aclGetDataType", call::nn, [&] {
    require(tensor, "aclGetDataType", "tensor");
    require(dataType, "aclGetDataType", "dataType");
    *dataType = tensor->type;
  });
}
aclnnStatus aclGetIntArraySize(const aclIntArray* array, std::uint64_t* size) {
  return guarded("aclGetIntArraySize", call::nn, [&] {
    require(array, "aclGetIntArraySize", "array");
    require(size, "aclGetIntArraySize", "size");
    *size = array->values.size();
  });
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return guarded("aclSetAclOpExecutorRepeatable", call::nn, [&] {
    require(executor, "aclSetAclOpExecutorRepeatable", "executor");
    executor->repeatable = true;
  });
}
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return guarded("aclDestroyAclOpExecutor", call::nn, [&] {
    require(executor, "aclDestroyAclOpExecutor", "executor");
    delete executor;
  });
}

}  // extern "C"
