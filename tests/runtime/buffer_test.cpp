// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

TEST_CASE("buffer: RAII checklist, every field after moves", "[runtime][buffer]") {
  keel::host::stream s{test_device()};
  keel::host::device_buffer empty;
  CHECK_FALSE(empty);
  KEEL_REQUIRE_ERROR(empty.data(), errc::invalid_handle, "empty");
  keel::host::device_buffer a{s, 256};
  auto* const native = a.get();
  void* const data = a.data();
  CHECK(a.size() == 256);
  CHECK(reinterpret_cast<std::uintptr_t>(data) % 64 == 0);
  keel::host::device_buffer b{std::move(a)};
  CHECK(b.get() == native);
  CHECK(b.data() == data);
  CHECK(b.size() == 256);
  CHECK_FALSE(a);
  keel::host::device_buffer c{s, 16};
  c = std::move(b);
  CHECK(c.get() == native);
  CHECK(c.size() == 256);
  CHECK_FALSE(b);
  swap(b, c);
  CHECK(b.get() == native);
  CHECK_FALSE(c);
  auto* raw = b.release();
  CHECK_FALSE(b);
  auto adopted = keel::host::device_buffer::adopt(raw);
  CHECK(adopted.data() == data);
  adopted.reset();
  CHECK_FALSE(adopted);
  s.synchronize();
  keel::host::pinned_buffer pinned{s, 8};
  CHECK(pinned.span().where == keel::memory_kind::pinned_host);
  CHECK(keel::host::device_buffer{s, 8}.span().where == keel::memory_kind::device);
}

TEST_CASE("buffer: release is ordered on the stream", "[runtime][buffer]") {
  // A task blocked on a gate reads the buffer after the host released it:
  // the memory must still be there (ASan would report a use after free).
  keel::host::stream s{test_device()};
  keel_test::gate g;
  g.hold(s);
  int seen = 0;
  {
    keel::host::device_buffer buf{s, sizeof(int)};
    int* p = buf.data_as<int>();
    *p = 1234;
    s.launch_host([p, &seen] { seen = *p; });
  }  // released on the host here
  g.open();
  s.synchronize();
  CHECK(seen == 1234);
}

TEST_CASE("buffer: copies host to device, device to device, device to host", "[runtime][buffer]") {
  keel::host::stream s{test_device()};
  const std::size_t n = 1024, bytes = n * sizeof(float);
  std::vector<float> in(n), out(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  keel::host::pinned_buffer staging{s, bytes};
  keel::host::device_buffer d1{s, bytes}, d2{s, bytes};
  std::memcpy(staging.data(), in.data(), bytes);
  s.copy_async(d1.span(), staging.span());                   // host to device
  s.copy_async(d2.span(), d1.span());                        // device to device
  s.copy_async(keel::host_span(out.data(), bytes), d2.span());  // device to host
  s.synchronize();
  CHECK(out == in);
}

TEST_CASE("buffer: a span keeps the allocation alive for work that holds it", "[runtime][buffer]") {
  keel::host::stream s{test_device()};
  keel::memory_span span;
  {
    keel::host::device_buffer buf{s, sizeof(int)};
    *buf.data_as<int>() = 7;
    span = buf.span();
  }
  s.synchronize();  // the stream has passed the release; the span still owns the memory
  CHECK(*static_cast<int*>(span.data) == 7);
}
