// SPDX-License-Identifier: Apache-2.0
// A plugin whose registration is the first use of its registry: the registry
// is constructed inside dlopen, after the load began, and must still stage.
#include "pass_api.hpp"

KEEL_REGISTER(keel_test::late_passes(), "late_pass", [](keel_test::graph& g) { g.log.push_back("late_pass"); });
