// SPDX-License-Identifier: Apache-2.0
// keel's backend conformance kit: the backend-generic suites keel runs on its
// own backends, for a user's Catch2 (2.x) test to run on theirs, layer by
// layer. Target keel::testing (link Catch2 yourself).
//
//   struct my_fixture : keel::testing::fixture_defaults { ... };   // see fixture_defaults
//   KEEL_BACKEND_CONFORMANCE(my_fixture, "mine", keel::testing::stream_layer, keel::testing::event_layer);
//
// registers "stream: ... - mine", "event: ... - mine", ... with Catch2.
#pragma once

#include <string>

#include "keel/testing/conformance/capture.hpp"
#include "keel/testing/conformance/event.hpp"
#include "keel/testing/conformance/memory.hpp"
#include "keel/testing/conformance/stream.hpp"
#include "keel/testing/conformance/support.hpp"
#include "keel/testing/conformance/task_group.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/** @brief The stream layer's suite (streams only). */
struct stream_layer {
  /// Registers the suite for fixture F, its tests named "<name> - <suffix>".
  template <class F>
  static void register_tests(const std::string& suffix) {
    register_stream_tests<F>(suffix);
  }
};
/** @brief The event layer's suite (streams and events). */
struct event_layer {
  /// Registers the suite for fixture F, its tests named "<name> - <suffix>".
  template <class F>
  static void register_tests(const std::string& suffix) {
    register_event_tests<F>(suffix);
  }
};
/** @brief The memory layer's suite (streams and buffers). */
struct memory_layer {
  /// Registers the suite for fixture F, its tests named "<name> - <suffix>".
  template <class F>
  static void register_tests(const std::string& suffix) {
    register_memory_tests<F>(suffix);
  }
};
/** @brief The capture layer's suite (uses every layer). */
struct capture_layer {
  /// Registers the suite for fixture F, its tests named "<name> - <suffix>".
  template <class F>
  static void register_tests(const std::string& suffix) {
    register_capture_tests<F>(suffix);
  }
};
/** @brief The task-group layer's suite, with the stress test (uses every layer). */
struct task_group_layer {
  /// Registers the suite for fixture F, its tests named "<name> - <suffix>".
  template <class F>
  static void register_tests(const std::string& suffix) {
    register_task_group_tests<F>(suffix);
  }
};

/**
 * @brief Registers the suites of @p Layers for fixture F, their tests named
 * "<test> - <suffix>". Returns true (for a static initialiser).
 * Throws: nothing (Catch2 reports a failed registration when it starts).
 */
template <class F, class... Layers>
bool register_conformance(const std::string& suffix) {
  (Layers::template register_tests<F>(suffix), ...);
  return true;
}

/**
 * @brief Registers every layer's suite for fixture F (a backend with every
 * layer: is_runtime_backend_v).
 */
template <class F>
bool register_full_conformance(const std::string& suffix) {
  return register_conformance<F, stream_layer, event_layer, memory_layer, capture_layer, task_group_layer>(suffix);
}

} KEEL_END_NAMESPACE  // namespace keel::testing

/// @cond
#define KEEL_TESTING_CAT2(a, b) a##b
#define KEEL_TESTING_CAT(a, b) KEEL_TESTING_CAT2(a, b)
/// @endcond

/**
 * @brief At namespace scope in one test source: registers the given layers'
 * suites (keel::testing::stream_layer, ...) for fixture F, named "<test> - <suffix>".
 */
#define KEEL_BACKEND_CONFORMANCE(F, suffix, ...)                                    \
  [[maybe_unused]] static const bool KEEL_TESTING_CAT(keel_conformance_, __COUNTER__) = \
      ::keel::testing::register_conformance<F, __VA_ARGS__>(suffix)

/** @brief At namespace scope: registers every layer's suite for fixture F. */
#define KEEL_BACKEND_FULL_CONFORMANCE(F, suffix)                                    \
  [[maybe_unused]] static const bool KEEL_TESTING_CAT(keel_conformance_, __COUNTER__) = \
      ::keel::testing::register_full_conformance<F>(suffix)
