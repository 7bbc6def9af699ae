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

namespace {
std::atomic<bool> late_created{false};
}  // namespace

pass_registry& late_passes() {
  static pass_registry registry = [] {
    late_created = true;
    return pass_registry{};
  }();
  return registry;
}

bool late_passes_exists() { return late_created.load(); }

}  // namespace keel_test
