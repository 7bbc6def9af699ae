// SPDX-License-Identifier: Apache-2.0
// keel's ACL backend over the emulation runs every layer of the conformance
// kit (keel/testing/backend_conformance.hpp): "... - acl". Its own translation
// unit, so the two backends' suites compile in parallel.
#include <catch2/catch.hpp>

#include "keel/testing/backend_conformance.hpp"
#include "test_support.hpp"

KEEL_BACKEND_FULL_CONFORMANCE(acl, "acl");
