// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "keel/runtime.hpp"

namespace {
struct not_a_backend {
  using device_type = int;
};
// A backend whose destroy may throw is refused: destructors must not throw.
struct throwing_destroy : keel::host::backend {
  static void destroy_stream(stream_handle) {}
};
}  // namespace

TEST_CASE("backend: the host backend models the requirement", "[runtime][backend]") {
  STATIC_REQUIRE(keel::is_runtime_backend_v<keel::host::backend>);
  STATIC_REQUIRE_FALSE(keel::is_runtime_backend_v<not_a_backend>);
  STATIC_REQUIRE_FALSE(keel::is_runtime_backend_v<throwing_destroy>);
  STATIC_REQUIRE_FALSE(keel::is_runtime_backend_v<int>);
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
  STATIC_REQUIRE(keel::runtime_backend<keel::host::backend>);
  STATIC_REQUIRE_FALSE(keel::runtime_backend<not_a_backend>);
#endif
}

TEST_CASE("backend: kernel kinds compare by name", "[runtime][backend]") {
  constexpr keel::kernel_kind add{"add"}, add2{"add"}, mul{"mul"};
  STATIC_REQUIRE(add == add2);
  STATIC_REQUIRE(add != mul);
  STATIC_REQUIRE(keel::copy_direction(keel::memory_kind::device, keel::memory_kind::pinned_host) ==
                 keel::copy_kind::host_to_device);
  STATIC_REQUIRE(keel::copy_direction(keel::memory_kind::pageable_host, keel::memory_kind::device) ==
                 keel::copy_kind::device_to_host);
  STATIC_REQUIRE(keel::copy_direction(keel::memory_kind::device, keel::memory_kind::device) ==
                 keel::copy_kind::device_to_device);
  CHECK(keel::to_string(keel::capture_mode::thread_local_) == "thread-local");
}
