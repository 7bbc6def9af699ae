// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the runtime tests.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "keel/runtime.hpp"

namespace keel_test {

inline keel::host::device& test_device() {
  static keel::host::device dev{keel::host::device_options{2, 16, 8}};
  return dev;
}

// A gate: tasks issued after gate.hold(stream) wait until gate.open().
class gate {
 public:
  void hold(keel::host::stream_ref s) {
    s.launch_host([this] {
      while (!open_.load(std::memory_order_acquire)) std::this_thread::yield();
    });
  }
  void open() { open_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> open_{false};
};

// Runs f and returns the keel::error it threw, as text (or "no error").
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return std::string(e.what()) + " [" + e.code().message() + "]";
  }
  return "no error";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace keel_test

#define KEEL_REQUIRE_ERROR(expr, expected_code, fragment)                                  \
  do {                                                                           \
    bool keel_thrown_ = false;                                                   \
    try {                                                                        \
      expr;                                                                      \
    } catch (const keel::error& keel_e_) {                                       \
      keel_thrown_ = true;                                                       \
      INFO(keel_e_.what());                                                      \
      CHECK(keel_e_.code() == (expected_code));                                           \
      CHECK(std::string(keel_e_.what()).find(fragment) != std::string::npos);    \
    }                                                                            \
    CHECK(keel_thrown_);                                                         \
  } while (false)
