// SPDX-License-Identifier: Apache-2.0
// The capture layer's conformance tests: capture and replay, capture modes,
// capture status, fork and join through events, lifetimes of what captured
// work uses. They use the stream, event, memory and task-group layers too.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/runtime/runtime.hpp"
#include "keel/testing/conformance/support.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/// @cond
namespace capture_tests {

// TASK_COUNT: checks model::task_count.
template <class F>
void model_capture_records_work_instead_of_running_it_replay_runs_it_many_times() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  std::vector<int> order;
  model m;
  {
    capture_scope capture{s};
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

template <class F>
void model_replay_reads_memory_as_it_is_at_run_time_on_any_stream() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, other{dev};
  float dst = 0, src = 1, copied = -1;
  model m;
  {
    capture_scope capture{s};
    CHECK(s.is_capturing());
    F::axpy(s, &dst, &dst, &src, 1.0f);  // dst += src
    F::copy(s, &copied, &dst);
    m = capture.end();
  }
  CHECK_FALSE(s.is_capturing());
  CHECK(m.group_count() == 0);
  s.synchronize();
  CHECK(dst == 0.0f);  // captured, not run
  m.execute(s);
  s.synchronize();
  CHECK(dst == 1.0f);
  CHECK(copied == 1.0f);
  src = 10;
  m.execute(other);
  other.synchronize();
  CHECK(dst == 11.0f);
  CHECK(copied == 11.0f);
}

// TASK_COUNT: checks model::task_count.
template <class F>
void model_raii_checklist_every_field_after_moves() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  model empty;
  CHECK_FALSE(empty);
  KEEL_TESTING_REQUIRE_ERROR(empty.execute(s), errc::invalid_handle, "empty");
  capture_scope capture{s};
  s.launch_host([] {});
  model a = capture.end();
  const auto native = a.native_handle();
  CHECK(native != typename model::native_handle_type{});
  model b{std::move(a)};
  CHECK(b.native_handle() == native);
  CHECK(b.task_count() == 1);
  CHECK_FALSE(a);
  a = std::move(b);
  CHECK(a.native_handle() == native);
  CHECK_FALSE(b);
  swap(a, b);
  CHECK(b.native_handle() == native);
  model_ref view{dev, b.native_handle()};
  CHECK(view == b);
  CHECK(view != a);
  CHECK(view.task_count() == 1);
  const auto raw = b.release();
  CHECK(raw == native);
  CHECK(view.task_count() == 1);  // a released model lives on; its view still works
  auto back = model::from_native_handle(dev, raw);
  CHECK(back.native_handle() == native);
  CHECK(back == view);
  CHECK(back.task_count() == 1);
  KEEL_TESTING_REQUIRE_ERROR((void)capture.end(), errc::invalid_state, "already ended");
}

template <class F>
void model_a_capture_scope_left_by_an_exception_discards_the_partial_model() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  std::size_t live = 0;
  if constexpr (F::is_host) live = dev.live_models();
  int ran = 0;
  recorded_reports reports;
  try {
    capture_scope capture{s};
    s.launch_host([&] { ++ran; });
    if constexpr (F::is_host) CHECK(dev.live_models() == live + 1);
    throw std::runtime_error("midway");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(s.is_capturing());
  if constexpr (F::is_host) CHECK(dev.live_models() == live);
  s.launch_host([&] { ++ran; });  // runs eagerly again
  s.synchronize();
  CHECK(ran == 1);
  CHECK(reports.taken().empty());  // left by an exception: discarded quietly (the exception tells)
  {
    capture_scope forgotten{s};  // left without end() by a normal return: discarded too, and reported
  }
  CHECK_FALSE(s.is_capturing());
  CHECK(reports.taken().size() == 1);
}

