// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

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

namespace {
// Streams only: the stream layer holds, every other layer and the whole requirement do not.
struct streams_only {
  using device_type = keel::host::device;
  using stream_handle = keel::host::backend::stream_handle;
  using launch_context = keel::host::launch_context;
  static stream_handle create_stream(device_type& d) { return keel::host::backend::create_stream(d); }
  static void destroy_stream(stream_handle s) noexcept { keel::host::backend::destroy_stream(s); }
  static device_type& device_of(stream_handle s) noexcept { return keel::host::backend::device_of(s); }
  static std::uint64_t id_of(stream_handle s) noexcept { return keel::host::backend::id_of(s); }
  static void synchronize(stream_handle s) { keel::host::backend::synchronize(s); }
  static bool query(stream_handle s) { return keel::host::backend::query(s); }
  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    keel::host::backend::launch_host(s, std::forward<F>(f));
  }
  template <class F>
  static void launch_kernel(stream_handle s, keel::kernel_kind k, F&& f) {
    keel::host::backend::launch_kernel(s, k, std::forward<F>(f));
  }
  static void copy_async(stream_handle s, void* d, const void* src, std::size_t n, keel::copy_kind k,
                         std::shared_ptr<void> kd, std::shared_ptr<void> ks) {
    keel::host::backend::copy_async(s, d, src, n, k, std::move(kd), std::move(ks));
  }
  static void copy(stream_handle s, void* d, const void* src, std::size_t n, keel::copy_kind k) {
    keel::host::backend::copy(s, d, src, n, k);
  }
  static void synchronize_device(device_type& d) { keel::host::backend::synchronize_device(d); }
};
struct cannot_cancel_updates : keel::host::backend {
  static constexpr bool abandon_restores_group = false;
};
}  // namespace

TEST_CASE("backend: each layer is a trait of its own, the requirement is every layer", "[runtime][backend]") {
  STATIC_REQUIRE(keel::is_stream_backend_v<keel::host::backend>);
  STATIC_REQUIRE(keel::is_event_backend_v<keel::host::backend>);
  STATIC_REQUIRE(keel::is_memory_backend_v<keel::host::backend>);
  STATIC_REQUIRE(keel::is_capture_backend_v<keel::host::backend>);
  STATIC_REQUIRE(keel::is_task_group_backend_v<keel::host::backend>);
  STATIC_REQUIRE(keel::is_stream_backend_v<streams_only>);
  STATIC_REQUIRE_FALSE(keel::is_event_backend_v<streams_only>);
  STATIC_REQUIRE_FALSE(keel::is_memory_backend_v<streams_only>);
  STATIC_REQUIRE_FALSE(keel::is_capture_backend_v<streams_only>);
  STATIC_REQUIRE_FALSE(keel::is_runtime_backend_v<streams_only>);
  STATIC_REQUIRE_FALSE(keel::is_stream_backend_v<throwing_destroy>);  // the stream layer's destroy must be noexcept
  STATIC_REQUIRE(keel::is_event_backend_v<throwing_destroy> == false);
  STATIC_REQUIRE(keel::is_capture_backend_v<not_a_backend> == false);
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
  STATIC_REQUIRE(keel::stream_backend<streams_only>);
  STATIC_REQUIRE_FALSE(keel::capture_backend<streams_only>);
#endif
  // A stream of a backend without the capture layer says it is not capturing.
  keel::basic_stream<streams_only> s{keel::host::default_device()};
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);
  CHECK_FALSE(s.is_capturing());
}

TEST_CASE("backend: optional behaviour is a query with a default", "[runtime][backend]") {
  STATIC_REQUIRE(keel::abandon_restores_group_v<keel::host::backend>);
  STATIC_REQUIRE_FALSE(keel::abandon_restores_group_v<cannot_cancel_updates>);
  STATIC_REQUIRE(keel::abandon_restores_group_v<streams_only>);
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
