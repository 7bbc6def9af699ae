// SPDX-License-Identifier: Apache-2.0
// A plugin whose registration throws halfway: its entry point registers one
// pass, then fails before registering the second (a device it needs is
// missing). keel must roll the first registration back and unload it.
#include <stdexcept>

#include "pass_api.hpp"

KEEL_PLUGIN_EXPORT void keel_plugin_register() {
  ++keel_test::events().register_calls;
  keel_test::passes().add("half_pass_first", [](keel_test::graph& g) { g.log.push_back("half_pass_first"); });
  throw std::runtime_error("second pass needs a device that is not there");
}
