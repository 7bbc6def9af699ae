// SPDX-License-Identifier: Apache-2.0
// Error checks shared by the backend-generic suites (tests/runtime, tests/ops):
// the conformance kit's, under the keel_test names.
#pragma once

#include "keel/testing/conditions.hpp"

namespace keel_test {

// e's code is an instance of keel's condition c, whatever the backend's
// category: ACL reports ACL statuses equivalent to keel's conditions.
using keel::testing::is;

}  // namespace keel_test
