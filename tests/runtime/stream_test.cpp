// SPDX-License-Identifier: Apache-2.0
// Streams on every backend (see test_support.hpp); what only the host
// backend has (launch contexts, its own texts) is in host_test.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;

KEEL_BACKEND_TEST("stream: RAII checklist, every field after moves", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream empty;
  CHECK_FALSE(empty);
  CHECK(empty.get() == nullptr);

  stream a{dev};
  REQUIRE(a);
  auto* const native_a = a.get();
  CHECK(a.native_handle() == native_a);
  CHECK(a.ref().native_handle() == native_a);

  SECTION("move construction leaves the source empty") {
    stream b{std::move(a)};
    CHECK(b.get() == native_a);
    CHECK_FALSE(a);
    CHECK(a.get() == nullptr);
    KEEL_REQUIRE_ERROR(a.synchronize(), errc::invalid_handle, "moved from");
    KEEL_REQUIRE_ERROR(a.launch_host([] {}), errc::invalid_handle, "empty");
  }
  SECTION("move assignment destroys the old stream and takes the new") {
    stream b{dev};
    int ran = 0;
    b.launch_host([&] { ++ran; });
    b = std::move(a);  // the old b waits for its work when destroyed
    CHECK(ran == 1);
    CHECK(b.get() == native_a);
    CHECK_FALSE(a);
  }
  SECTION("self-move keeps the stream") {
    stream& self = a;
    a = std::move(self);
    CHECK(a.get() == native_a);
  }
  SECTION("swap exchanges both handles") {
    stream b{dev};
    auto* const native_b = b.get();
    swap(a, b);
    CHECK(a.get() == native_b);
    CHECK(b.get() == native_a);
  }
  SECTION("release hands ownership over; adopt takes it back") {
    auto* raw = a.release();
    CHECK_FALSE(a);
    CHECK(raw == native_a);
    auto again = stream::adopt(raw);
    CHECK(again.get() == native_a);
    KEEL_REQUIRE_ERROR(stream::adopt(nullptr), errc::null_parameter, "null stream");
  }
  SECTION("reset and close empty the handle") {
    a.reset();
    CHECK_FALSE(a);
    stream c{dev};
    c.close();
    CHECK_FALSE(c);
  }
}

KEEL_BACKEND_TEST("stream: a ref views without owning and adopts the backend's stream handle", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream owner{dev};
  auto ref = stream_ref::adopt(owner.get());
  CHECK(ref == owner.ref());
  int ran = 0;
  ref.launch_host([&] { ++ran; });
  ref.synchronize();
  CHECK(ran == 1);
  stream_ref empty;
  CHECK_FALSE(empty);
  KEEL_REQUIRE_ERROR(empty.synchronize(), errc::invalid_handle, "empty");
  KEEL_REQUIRE_ERROR(stream_ref::adopt(nullptr), errc::null_parameter, "null stream");
  CHECK(ref.id() == owner.id());
  CHECK(&ref.device() == &dev);
  stream other{dev};
  CHECK(other.id() != owner.id());
}

KEEL_BACKEND_TEST("stream: tasks run in order, asynchronously, from any thread", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel_test::gate g;
  g.hold(s.ref());
  std::vector<int> order;
  for (int i = 0; i < 1500; ++i) s.launch_host([&order, i] { order.push_back(i); });
  CHECK_FALSE(s.query());  // enqueue returned before the work ran
  CHECK(order.empty());
  g.open();
  s.synchronize();
  REQUIRE(order.size() == 1500);
  for (int i = 0; i < 1500; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
  CHECK(s.query());

  // Several producers: each one's tasks stay in its order.
  std::vector<std::vector<int>> seen(3);
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 2000; ++i) s.launch_host([&seen, p, i] { seen[static_cast<std::size_t>(p)].push_back(i); });
    });
  for (auto& t : producers) t.join();
  s.synchronize();
  for (auto& v : seen) {
    REQUIRE(v.size() == 2000);
    for (int i = 0; i < 2000; ++i) REQUIRE(v[static_cast<std::size_t>(i)] == i);
  }
}

KEEL_BACKEND_TEST("stream: large callables are boxed and still run once", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  std::array<double, 32> big{};
  big[31] = 7;
  double sum = 0;
  for (int i = 0; i < 100; ++i) s.launch_host([big, &sum] { sum += big[31]; });
  s.synchronize();
  CHECK(sum == 700);
}

KEEL_BACKEND_TEST("stream: a kernel launch carries its arguments by value", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  float out = 0, tmp = 1.0f, other = 2.0f, alpha = 3.0f;
  TestType::axpy(s, &out, &tmp, &other, alpha);
  alpha = 100.0f;  // the launch holds its own copy
  s.synchronize();
  CHECK(out == 7.0f);
}

KEEL_BACKEND_TEST("stream: a failing host callable puts the stream in its error state", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel_test::gate g;
  g.hold(s.ref());
  int after = 0;
  s.launch_host([] { throw std::runtime_error("kernel exploded"); });
  s.launch_host([&] { ++after; });  // skipped: issued after the failure, before the report
  event e{dev};
  e.record(s);  // control work still runs, so waiters elsewhere never deadlock
  g.open();
  e.synchronize();
  KEEL_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");
  KEEL_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");  // query keeps the state
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "kernel exploded");
  CHECK(after == 0);
  // synchronize cleared the state: new work runs again.
  s.launch_host([&] { ++after; });
  s.synchronize();
  CHECK(after == 1);
  CHECK(s.query());
}

KEEL_BACKEND_TEST("stream: a task failure on a destroyed stream goes to the error handler", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  static std::atomic<int> reports{0};
  auto previous = keel::set_error_handler([](std::error_code, const char*, const char*) noexcept { ++reports; });
  reports = 0;
  {
    stream s{dev};
    s.launch_host([] { throw std::runtime_error("lost"); });
  }
  keel::set_error_handler(previous);
  CHECK(reports == 1);
}

KEEL_BACKEND_TEST("stream: asynchronous and blocking copies", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  std::vector<int> src(100), dst(100, 0);
  for (int i = 0; i < 100; ++i) src[static_cast<std::size_t>(i)] = i;
  s.copy_async(dst.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  s.synchronize();
  CHECK(dst == src);
  std::vector<int> dst2(100, 0);
  s.copy(dst2.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  CHECK(dst2 == src);
  KEEL_REQUIRE_ERROR(s.copy_async(keel::host_span(dst.data(), 4), keel::host_span(src.data(), 8)),
                     errc::invalid_parameter, "smaller");
}

KEEL_BACKEND_TEST("stream: device buffers copy in stream order; a moved-from stream is empty", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
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
  KEEL_REQUIRE_ERROR(b.synchronize(), errc::invalid_handle, "moved from");
  std::vector<float> back(64, 0.0f);
  moved.copy(back.data(), x.data(), 64 * sizeof(float), keel::copy_kind::device_to_host);  // blocking copy
  CHECK(back[63] == 3.0f);
}

KEEL_BACKEND_TEST("stream: device synchronize waits for every stream", "[runtime][stream]") {
  KEEL_USING_BACKEND(TestType);
  stream a{dev}, b{dev};
  std::atomic<int> n{0};
  for (int i = 0; i < 100; ++i) {
    a.launch_host([&] { ++n; });
    b.launch_host([&] { ++n; });
  }
  TestType::synchronize_device();
  CHECK(n == 200);
}
