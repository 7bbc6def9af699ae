// SPDX-License-Identifier: Apache-2.0
// A plugin without keel_plugin_init: acquiring it with require_init fails.
#include "pass_api.hpp"

KEEL_REGISTER(keel_test::passes(), "orphan_pass", [](keel_test::graph& g) { g.log.push_back("orphan_pass"); });

KEEL_PLUGIN_EXPORT int keel_test_answer(int x) { return x; }
