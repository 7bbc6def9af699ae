// SPDX-License-Identifier: Apache-2.0
// keel's own backends run the conformance kit (keel/testing/backend_conformance.hpp),
// every layer: "... - host" always, "... - acl" when the build has the ACL emulation.
#include <catch2/catch.hpp>

#include "keel/testing/backend_conformance.hpp"
#include "test_support.hpp"

KEEL_BACKEND_FULL_CONFORMANCE(host, "host");
#ifdef KEEL_ACL_EMULATION_DIR
KEEL_BACKEND_FULL_CONFORMANCE(acl, "acl");
#endif
