// SPDX-License-Identifier: Apache-2.0
// Shared by the plugin tests: plugin paths, event resets, and a capture of
// what keel reports to its error handler.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/plugin/library_lease.hpp"
#include "pass_api.hpp"

namespace keel_test {

inline const std::string passes_path = KEEL_TEST_PASSES_PATH;
inline const std::string passes_nodelete_path = KEEL_TEST_PASSES_NODELETE_PATH;
inline const std::string init_fails_path = KEEL_TEST_INIT_FAILS_PATH;
inline const std::string no_entry_path = KEEL_TEST_NO_ENTRY_PATH;
inline const std::string threaded_path = KEEL_TEST_THREADED_PATH;
inline const std::string entry_point_path = KEEL_TEST_ENTRY_POINT_PATH;
inline const std::string plain_path = KEEL_TEST_PLAIN_PATH;
inline const std::string late_registry_path = KEEL_TEST_LATE_REGISTRY_PATH;
inline const std::string not_a_library_path = KEEL_TEST_NOT_A_LIBRARY_PATH;

/** The process's library loader, which every lease in these tests goes through. */
inline keel::library_loader& loader() { return keel::library_loader::global(); }

/** @p path with every symbolic link resolved, as the loader reports its libraries. */
inline std::string canonical(const std::string& path) { return std::filesystem::canonical(path).string(); }

inline void reset_events() {
  auto& e = events();
  e.inits = 0;
  e.finis = 0;
  e.constructions = 0;
  e.register_calls = 0;
  e.init_status = 0;
  e.fini_status = 0;
  e.init_throws = false;
  e.runs_after_fini = 0;
  e.constructor_hook = nullptr;
}

/** Installs an error handler that records reports, and restores the previous one. */
class captured_reports {
 public:
  struct report {
    std::error_code code;
    std::string api;
    std::string message;
  };
  captured_reports() : previous_(keel::set_error_handler(&record)) { reports().clear(); }
  ~captured_reports() { keel::set_error_handler(previous_); }
  captured_reports(const captured_reports&) = delete;
  captured_reports& operator=(const captured_reports&) = delete;

  std::vector<report> take() {
    std::lock_guard<std::mutex> lock(mutex());
    return std::move(reports());
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<report>& reports() {
    static std::vector<report> r;
    return r;
  }
  static void record(std::error_code code, const char* api, const char* message) noexcept {
    std::lock_guard<std::mutex> lock(mutex());
    reports().push_back({code, api, message});
  }
  keel::error_handler previous_;
};

}  // namespace keel_test
