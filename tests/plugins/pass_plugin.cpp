// SPDX-License-Identifier: Apache-2.0
// The well-formed pass plugin: registers two passes from static constructors,
// initialises and finalises through its entry points, and exports a function
// and an object for import tests. Built twice: as is (dlclose unmaps it) and
// linked with -z nodelete (dlclose keeps it mapped, constructors never rerun).
#include <atomic>

#include "pass_api.hpp"

namespace {

std::atomic<bool> alive{false};  // between init and fini

void check_alive() {
  if (!alive.load()) ++keel_test::events().runs_after_fini;
}

struct constructed {
  constructed() {
    ++keel_test::events().constructions;
    if (auto hook = keel_test::events().constructor_hook.load()) hook();
  }
} construction;

}  // namespace

KEEL_REGISTER(keel_test::passes(), "fold_constants", [](keel_test::graph& g) {
  check_alive();
  g.value *= 2;
  g.log.push_back("fold_constants");
});
KEEL_REGISTER(keel_test::passes(), "eliminate_dead_code", [](keel_test::graph& g) {
  check_alive();
  g.value += 1;
  g.log.push_back("eliminate_dead_code");
});

KEEL_PLUGIN_EXPORT int keel_plugin_init() {
  ++keel_test::events().inits;
  alive = true;
  return 0;
}

KEEL_PLUGIN_EXPORT int keel_plugin_fini() {
  ++keel_test::events().finis;
  alive = false;
  return keel_test::events().fini_status.load();
}

KEEL_PLUGIN_EXPORT int keel_test_answer(int x) { return 40 + x; }
extern "C" {
__attribute__((visibility("default"))) int keel_test_version = 7;
}