template <class F>
void model_capture_modes_decide_which_unsafe_calls_are_refused() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, other{dev};
  int dst = 0;

  SECTION("global: refused from every thread") {
    capture_scope capture{s, keel::capture_mode::global};
    KEEL_TESTING_REQUIRE_ERROR(s.synchronize(), errc::capture_violation, "mode global, task group open: no");
    CHECK(s.is_capturing());
    std::string from_other;
    std::thread([&] {
      from_other = error_of([&] { s.synchronize(); });
      from_other += error_of([&] { F::synchronize_device(); });
      from_other += error_of([&] { other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host); });
    }).join();
    if constexpr (F::is_host) {
      CHECK(contains(from_other, "synchronizing a capturing stream is unsafe during capture"));
      CHECK(contains(from_other, "synchronizing the device is unsafe"));
      CHECK(contains(from_other, "a blocking copy is unsafe"));
    } else {
      CHECK_FALSE(contains(from_other, "no error"));
    }
    event e{dev};
    e.record(s);
    KEEL_TESTING_REQUIRE_ERROR(e.query(), errc::capture_violation, "querying an event recorded inside the capture");
    KEEL_TESTING_REQUIRE_ERROR(e.synchronize(), errc::capture_violation, "global mode refuses it from every thread");
    other.synchronize();  // a stream that is not capturing may still synchronize
  }
  SECTION("thread-local: refused only on the capturing thread") {
    capture_scope capture{s, keel::capture_mode::thread_local_};
    KEEL_TESTING_REQUIRE_ERROR(F::synchronize_device(), errc::capture_violation, "thread-local");
    KEEL_TESTING_REQUIRE_ERROR(s.synchronize(), errc::capture_violation, "capturing thread");
    std::string from_other;
    std::thread([&] {
      from_other = error_of([&] { s.synchronize(); });
      from_other += error_of([&] { other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host); });
    }).join();
    CHECK(from_other == "no errorno error");
  }
  SECTION("relaxed: nothing refused") {
    capture_scope capture{s, keel::capture_mode::relaxed};
    s.synchronize();
    F::synchronize_device();
    other.copy(&dst, &dst, sizeof dst, keel::copy_kind::host_to_host);
    event e{dev};
    e.record(s);
    CHECK(e.query());
  }
}

template <class F>
void model_anyone_can_ask_whether_a_stream_or_the_calling_thread_is_capturing() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  CHECK(s.capture_status().state == keel::capture_state::none);
  CHECK_FALSE(F::thread_capture_status().capturing());
  capture_scope capture{s, keel::capture_mode::thread_local_};
  const auto info = s.capture_status();
  CHECK(info.capturing());
  CHECK(info.mode == keel::capture_mode::thread_local_);
  CHECK_FALSE(info.group_open);
  CHECK(info.capture_id != 0);
  const auto mine = F::thread_capture_status();
  CHECK(mine.capturing());
  CHECK(mine.capture_id == info.capture_id);
  keel::capture_info theirs;
  std::thread([&] { theirs = F::thread_capture_status(); }).join();
  CHECK_FALSE(theirs.capturing());
  {
    task_group_scope mark{s};
    CHECK(s.capture_status().group_open);
  }
}

template <class F>
void model_fork_and_join_through_events() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, side{dev};
  event fork{dev}, join{dev};
  std::vector<char> order;
  std::mutex m;
  auto note = [&](char c) {
    std::lock_guard<std::mutex> lock(m);
    order.push_back(c);
  };
  model captured;
  {
    capture_scope capture{s};
    s.launch_host([&] { note('a'); });
    fork.record(s);
    side.wait(fork);  // side joins the capture
    CHECK(side.is_capturing());
    if (F::is_host)  // ACL names the capture's model to the stream that began it only
      CHECK(side.capture_status().capture_id == s.capture_status().capture_id);
    side.launch_host([&] { note('b'); });
    join.record(side);
    s.wait(join);
    s.launch_host([&] { note('c'); });
    KEEL_TESTING_REQUIRE_ERROR(F::backend::capture_end(keel::detail::handle_of(side)), errc::capture_violation,
                       "must end on the stream that began it");
    captured = capture.end();
  }
  CHECK_FALSE(side.is_capturing());
  side.synchronize();
  s.synchronize();
  CHECK(order.empty());
  for (int r = 0; r < 50; ++r) captured.execute(s);
  s.synchronize();
  REQUIRE(order.size() == 150);
  for (std::size_t i = 0; i < order.size(); i += 3) {
    REQUIRE(order[i] == 'a');
    REQUIRE(order[i + 1] == 'b');
    REQUIRE(order[i + 2] == 'c');
  }
}

