// SPDX-License-Identifier: Apache-2.0
// The stream layer's conformance tests: ownership of stream handles, order,
// callables, kernel launches, copies, failures and device-wide synchronize.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>
#include <string>

#include "keel/runtime/runtime.hpp"
#include "keel/testing/conformance/support.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/// @cond
namespace stream_tests {

template <class F>
void stream_raii_checklist_every_field_after_moves() {
  KEEL_TESTING_USING_STREAMS(F);
  using native_t = typename stream::native_handle_type;
  stream empty;
  CHECK_FALSE(empty);
  CHECK(empty.native_handle() == native_t{});

  stream a{dev};
  REQUIRE(a);
  const native_t native_a = a.native_handle();
  CHECK(native_a != native_t{});
  CHECK(a.ref().native_handle() == native_a);

  SECTION("move construction leaves the source empty") {
    stream b{std::move(a)};
    CHECK(b.native_handle() == native_a);
    CHECK_FALSE(a);
    CHECK(a.native_handle() == native_t{});
    KEEL_TESTING_REQUIRE_ERROR(a.synchronize(), errc::invalid_handle, "moved from");
    KEEL_TESTING_REQUIRE_ERROR(a.launch_host([] {}), errc::invalid_handle, "empty");
  }
  SECTION("move assignment destroys the old stream and takes the new") {
    stream b{dev};
    int ran = 0;
    b.launch_host([&] { ++ran; });
    b = std::move(a);  // the old b waits for its work when destroyed
    CHECK(ran == 1);
    CHECK(b.native_handle() == native_a);
    CHECK_FALSE(a);
  }
  SECTION("self-move keeps the stream") {
    stream& self = a;
    a = std::move(self);
    CHECK(a.native_handle() == native_a);
  }
  SECTION("swap exchanges both handles") {
    stream b{dev};
    const native_t native_b = b.native_handle();
    swap(a, b);
    CHECK(a.native_handle() == native_b);
    CHECK(b.native_handle() == native_a);
  }
  SECTION("release hands the native stream over; from_native_handle takes it back") {
    const std::uint64_t id = a.id();
    const native_t raw = a.release();
    CHECK_FALSE(a);
    CHECK(raw == native_a);
    auto again = stream::from_native_handle(dev, raw);
    CHECK(again.native_handle() == native_a);
    CHECK(again.id() == id);  // the same stream, with its books
    KEEL_TESTING_REQUIRE_ERROR(stream::from_native_handle(dev, native_t{}), errc::null_parameter, "null stream");
  }
  SECTION("reset and close empty the handle") {
    a.reset();
    CHECK_FALSE(a);
    stream c{dev};
    c.close();
    CHECK_FALSE(c);
  }
}

template <class F>
void stream_a_ref_views_without_owning_and_is_made_from_the_native_handle() {
  KEEL_TESTING_USING_STREAMS(F);
  using native_t = typename stream::native_handle_type;
  stream owner{dev};
  stream_ref ref{dev, owner.native_handle()};
  CHECK(ref == owner);
  CHECK(ref == owner.ref());
  CHECK(ref.native_handle() == owner.native_handle());
  int ran = 0;
  ref.launch_host([&] { ++ran; });
  ref.synchronize();
  CHECK(ran == 1);
  stream_ref empty;
  CHECK_FALSE(empty);
  CHECK(empty != ref);
  CHECK(empty == stream_ref{});
  KEEL_TESTING_REQUIRE_ERROR(empty.synchronize(), errc::invalid_handle, "empty");
  KEEL_TESTING_REQUIRE_ERROR((stream_ref{dev, native_t{}}), errc::null_parameter, "null stream");
  CHECK(ref.id() == owner.id());
  CHECK(&ref.device() == &dev);
  stream other{dev};
  CHECK(other.id() != owner.id());
  CHECK(other != owner);
  CHECK(stream_ref{other} != ref);
}

template <class F>
void stream_tasks_run_in_order_asynchronously_from_any_thread() {
  KEEL_TESTING_USING_STREAMS(F);
  stream s{dev};
  gate g;
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

template <class F>
void stream_large_callables_are_boxed_and_still_run_once() {
  KEEL_TESTING_USING_STREAMS(F);
  stream s{dev};
  std::array<double, 32> big{};
  big[31] = 7;
  double sum = 0;
  for (int i = 0; i < 100; ++i) s.launch_host([big, &sum] { sum += big[31]; });
  s.synchronize();
  CHECK(sum == 700);
}

template <class F>
void stream_a_kernel_launch_carries_its_arguments_by_value() {
  KEEL_TESTING_USING_STREAMS(F);
  stream s{dev};
  float out = 0, tmp = 1.0f, other = 2.0f, alpha = 3.0f;
  F::axpy(s, &out, &tmp, &other, alpha);
  alpha = 100.0f;  // the launch holds its own copy
  s.synchronize();
  CHECK(out == 7.0f);
}

template <class F>
void stream_a_task_failure_on_a_destroyed_stream_goes_to_the_error_handler() {
  KEEL_TESTING_USING_STREAMS(F);
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

template <class F>
void stream_asynchronous_and_blocking_copies() {
  KEEL_TESTING_USING_STREAMS(F);
  stream s{dev};
  std::vector<int> src(100), dst(100, 0);
  for (int i = 0; i < 100; ++i) src[static_cast<std::size_t>(i)] = i;
  s.copy_async(dst.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  s.synchronize();
  CHECK(dst == src);
  std::vector<int> dst2(100, 0);
  s.copy(dst2.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  CHECK(dst2 == src);
  KEEL_TESTING_REQUIRE_ERROR(s.copy_async(keel::host_span(dst.data(), 4), keel::host_span(src.data(), 8)),
                     errc::invalid_parameter, "smaller");
}

template <class F>
void stream_device_synchronize_waits_for_every_stream() {
  KEEL_TESTING_USING_STREAMS(F);
  stream a{dev}, b{dev};
  std::atomic<int> n{0};
  for (int i = 0; i < 100; ++i) {
    a.launch_host([&] { ++n; });
    b.launch_host([&] { ++n; });
  }
  F::synchronize_device();
  CHECK(n == 200);
}

}  // namespace stream_tests
/// @endcond

/**
 * @brief Registers the stream layer's tests for fixture F, each named "<test> - <suffix>";
 * F supplies the stream layer. Tests that need asynchronous work are left out when
 * F::asynchronous is false. Call it before Catch2 runs (KEEL_BACKEND_CONFORMANCE does).
 */
template <class F>
void register_stream_tests(const std::string& suffix) {
  KEEL_TESTING_ADD(F, stream_tests::stream_raii_checklist_every_field_after_moves,
      "stream: RAII checklist, every field after moves", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_a_ref_views_without_owning_and_is_made_from_the_native_handle,
      "stream: a ref views without owning and is made from the native handle", "[runtime][stream]");
  KEEL_TESTING_ADD_ASYNC(F, stream_tests::stream_tasks_run_in_order_asynchronously_from_any_thread,
      "stream: tasks run in order, asynchronously, from any thread", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_large_callables_are_boxed_and_still_run_once,
      "stream: large callables are boxed and still run once", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_a_kernel_launch_carries_its_arguments_by_value,
      "stream: a kernel launch carries its arguments by value", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_a_task_failure_on_a_destroyed_stream_goes_to_the_error_handler,
      "stream: a task failure on a destroyed stream goes to the error handler", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_asynchronous_and_blocking_copies,
      "stream: asynchronous and blocking copies", "[runtime][stream]");
  KEEL_TESTING_ADD(F, stream_tests::stream_device_synchronize_waits_for_every_stream,
      "stream: device synchronize waits for every stream", "[runtime][stream]");
}

} KEEL_END_NAMESPACE  // namespace keel::testing
