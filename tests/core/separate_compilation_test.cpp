// SPDX-License-Identifier: Apache-2.0
// Built with KEEL_SEPARATE_COMPILATION and linked with keel::runtime: keel's
// out-of-line functions (the throw and report paths) come from
// libkeel_runtime.so, declared but not defined by the headers, and behave
// as they do header-only.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string>

#include "keel/core/error.hpp"
#include "keel/host/host.hpp"

#include "../support/symbols.hpp"

#if !defined(KEEL_SEPARATE_COMPILATION)
#error "this test is built with KEEL_SEPARATE_COMPILATION"
#endif

namespace {

using keel_test::address_of;
using keel_test::defined_in;

std::atomic<int> reports{0};
std::string last_message;
void record(std::error_code, const char*, const char* message) noexcept {
  ++reports;
  try {
    last_message = message;
  } catch (...) {
  }
}

}  // namespace

TEST_CASE("separate compilation: the throw and report paths are defined in keel_runtime", "[core][separate]") {
  void (*throw_literal)(keel::errc, const char*, const char*) = &keel::throw_error;
  void (*throw_string)(keel::errc, const char*, const std::string&) = &keel::throw_error;
  void (*report)(const char*) noexcept = &keel::report_current_exception;
  CHECK(defined_in(address_of(throw_literal)).find("libkeel_runtime") != std::string::npos);
  CHECK(defined_in(address_of(throw_string)).find("libkeel_runtime") != std::string::npos);
  CHECK(defined_in(address_of(report)).find("libkeel_runtime") != std::string::npos);
  CHECK(defined_in(address_of(&keel::detail::throw_empty)).find("libkeel_runtime") != std::string::npos);
}

TEST_CASE("separate compilation: throw_error throws keel::error naming the API and the rule", "[core][separate]") {
  try {
    keel::throw_error(keel::errc::invalid_parameter, "keel::test", std::string("rule ") + "broken");
    FAIL("no exception");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::invalid_parameter);
    CHECK(std::string(e.api()) == "keel::test");
    CHECK(std::string(e.rule()) == "rule broken");
  }
  CHECK_THROWS_WITH(keel::throw_error(keel::errc::timeout, "a", "b"), Catch::Matchers::StartsWith("a: b"));
}

TEST_CASE("separate compilation: handles and scopes throw and report through the library", "[core][separate]") {
  keel::host::stream empty;
  try {
    empty.synchronize();
    FAIL("no exception");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::invalid_handle);
  }
  reports = 0;
  const keel::error_handler previous = keel::set_error_handler(&record);
  {
    keel::host::stream s{keel::host::default_device()};
    keel::host::capture_scope forgotten{s};
  }
  try {
    throw std::runtime_error("reported");
  } catch (...) {
    keel::report_current_exception("keel::test");
  }
  keel::set_error_handler(previous);
  CHECK(reports == 2);
  CHECK(last_message == "reported");
}
