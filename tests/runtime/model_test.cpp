// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

namespace {
void add_into(keel::host::launch_context&, int* dst, const int* src) { *dst += *src; }
}  // namespace

TEST_CASE("model: capture records work instead of running it; replay runs it many times", "[runtime][model]") {
  keel::host::stream s{test_device()};
  std::vector<int> order;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    for (int i = 0; i < 3; ++i) s.launch_host([&order, i] { order.push_back(i); });
    CHECK(s.is_capturing());
    m = capture.end();
    CHECK_FALSE(capture.active());
  }
  s.synchronize();
  CHECK(order.empty());
  CHECK(m.task_count() == 3);
  CHECK(m.group_count() == 0);
  for (int r = 0; r < 200; ++r) m.execute(s);
  s.synchronize();
  REQUIRE(order.size() == 600);
  for (std::size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == static_cast<int>(i % 3));
  CHECK_FALSE(s.is_capturing());
}

TEST_CASE("model: replay reads memory as it is at run time, on any stream", "[runtime][model]") {
  keel::host::stream s{test_device()}, other{test_device()};
  int dst = 0, src = 1;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel::kernel_kind{"add_into"}, &add_into, &dst, &src);
    m = capture.end();
  }
  m.execute(s);
  s.synchronize();
  CHECK(dst == 1);
  src = 10;
  m.execute(other);
  other.synchronize();
  CHECK(dst == 11);
}

TEST_CASE("model: RAII checklist, every field after moves", "[runtime][model]") {
  keel::host::stream s{test_device()};
  keel::host::model empty;
  CHECK_FALSE(empty);
  KEEL_REQUIRE_ERROR(empty.execute(s), errc::invalid_handle, "empty");
  keel::host::capture_scope capture{s};
  s.launch_host([] {});
  keel::host::model a = capture.end();
  auto* const native = a.get();
  keel::host::model b{std::move(a)};
  CHECK(b.get() == native);
  CHECK(b.task_count() == 1);
  CHECK_FALSE(a);
  a = std::move(b);
  CHECK(a.get() == native);
  CHECK_FALSE(b);
  swap(a, b);
  CHECK(b.get() == native);
  auto view = keel::host::model_ref::adopt(b.get());
  CHECK(view.task_count() == 1);
  auto* raw = b.release();
  auto back = keel::host::model::adopt(raw);
  CHECK(back.get() == native);
  KEEL_REQUIRE_ERROR(capture.end(), errc::invalid_state, "already ended");
}

TEST_CASE("model: a capture scope left by an exception discards the partial model", "[runtime][model]") {
  keel::host::stream s{test_device()};
  const std::size_t live = test_device().live_models();
  int ran = 0;
  try {
    keel::host::capture_scope capture{s};
    s.launch_host([&] { ++ran; });
    CHECK(test_device().live_models() == live + 1);
    throw std::runtime_error("midway");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(s.is_capturing());
  CHECK(test_device().live_models() == live);
  s.launch_host([&] { ++ran; });  // runs eagerly again
  s.synchronize();
  CHECK(ran == 1);
  {
    keel::host::capture_scope forgotten{s};  // left without end(): discarded too
  }
  CHECK_FALSE(s.is_capturing());
}

TEST_CASE("model: capture modes decide which unsafe calls are refused", "[runtime][model]") {
  keel::host::stream s{test_device()}, other{test_device()};
  int dst = 0;

  SECTION("global: refused from every thread") {
    keel::host::capture_scope capture{s, keel::capture_mode::global};
    KEEL_REQUIRE_ERROR(s.synchronize(), errc::capture_violation, "mode global, task group open: no");
    std::string from_other;
    std::thread([&] {
      from_other = keel_test::error_of([&] { s.synchronize(); });
      from_other += keel_test::error_of([&] { keel::host::synchronize(test_device()); });
      from_other += keel_test::error_of([&] { other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host); });
    }).join();
    CHECK(keel_test::contains(from_other, "synchronizing a capturing stream is unsafe during capture"));
    CHECK(keel_test::contains(from_other, "synchronizing the device is unsafe"));
    CHECK(keel_test::contains(from_other, "a blocking copy is unsafe"));
    keel::host::event e{test_device()};
    e.record(s);
    KEEL_REQUIRE_ERROR(e.query(), errc::capture_violation, "querying an event recorded inside the capture");
    KEEL_REQUIRE_ERROR(e.synchronize(), errc::capture_violation, "global mode refuses it from every thread");
    other.synchronize();  // a stream that is not capturing may still synchronize
  }
  SECTION("thread-local: refused only on the capturing thread") {
    keel::host::capture_scope capture{s, keel::capture_mode::thread_local_};
    KEEL_REQUIRE_ERROR(keel::host::synchronize(test_device()), errc::capture_violation, "thread-local");
    KEEL_REQUIRE_ERROR(s.synchronize(), errc::capture_violation, "capturing thread");
    std::string from_other;
    std::thread([&] {
      from_other = keel_test::error_of([&] { s.synchronize(); });
      from_other += keel_test::error_of([&] { other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host); });
    }).join();
    CHECK(from_other == "no errorno error");
  }
  SECTION("relaxed: nothing refused") {
    keel::host::capture_scope capture{s, keel::capture_mode::relaxed};
    s.synchronize();
    keel::host::synchronize(test_device());
    other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host);
    keel::host::event e{test_device()};
    e.record(s);
    CHECK(e.query());
  }
}

