// SPDX-License-Identifier: Apache-2.0
// What the test plugins see of their host: a pass registry and a few
// counters, defined in the host executable (pass_api.cpp, exported) and
// resolved by the plugins when they are loaded.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "keel/plugin/registry.hpp"

#define KEEL_TEST_API __attribute__((visibility("default")))

namespace keel_test {

/** The IR the passes transform: a value and the log of passes that ran. */
struct graph {
  int value = 0;
  std::vector<std::string> log;
};

/** A pass: a std::function, so that destroying one runs code of the plugin that made it. */
using pass = std::function<void(graph&)>;
using pass_registry = keel::registry<pass>;

/** What the plugins tell the host, and what the host asks of them. */
struct plugin_events {
  std::atomic<int> inits{0};
  std::atomic<int> finis{0};
  std::atomic<int> constructions{0};       // static constructors of the pass plugins
  std::atomic<int> register_calls{0};      // keel_plugin_register calls
  std::atomic<int> init_status{0};         // what keel_plugin_init returns
  std::atomic<int> fini_status{0};         // what keel_plugin_fini returns
  std::atomic<bool> init_throws{false};    // keel_plugin_init throws instead
  std::atomic<int> runs_after_fini{0};     // a pass ran while its plugin was finalised
  std::atomic<void (*)()> constructor_hook{nullptr};  // called from a static constructor, inside dlopen
};

KEEL_TEST_API pass_registry& passes();
KEEL_TEST_API plugin_events& events();
/** A registry nothing in the host touches: first created by a plugin's constructor, inside dlopen. */
KEEL_TEST_API pass_registry& late_passes();
KEEL_TEST_API bool late_passes_exists();

}  // namespace keel_test
