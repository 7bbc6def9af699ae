// SPDX-License-Identifier: Apache-2.0
// The aclnn objects behind acl_meta.h's opaque types, shared by the object
// calls (aclnn_objects.cpp) and the operators (aclnn_operators.cpp). Each is
// what the caller created and must destroy; none is thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"
#include "keel/ops/executor.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

// A view over the caller's data; dims, strides and storage are its own copies
// (the view points into them).
struct aclTensor {
  keel::ops::tensor view;
  aclDataType type;
  aclFormat format;
  std::int64_t offset;
  std::vector<std::int64_t> dims, strides, storage;
};
struct aclScalar {
  keel::ops::scalar value;
};
struct aclIntArray {
  std::vector<std::int64_t> values;
};
// Phase one's plan; a successful aclnnXxx consumes it unless it is repeatable.
struct aclOpExecutor {
  keel::ops::executor ex;
  keel::ops::tensor out;  // the result's view (overflow.cpp looks at it)
  bool repeatable = false;
};