TEST_CASE("model: anyone can ask whether a stream or the calling thread is capturing", "[runtime][model]") {
  keel::host::stream s{test_device()};
  CHECK(s.capture_status().state == keel::capture_state::none);
  CHECK_FALSE(keel::host::thread_capture_status(test_device()).capturing());
  keel::host::capture_scope capture{s, keel::capture_mode::thread_local_};
  const auto info = s.capture_status();
  CHECK(info.capturing());
  CHECK(info.mode == keel::capture_mode::thread_local_);
  CHECK_FALSE(info.group_open);
  CHECK(info.capture_id != 0);
  const auto mine = keel::host::thread_capture_status(test_device());
  CHECK(mine.capturing());
  CHECK(mine.capture_id == info.capture_id);
  keel::capture_info theirs;
  std::thread([&] { theirs = keel::host::thread_capture_status(test_device()); }).join();
  CHECK_FALSE(theirs.capturing());
  {
    keel::host::task_group_scope mark{s};
    CHECK(s.capture_status().group_open);
  }
}

TEST_CASE("model: fork and join through events", "[runtime][model]") {
  keel::host::stream s{test_device()}, side{test_device()};
  keel::host::event fork{test_device()}, join{test_device()};
  std::vector<char> order;
  std::mutex m;
  auto note = [&](char c) {
    std::lock_guard<std::mutex> lock(m);
    order.push_back(c);
  };
  keel::host::model model;
  {
    keel::host::capture_scope capture{s};
    s.launch_host([&] { note('a'); });
    fork.record(s);
    side.wait(fork);  // side joins the capture
    CHECK(side.is_capturing());
    CHECK(side.capture_status().capture_id == s.capture_status().capture_id);
    side.launch_host([&] { note('b'); });
    join.record(side);
    s.wait(join);
    s.launch_host([&] { note('c'); });
    KEEL_REQUIRE_ERROR(keel::host::backend::capture_end(side.get()), errc::capture_violation, "must end on the stream that began it");
    model = capture.end();
  }
  CHECK_FALSE(side.is_capturing());
  side.synchronize();
  s.synchronize();
  CHECK(order.empty());
  for (int r = 0; r < 50; ++r) model.execute(s);
  s.synchronize();
  REQUIRE(order.size() == 150);
  for (std::size_t i = 0; i < order.size(); i += 3) {
    REQUIRE(order[i] == 'a');
    REQUIRE(order[i + 1] == 'b');
    REQUIRE(order[i + 2] == 'c');
  }
}

TEST_CASE("model: a fork that never rejoins, or a wait on outside work, breaks the capture rules",
          "[runtime][model]") {
  keel::host::stream s{test_device()}, side{test_device()};
  keel::host::event fork{test_device()}, join{test_device()}, outside{test_device()};
  outside.record(side);
  side.synchronize();
  keel::host::capture_scope capture{s};
  KEEL_REQUIRE_ERROR(s.wait(outside), errc::capture_violation, "recorded in the same capture");
  fork.record(s);
  side.wait(fork);
  side.launch_host([] {});
  KEEL_REQUIRE_ERROR(capture.end(), errc::capture_violation, "never waited for");
  CHECK(capture.active());  // the capture goes on; join and end again
  join.record(side);
  s.wait(join);
  auto model = capture.end();
  CHECK(model.task_count() == 1);
  keel::host::capture_scope again{side};  // side left the first capture and may begin its own
  CHECK(side.is_capturing());
}