// TASK_COUNT: checks model::task_count.
template <class F>
void model_a_fork_that_never_rejoins_or_a_wait_on_outside_work_breaks_the_capture_rules() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, side{dev};
  event fork{dev}, join{dev}, outside{dev};
  outside.record(side);
  side.synchronize();
  capture_scope capture{s};
  KEEL_TESTING_REQUIRE_ERROR(s.wait(outside), errc::capture_violation, "recorded in the same capture");
  fork.record(s);
  side.wait(fork);
  side.launch_host([] {});
  KEEL_TESTING_REQUIRE_ERROR((void)capture.end(), errc::capture_violation, "never waited for");
  CHECK(capture.active());  // the capture goes on; join and end again
  join.record(side);
  s.wait(join);
  auto captured = capture.end();
  CHECK(captured.task_count() == 1);
  capture_scope again{side};  // side left the first capture and may begin its own
  CHECK(side.is_capturing());
}

template <class F>
void model_one_capture_per_stream_a_capturing_stream_cannot_begin_another() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  capture_scope capture{s};
  KEEL_TESTING_REQUIRE_ERROR({ capture_scope again{s}; }, errc::capture_violation, "capture cannot begin");
  CHECK(s.is_capturing());
}

template <class F>
void model_models_are_a_limited_resource() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  std::vector<model> models;
  bool limited = false;
  for (int i = 0; i < 5000 && !limited; ++i) {
    try {
      capture_scope capture{s};
      models.push_back(capture.end());
    } catch (const keel::error& e) {
      INFO(e.what());
      CHECK(is(e.code(), errc::resource_limit));
      limited = true;
    }
  }
  CHECK(limited);
  CHECK_FALSE(s.is_capturing());
  models.pop_back();
  capture_scope capture{s};  // one released, one available again
  models.push_back(capture.end());
}

template <class F>
void model_what_captured_work_uses_stays_alive_until_the_model_is_destroyed() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  int out = 0;
  model captured;
  {
    device_buffer buf{s, sizeof(int)};
    *buf.template data_as<int>() = 99;
    event ext{dev, keel::event_flags::external};
    ext.record(s);
    s.synchronize();
    capture_scope capture{s};
    s.wait(ext);  // an external event recorded outside, waited on inside
    s.copy_async(keel::host_span(&out, sizeof out), buf.span());
    captured = capture.end();
  }  // buffer and event handles are gone; the model holds both
  s.synchronize();
  captured.execute(s);
  s.synchronize();
  CHECK(out == 99);

  // Destroying the model while an execution is pending is safe.
  gate g;
  g.hold(s.ref());
  out = 0;
  captured.execute(s);
  captured.reset();
  g.open();
  s.synchronize();
  CHECK(out == 99);
}

template <class F>
void model_what_a_forked_stream_s_captured_work_uses_stays_alive_until_the_model_is_destroyed() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  int out = 0;
  std::atomic<int> calls{0};
  model captured;
  {
    stream side{dev};
    event fork{dev}, join{dev};
    device_buffer buf{s, sizeof(int)};
    *buf.template data_as<int>() = 42;
    s.synchronize();
    capture_scope capture{s};
    fork.record(s);
    side.wait(fork);  // side joins the capture
    side.copy_async(keel::host_span(&out, sizeof out), buf.span());
    side.launch_host([&calls] { ++calls; });
    join.record(side);
    s.wait(join);
    captured = capture.end();
    side.synchronize();  // the forked stream lets go of what it queued itself
  }  // buffer, events and the forked stream are gone; the model holds what it uses
  captured.execute(s);
  captured.execute(s);
  s.synchronize();
  CHECK(out == 42);
  CHECK(calls == 2);
}

