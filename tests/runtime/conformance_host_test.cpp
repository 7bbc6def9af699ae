// SPDX-License-Identifier: Apache-2.0
// keel's host backend runs every layer of the conformance kit
// (keel/testing/backend_conformance.hpp): "... - host".
#include <catch2/catch.hpp>

#include "keel/testing/backend_conformance.hpp"
#include "test_support.hpp"

KEEL_BACKEND_FULL_CONFORMANCE(host, "host");
