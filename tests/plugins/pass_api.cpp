// SPDX-License-Identifier: Apache-2.0
// The host side of pass_api.hpp: compiled into every program that loads the
// test plugins, which must export it (ENABLE_EXPORTS).
#include "pass_api.hpp"

namespace keel_test {

pass_registry& passes() {
  static pass_registry registry;
  return registry;
}

plugin_events& events() {
  static plugin_events e;
  return e;
}

}  // namespace keel_test
