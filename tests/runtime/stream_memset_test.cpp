// SPDX-License-Identifier: Apache-2.0
// memset_async on a stream (aclrtMemsetAsync) on every backend ("... - host",
// "... - acl"): in stream order, over a span or raw memory, with its
// arguments checked before anything is issued; captured as a memset task
// that every replay runs; refused in a task group and in an update, as a
// copy is.
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstring>

#include "test_support.hpp"

using keel::errc;

namespace {
constexpr std::size_t memset_bytes = 16;

// Reads the device buffer back through the stream (the host reads device memory only through copies).
template <class Stream, class Buffer>
std::array<unsigned char, memset_bytes> read_back(Stream& s, Buffer& buffer) {
  std::array<unsigned char, memset_bytes> out{};
  s.copy_async(keel::host_span(out.data(), out.size()), buffer.span());
  s.synchronize();
  return out;
}
template <class Stream, class Buffer>
void fill(Stream& s, Buffer& buffer, unsigned char value) {
  std::array<unsigned char, memset_bytes> in{};
  in.fill(value);
  s.copy_async(buffer.span(), keel::host_span(in.data(), in.size()));
  s.synchronize();
}
}  // namespace

KEEL_BACKEND_TEST("stream: memset_async sets bytes in stream order, over a span or raw memory",
                  "[runtime][stream][memset]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer buffer{s, memset_bytes};
  fill(s, buffer, 0x11);
  s.memset_async(buffer.span(), 0x5A, 4);  // the first four bytes
  auto bytes = read_back(s, buffer);
  for (std::size_t i = 0; i < memset_bytes; ++i) CHECK(bytes[i] == (i < 4 ? 0x5A : 0x11));
  s.memset_async(buffer.span(), 0x100 + 0x7F);  // the whole span; the value's low byte, as std::memset
  bytes = read_back(s, buffer);
  for (unsigned char b : bytes) CHECK(b == 0x7F);
  // After earlier work on the stream: the copy lands first, the memset over it.
  std::array<unsigned char, memset_bytes> in{};
  in.fill(0x22);
  s.copy_async(buffer.span(), keel::host_span(in.data(), in.size()));
  s.memset_async(buffer.data(), 0, 8);
  bytes = read_back(s, buffer);
  for (std::size_t i = 0; i < memset_bytes; ++i) CHECK(bytes[i] == (i < 8 ? 0 : 0x22));
}

KEEL_BACKEND_TEST("stream: memset_async refuses a null destination and a count past the span, issuing nothing",
                  "[runtime][stream][memset]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer buffer{s, memset_bytes};
  fill(s, buffer, 0x33);
  KEEL_REQUIRE_ERROR(s.memset_async(buffer.span(), 0, memset_bytes + 1), errc::invalid_parameter,
                     "keel::stream::memset_async: the count (17 bytes) exceeds the destination (16 bytes)");
  KEEL_REQUIRE_ERROR(s.memset_async(keel::memory_span{}, 0, 0), errc::null_parameter, "the destination is null");
  KEEL_REQUIRE_ERROR(s.memset_async(static_cast<void*>(nullptr), 0, 4), errc::null_parameter,
                     "the destination is null");
  stream empty;
  KEEL_REQUIRE_ERROR(empty.memset_async(buffer.span(), 0, 4), errc::invalid_handle, "keel::stream::memset_async");
  const auto bytes = read_back(s, buffer);
  for (unsigned char b : bytes) CHECK(b == 0x33);  // nothing ran
}

KEEL_BACKEND_TEST("stream: a captured memset is a task of the model that every replay runs", "[runtime][stream][memset]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer buffer{s, memset_bytes};
  fill(s, buffer, 0x44);
  model m;
  {
    capture_scope capture{s};
    s.memset_async(buffer.span(), 0x0C, 12);
    m = capture.end();
  }
  CHECK(m.task_count() == 1);
  // Captured, not run.
  auto bytes = read_back(s, buffer);
  for (unsigned char b : bytes) CHECK(b == 0x44);
  const std::vector<keel::task_info> tasks = m.tasks();
  REQUIRE(tasks.size() == 1);
  // CANN has no task type for a memset: ACL reports it as ACL_MODEL_RI_TASK_DEFAULT.
  CHECK(tasks[0].type == (TestType::is_host ? keel::task_type::memset : keel::task_type::other));
  for (int replay = 0; replay < 2; ++replay) {
    fill(s, buffer, 0x55);
    m.execute(s);
    bytes = read_back(s, buffer);
    for (std::size_t i = 0; i < memset_bytes; ++i) CHECK(bytes[i] == (i < 12 ? 0x0C : 0x55));
  }
}

KEEL_BACKEND_TEST("stream: a memset is refused in a task group and in an update, which take operator launches only",
                  "[runtime][stream][memset]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  device_buffer buffer{s, memset_bytes};
  float out = 0, tmp = 1, other = 1;
  model m;
  task_group g;
  {
    capture_scope capture{s};
    {
      task_group_scope mark{s};
      KEEL_REQUIRE_ERROR(s.memset_async(buffer.span(), 0, 4), errc::capture_violation,
                         "only operator launches may be marked into a task group, not a memset");
      TestType::axpy(s, &out, &tmp, &other, 1.0f);
      g = mark.end();
    }
    m = capture.end();
  }
  CHECK(m.task_count() == 1);
  stream u{dev};
  {
    update_scope update{u, g};
    KEEL_REQUIRE_ERROR(u.memset_async(buffer.span(), 0, 4), errc::update_violation, "not a memset");
    update.cancel();
  }
  m.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);
}
