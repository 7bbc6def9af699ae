// SPDX-License-Identifier: Apache-2.0
// Device and pinned buffers on every backend (see test_support.hpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <vector>

#include "test_support.hpp"

using keel::errc;

KEEL_BACKEND_TEST("buffer: RAII checklist, every field after moves", "[runtime][buffer]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer empty;
  CHECK_FALSE(empty);
  KEEL_REQUIRE_ERROR(empty.data(), errc::invalid_handle, "empty");
  device_buffer a{s, 256};
  auto* const native = a.get();
  void* const data = a.data();
  CHECK(a.size() == 256);
  CHECK(reinterpret_cast<std::uintptr_t>(data) % 64 == 0);
  const keel::memory_span span = a.span();
  CHECK(span.where == keel::memory_kind::device);
  CHECK(span.owner != nullptr);
  device_buffer b{std::move(a)};
  CHECK(b.get() == native);
  CHECK(b.data() == data);
  CHECK(b.size() == 256);
  CHECK_FALSE(a);
  device_buffer c{s, 16};
  c = std::move(b);
  CHECK(c.get() == native);
  CHECK(c.size() == 256);
  CHECK_FALSE(b);
  swap(b, c);
  CHECK(b.get() == native);
  CHECK_FALSE(c);
  auto* raw = b.release();
  CHECK_FALSE(b);
  auto adopted = device_buffer::adopt(raw);
  CHECK(adopted.data() == data);
  adopted.reset();
  CHECK_FALSE(adopted);
  s.synchronize();
  pinned_buffer pinned{s, 8};
  CHECK(pinned.span().where == keel::memory_kind::pinned_host);
  CHECK(device_buffer{s, 8}.span().where == keel::memory_kind::device);
}

// ASYNC_RELEASE: on ACL today a release waits for the stream, which the gate holds.
KEEL_BACKEND_TEST("buffer: release is ordered on the stream", "[runtime][buffer]") {
  KEEL_USING_BACKEND(TestType);
  // A task blocked on a gate reads the buffer after the host released it:
  // the memory must still be there (ASan would report a use after free).
  stream s{dev};
  keel_test::gate g;
  g.hold(s.ref());
  int seen = 0;
  {
    device_buffer buf{s, sizeof(int)};
    int* p = buf.template data_as<int>();
    *p = 1234;
    s.launch_host([p, &seen] { seen = *p; });
  }  // released on the host here
  g.open();
  s.synchronize();
  CHECK(seen == 1234);
}

KEEL_BACKEND_TEST("buffer: a release while a copy from it may still be queued", "[runtime][buffer]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer d{s, 1024};
  pinned_buffer h{s, 1024};
  std::memset(h.data(), 5, 1024);
  s.copy_async(d.span(), h.span());
  std::vector<unsigned char> back(1024, 0);
  s.copy_async(keel::host_span(back.data(), 1024), d.span());
  d.reset();
  s.synchronize();
  CHECK(back[1023] == 5);
}

KEEL_BACKEND_TEST("buffer: copies host to device, device to device, device to host", "[runtime][buffer]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  const std::size_t n = 1024, bytes = n * sizeof(float);
  std::vector<float> in(n), out(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  pinned_buffer staging{s, bytes};
  device_buffer d1{s, bytes}, d2{s, bytes};
  std::memcpy(staging.data(), in.data(), bytes);
  s.copy_async(d1.span(), staging.span());                      // host to device
  s.copy_async(d2.span(), d1.span());                           // device to device
  s.copy_async(keel::host_span(out.data(), bytes), d2.span());  // device to host
  s.synchronize();
  CHECK(out == in);
}

KEEL_BACKEND_TEST("buffer: a span keeps the allocation alive for work that holds it", "[runtime][buffer]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel::memory_span span;
  {
    device_buffer buf{s, sizeof(int)};
    *buf.template data_as<int>() = 7;
    span = buf.span();
  }
  s.synchronize();  // the stream has passed the release; the span still owns the memory
  CHECK(*static_cast<int*>(span.data) == 7);
}