template <class F>
void model_a_task_that_throws_during_replay_puts_the_executing_stream_in_its_error_state() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  int after = 0;
  capture_scope capture{s};
  s.launch_host([] { throw std::runtime_error("replayed failure"); });
  s.launch_host([&] { ++after; });
  auto captured = capture.end();
  captured.execute(s);
  KEEL_TESTING_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "replayed failure");
  CHECK(after == 0);  // the rest of that execution is skipped
}

template <class F>
void model_executing_a_model_inside_a_capture_records_the_execution() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  int n = 0;
  model inner, outer;
  {
    capture_scope capture{s};
    s.launch_host([&] { ++n; });
    inner = capture.end();
  }
  {
    capture_scope capture{s};
    inner.execute(s);
    inner.execute(s);
    outer = capture.end();
  }
  inner.reset();  // the outer model keeps it
  outer.execute(s);
  s.synchronize();
  CHECK(n == 2);
}

}  // namespace capture_tests
/// @endcond

/**
 * @brief Registers the capture layer's tests for fixture F, each named "<test> - <suffix>";
 * F supplies the all five layers. Tests that need asynchronous work are left out when
 * F::asynchronous is false. Call it before Catch2 runs (KEEL_BACKEND_CONFORMANCE does).
 */
template <class F>
void register_capture_tests(const std::string& suffix) {
  KEEL_TESTING_ADD(F, capture_tests::model_capture_records_work_instead_of_running_it_replay_runs_it_many_times,
      "model: capture records work instead of running it, replay runs it many times", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_replay_reads_memory_as_it_is_at_run_time_on_any_stream,
      "model: replay reads memory as it is at run time, on any stream", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_raii_checklist_every_field_after_moves,
      "model: RAII checklist, every field after moves", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_a_capture_scope_left_by_an_exception_discards_the_partial_model,
      "model: a capture scope left by an exception discards the partial model", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_capture_modes_decide_which_unsafe_calls_are_refused,
      "model: capture modes decide which unsafe calls are refused", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_anyone_can_ask_whether_a_stream_or_the_calling_thread_is_capturing,
      "model: anyone can ask whether a stream or the calling thread is capturing", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_fork_and_join_through_events,
      "model: fork and join through events", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_a_fork_that_never_rejoins_or_a_wait_on_outside_work_breaks_the_capture_rules,
      "model: a fork that never rejoins, or a wait on outside work, breaks the capture rules", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_one_capture_per_stream_a_capturing_stream_cannot_begin_another,
      "model: one capture per stream, a capturing stream cannot begin another", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_models_are_a_limited_resource,
      "model: models are a limited resource", "[runtime][model]");
  KEEL_TESTING_ADD_ASYNC(F, capture_tests::model_what_captured_work_uses_stays_alive_until_the_model_is_destroyed,
      "model: what captured work uses stays alive until the model is destroyed", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_what_a_forked_stream_s_captured_work_uses_stays_alive_until_the_model_is_destroyed,
      "model: what a forked stream's captured work uses stays alive until the model is destroyed", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_a_task_that_throws_during_replay_puts_the_executing_stream_in_its_error_state,
      "model: a task that throws during replay puts the executing stream in its error state", "[runtime][model]");
  KEEL_TESTING_ADD(F, capture_tests::model_executing_a_model_inside_a_capture_records_the_execution,
      "model: executing a model inside a capture records the execution", "[runtime][model]");
}

} KEEL_END_NAMESPACE  // namespace keel::testing
