// SPDX-License-Identifier: Apache-2.0
// Error checks shared by the backend-generic suites (tests/runtime, tests/ops).
#pragma once

#include <system_error>

#include "keel/core/error.hpp"

namespace keel_test {

// e's code is an instance of keel's condition c, whatever the backend's
// category: ACL reports ACL statuses equivalent to keel's conditions.
inline bool is(const std::error_code& code, keel::errc c) {
  return code == std::error_condition(static_cast<int>(c), keel::keel_category());
}

}  // namespace keel_test
