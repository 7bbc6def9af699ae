// SPDX-License-Identifier: Apache-2.0
// A plugin whose initialisation fails (returns the host's init_status, or
// throws when asked to) after its static constructor registered a pass.
#include <stdexcept>

#include "pass_api.hpp"

KEEL_REGISTER(keel_test::passes(), "doomed_pass", [](keel_test::graph& g) { g.log.push_back("doomed_pass"); });

KEEL_PLUGIN_EXPORT int keel_plugin_init() {
  ++keel_test::events().inits;
  if (keel_test::events().init_throws.load()) throw std::runtime_error("device not found");
  return keel_test::events().init_status.load();
}

KEEL_PLUGIN_EXPORT int keel_plugin_fini() {
  ++keel_test::events().finis;
  return 0;
}
