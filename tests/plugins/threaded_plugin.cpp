// SPDX-License-Identifier: Apache-2.0
// A plugin that registers from a thread of its own while dlopen runs: its
// static constructor starts the thread and joins it. The registration names
// the plugin by address (add_from), since that thread is not the loading one.
#include <thread>

#include "pass_api.hpp"

namespace {

void threaded_pass(keel_test::graph& g) { g.log.push_back("threaded_pass"); }

struct start_thread {
  start_thread() {
    std::thread worker([] {
      keel_test::passes().add_from(reinterpret_cast<const void*>(&threaded_pass), "threaded_pass", &threaded_pass);
    });
    worker.join();
  }
} starter;

}  // namespace

KEEL_PLUGIN_EXPORT int keel_plugin_init() {
  ++keel_test::events().inits;
  return 0;
}