TEST_CASE("model: one capture per stream; a capturing stream cannot begin another", "[runtime][model]") {
  keel::host::stream s{test_device()};
  keel::host::capture_scope capture{s};
  KEEL_REQUIRE_ERROR({ keel::host::capture_scope again{s}; }, errc::capture_violation, "capture cannot begin");
  CHECK(s.is_capturing());
}

TEST_CASE("model: the device limits live models", "[runtime][model]") {
  keel::host::device dev{keel::host::device_options{1, 2, 2}};
  keel::host::stream s{dev};
  auto make = [&] {
    keel::host::capture_scope capture{s};
    s.launch_host([] {});
    return capture.end();
  };
  auto m1 = make();
  auto m2 = make();
  CHECK(dev.live_models() == 2);
  KEEL_REQUIRE_ERROR(make(), errc::resource_limit, "live models");
  CHECK_FALSE(s.is_capturing());
  CHECK(dev.live_models() == 2);
  m1.reset();
  auto m3 = make();
  CHECK(dev.live_models() == 2);
}

TEST_CASE("model: what captured work uses stays alive until the model is destroyed", "[runtime][model]") {
  keel::host::stream s{test_device()};
  int out = 0;
  keel::host::model model;
  {
    keel::host::device_buffer buf{s, sizeof(int)};
    *buf.data_as<int>() = 99;
    keel::host::event ext{test_device(), keel::event_flags::external};
    ext.record(s);
    s.synchronize();
    keel::host::capture_scope capture{s};
    s.wait(ext);  // an external event recorded outside, waited on inside
    s.copy_async(keel::host_span(&out, sizeof out), buf.span());
    model = capture.end();
  }  // buffer and event handles are gone; the model holds both
  s.synchronize();
  model.execute(s);
  s.synchronize();
  CHECK(out == 99);

  // Destroying the model while an execution is pending is safe.
  keel_test::gate g;
  g.hold(s);
  out = 0;
  model.execute(s);
  model.reset();
  g.open();
  s.synchronize();
  CHECK(out == 99);
}

TEST_CASE("model: a task that throws during replay puts the executing stream in its error state",
          "[runtime][model]") {
  keel::host::stream s{test_device()};
  int after = 0;
  keel::host::capture_scope capture{s};
  s.launch_host([] { throw std::runtime_error("replayed failure"); });
  s.launch_host([&] { ++after; });
  auto model = capture.end();
  model.execute(s);
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "replayed failure");
  CHECK(after == 0);  // the rest of that execution is skipped
}

TEST_CASE("model: executing a model inside a capture records the execution", "[runtime][model]") {
  keel::host::stream s{test_device()};
  int n = 0;
  keel::host::model inner, outer;
  {
    keel::host::capture_scope capture{s};
    s.launch_host([&] { ++n; });
    inner = capture.end();
  }
  {
    keel::host::capture_scope capture{s};
    inner.execute(s);
    inner.execute(s);
    outer = capture.end();
  }
  inner.reset();  // the outer model keeps it
  outer.execute(s);
  s.synchronize();
  CHECK(n == 2);
}

TEST_CASE("model: destroying a stream that captures ends its capture cleanly", "[runtime][model]") {
  static std::atomic<int> reports{0};
  auto previous = keel::set_error_handler([](std::error_code, const char*, const char*) noexcept { ++reports; });
  reports = 0;
  const std::size_t live = test_device().live_models();
  {
    keel::host::stream doomed{test_device()};
    keel::host::backend::capture_begin(doomed.get(), keel::capture_mode::global);
    doomed.launch_host([] {});
  }  // the origin goes away mid-capture: discarded and reported
  CHECK(reports == 1);
  CHECK(test_device().live_models() == live);

  keel::host::stream s{test_device()};
  keel::host::event fork{test_device()};
  keel::host::capture_scope capture{s};
  {
    keel::host::stream side{test_device()};
    fork.record(s);
    side.wait(fork);
  }  // a joined stream goes away: the capture is invalidated
  CHECK(s.capture_status().state == keel::capture_state::invalidated);
  KEEL_REQUIRE_ERROR(capture.end(), errc::capture_violation, "invalidated");
  keel::set_error_handler(previous);
}
