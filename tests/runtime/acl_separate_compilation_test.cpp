// SPDX-License-Identifier: Apache-2.0
// Built with KEEL_SEPARATE_COMPILATION and linked with keel::acl_runtime: the
// ACL backend's checked layer and status category come from
// libkeel_acl_runtime.so, declared but not instantiated or defined by the
// headers, and behave as they do header-only (over keel's ACL emulation).
#include <catch2/catch.hpp>

#include <string>

#include "keel/acl/backend.hpp"

#include "../support/acl_device.hpp"
#include "../support/symbols.hpp"

#if !defined(KEEL_SEPARATE_COMPILATION)
#error "this test is built with KEEL_SEPARATE_COMPILATION"
#endif

namespace {

using keel_test::address_of;
using keel_test::defined_in;

int reports = 0;
void record(std::error_code, const char*, const char*) noexcept { ++reports; }

}  // namespace

TEST_CASE("acl separate compilation: the checked layer, the native calls and the status paths are defined in keel_acl_runtime",
          "[acl][separate]") {
  using checked = keel::checked::backend<keel::acl::detail::native>;
  void (*capture_begin)(keel::acl::detail::stream_box*, keel::capture_mode) = &checked::capture_begin;
  void (*throw_status)(keel::acl::status, const char*, const std::string&) = &keel::acl::detail::throw_status;
  CHECK(defined_in(address_of(capture_begin)).find("libkeel_acl_runtime") != std::string::npos);
  CHECK(defined_in(address_of(throw_status)).find("libkeel_acl_runtime") != std::string::npos);
  // The native calls under it (keel/acl/impl/*.ipp) are the library's too, not compiled in this TU.
  keel::acl::detail::stream_box* (*create)(keel::acl::device&) = &keel::acl::detail::stream_calls::create_stream;
  void (*synchronize)(keel::acl::detail::stream_box*) = &keel::acl::detail::stream_calls::synchronize;
  void (*record)(keel::acl::detail::event_box*, keel::acl::detail::stream_box*) = &keel::acl::detail::event_calls::record;
  CHECK(defined_in(address_of(create)).find("libkeel_acl_runtime") != std::string::npos);
  CHECK(defined_in(address_of(synchronize)).find("libkeel_acl_runtime") != std::string::npos);
  CHECK(defined_in(address_of(record)).find("libkeel_acl_runtime") != std::string::npos);
  // (The status category's members are the library's too; its vtable, data,
  // is copied into a position-independent executable, so dladdr cannot show it.)
}

TEST_CASE("acl separate compilation: streams, captures and statuses behave as header-only", "[acl][separate]") {
  int runs = 0;
  keel::acl::stream s{keel_test::emulation_device()};
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    s.launch_host([&runs] { ++runs; });
    m = capture.end();
  }
  m.execute(s);
  m.execute(s);
  s.synchronize();
  CHECK(runs == 2);

  // A rule of the checked layer, broken: the library's instantiation throws keel's error.
  keel::acl::capture_scope capture{s};
  CHECK_THROWS_MATCHES(s.synchronize(), keel::error, Catch::Matchers::Predicate<keel::error>([](const keel::error& e) {
                         return e.code() == keel::errc::capture_violation;
                       }));
  capture.cancel();

  // A failed ACL status: thrown by the library's throw_status with the category's text.
  try {
    keel::acl::check(100000, "aclrtTest");
    FAIL("no exception");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::acl::make_status_code(100000));
    CHECK(e.code() == keel::errc::invalid_parameter);
    CHECK(std::string(e.api()) == "aclrtTest");
    CHECK(e.code().message().find("ACL_ERROR_INVALID_PARAM") != std::string::npos);
  }

  // A scope left without end() is cancelled and reported through the handler.
  reports = 0;
  const keel::error_handler previous = keel::set_error_handler(&record);
  { keel::acl::capture_scope forgotten{s}; }
  keel::set_error_handler(previous);
  CHECK(reports == 1);
}
