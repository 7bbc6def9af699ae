// SPDX-License-Identifier: Apache-2.0
// The memory layer's conformance tests (they use streams too): ownership of
// buffers, release in stream order, copies between kinds of memory, spans.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>
#include <string>

#include "keel/runtime/runtime.hpp"
#include "keel/testing/conformance/support.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/// @cond
namespace memory_tests {

template <class F>
void stream_device_buffers_copy_in_stream_order_a_moved_from_stream_is_empty() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
  stream a{dev}, b{dev};
  pinned_buffer xh{a, 64 * sizeof(float)}, yh{a, 64 * sizeof(float)};
  device_buffer x{a, 64 * sizeof(float)}, y{a, 64 * sizeof(float)};
  for (int i = 0; i < 64; ++i) xh.template data_as<float>()[i] = 3.0f;
  a.copy_async(x.span(), xh.span());
  a.copy_async(y.span(), x.span());  // device to device, in order after the upload
  a.copy_async(yh.span(), y.span());
  a.synchronize();
  CHECK(a.query());
  CHECK(yh.template data_as<float>()[0] == 3.0f);
  CHECK(yh.template data_as<float>()[63] == 3.0f);

  stream moved = std::move(b);
  CHECK_FALSE(b);
  CHECK(moved);
  KEEL_TESTING_REQUIRE_ERROR(b.synchronize(), errc::invalid_handle, "moved from");
  std::vector<float> back(64, 0.0f);
  moved.copy(back.data(), x.data(), 64 * sizeof(float), keel::copy_kind::device_to_host);  // blocking copy
  CHECK(back[63] == 3.0f);
}

template <class F>
void buffer_raii_checklist_every_field_after_moves() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
  stream s{dev};
  device_buffer empty;
  CHECK_FALSE(empty);
  KEEL_TESTING_REQUIRE_ERROR(empty.data(), errc::invalid_handle, "empty");
  device_buffer a{s, 256};
  const auto native = a.native_handle();
  void* const data = a.data();
  CHECK(a.size() == 256);
  CHECK(reinterpret_cast<std::uintptr_t>(data) % 64 == 0);
  const keel::memory_span span = a.span();
  CHECK(span.where == keel::memory_kind::device);
  CHECK(span.owner != nullptr);
  device_buffer b{std::move(a)};
  CHECK(b.native_handle() == native);
  CHECK(b.data() == data);
  CHECK(b.size() == 256);
  CHECK_FALSE(a);
  device_buffer c{s, 16};
  c = std::move(b);
  CHECK(c.native_handle() == native);
  CHECK(c.size() == 256);
  CHECK_FALSE(b);
  swap(b, c);
  CHECK(b.native_handle() == native);
  CHECK_FALSE(c);
  CHECK(b != c);
  CHECK(c == device_buffer{});
  const auto raw = b.release();
  CHECK_FALSE(b);
  auto adopted = device_buffer::from_native_handle(raw);
  CHECK(adopted.data() == data);
  adopted.reset();
  CHECK_FALSE(adopted);
  s.synchronize();
  pinned_buffer pinned{s, 8};
  CHECK(pinned.span().where == keel::memory_kind::pinned_host);
  CHECK(device_buffer{s, 8}.span().where == keel::memory_kind::device);
}

// ASYNC_RELEASE: on ACL today a release waits for the stream, which the gate holds.
template <class F>
void buffer_release_is_ordered_on_the_stream() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
  // A task blocked on a gate reads the buffer after the host released it:
  // the memory must still be there (ASan would report a use after free).
  stream s{dev};
  gate g;
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

template <class F>
void buffer_a_release_while_a_copy_from_it_may_still_be_queued() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
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

template <class F>
void buffer_copies_host_to_device_device_to_device_device_to_host() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
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

template <class F>
void buffer_a_span_keeps_the_allocation_alive_for_work_that_holds_it() {
  KEEL_TESTING_USING_STREAMS(F);
  KEEL_TESTING_USING_MEMORY(F);
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

}  // namespace memory_tests
/// @endcond

/**
 * @brief Registers the memory layer's tests for fixture F, each named "<test> - <suffix>";
 * F supplies the stream and memory layers. Tests that need asynchronous work are left out when
 * F::asynchronous is false. Call it before Catch2 runs (KEEL_BACKEND_CONFORMANCE does).
 */
template <class F>
void register_memory_tests(const std::string& suffix) {
  KEEL_TESTING_ADD(F, memory_tests::stream_device_buffers_copy_in_stream_order_a_moved_from_stream_is_empty,
      "stream: device buffers copy in stream order, a moved-from stream is empty", "[runtime][stream]");
  KEEL_TESTING_ADD(F, memory_tests::buffer_raii_checklist_every_field_after_moves,
      "buffer: RAII checklist, every field after moves", "[runtime][buffer]");
  KEEL_TESTING_ADD_ASYNC(F, memory_tests::buffer_release_is_ordered_on_the_stream,
      "buffer: release is ordered on the stream", "[runtime][buffer]");
  KEEL_TESTING_ADD(F, memory_tests::buffer_a_release_while_a_copy_from_it_may_still_be_queued,
      "buffer: a release while a copy from it may still be queued", "[runtime][buffer]");
  KEEL_TESTING_ADD(F, memory_tests::buffer_copies_host_to_device_device_to_device_device_to_host,
      "buffer: copies host to device, device to device, device to host", "[runtime][buffer]");
  KEEL_TESTING_ADD(F, memory_tests::buffer_a_span_keeps_the_allocation_alive_for_work_that_holds_it,
      "buffer: a span keeps the allocation alive for work that holds it", "[runtime][buffer]");
}

} KEEL_END_NAMESPACE  // namespace keel::testing
