// SPDX-License-Identifier: Apache-2.0
// A plugin that registers through the exported entry point, not static
// constructors: keel calls it on every first lease, mapped afresh or not.
#include "pass_api.hpp"

KEEL_PLUGIN_EXPORT void keel_plugin_register() {
  ++keel_test::events().register_calls;
  keel_test::passes().add("entry_point_pass", [](keel_test::graph& g) { g.log.push_back("entry_point_pass"); });
}
