// SPDX-License-Identifier: Apache-2.0
// The task-group layer's conformance tests: marking groups, sequential and
// concurrent updates and their rules, and a bounded stress test of
// executions, events and updates across streams. They use every layer.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/runtime/runtime.hpp"
#include "keel/testing/conformance/support.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/**
 * @brief A model with one task group between two copies, [copy] [group:
 * axpy(alpha)] [copy], a stream it runs on and an update stream.
 *
 * Ownership: owns its streams, model and group. Thread safety: none of its
 * own. Exceptions: what the handles throw.
 */
template <class F>
struct group_fixture {
  typename F::stream s{F::device()};  ///< the stream the model runs on
  typename F::stream u{F::device()};  ///< the update stream
  float out = 0;                      ///< the group's output
  float tmp = 1.0f;                   ///< the group's first operand
  float other = 1.0f;                 ///< the group's second operand
  float copied = 0;                   ///< what the first copy writes
  typename F::model model;            ///< the captured model
  typename F::task_group group;       ///< its task group

  /// Captures: [copy] [group: axpy(alpha)] [copy].
  void capture(float alpha) {
    typename F::capture_scope capture{s};
    F::copy(s, &copied, &tmp);
    {
      typename F::task_group_scope mark{s};
      CHECK(s.capture_status().group_open);
      F::axpy(s, &out, &tmp, &other, alpha);
      group = mark.end();
    }
    F::copy(s, &copied, &out);
    model = capture.end();
  }
  /// Replaces the group's axpy with one of @p alpha, on the update stream.
  void update(float alpha) {
    typename F::update_scope scope{u, group};
    F::axpy(u, &out, &tmp, &other, alpha);
    scope.end();
  }
  /// Executes the model once, waits, and returns the group's output.
  float run() {
    model.execute(s);
    s.synchronize();
    return out;
  }
};


/// @cond
namespace task_group_tests {

// TASK_COUNT: checks task_group::size and model::task_count.
template <class F>
void group_raii_checklist_every_field_after_moves() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(2.0f);
  const auto native = f.group.native_handle();
  CHECK(f.group.size() == 1);
  CHECK(f.group.model_alive());
  task_group moved{std::move(f.group)};
  CHECK(moved.native_handle() == native);
  CHECK(moved.size() == 1);
  CHECK_FALSE(f.group);
  KEEL_TESTING_REQUIRE_ERROR(f.group.size(), errc::invalid_handle, "moved from");
  KEEL_TESTING_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::invalid_handle, "empty");
  f.group = std::move(moved);
  CHECK(f.group.native_handle() == native);
  swap(f.group, moved);
  CHECK(moved.native_handle() == native);
  task_group_ref view{dev, moved.native_handle()};
  CHECK(view == moved);
  CHECK(view != f.group);
  CHECK(view.size() == 1);
  const auto raw = moved.release();
  CHECK(raw == native);
  auto back = task_group::from_native_handle(dev, raw);
  CHECK(back.native_handle() == native);
  CHECK(back == view);
  CHECK(f.model.group_count() == 1);
  CHECK(f.model.task_count() == 3);
}

template <class F>
void group_a_sequential_update_replaces_the_group_s_arguments() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  CHECK(f.model.group_count() == 1);
  CHECK(f.group.model_alive());
  CHECK(f.run() == 2.0f);
  {
    update_scope update{f.u, f.group};
    CHECK(f.u.capture_status().updating);
    F::axpy(f.u, &f.out, &f.tmp, &f.other, 4.0f);
    CHECK(f.run() == 2.0f);  // not yet: the update ends later
    update.end();
  }
  CHECK_FALSE(f.u.capture_status().updating);
  f.u.synchronize();  // takes effect when the update stream reaches the end
  CHECK(f.run() == 5.0f);
  for (int i = 0; i < 20; ++i) CHECK(f.run() == 5.0f);
  CHECK(f.copied == 5.0f);
  // An update with no tasks leaves the group as it was.
  {
    update_scope update{f.u, f.group};
    update.end();
  }
  f.u.synchronize();
  CHECK(f.run() == 5.0f);
  f.model.reset();
  CHECK_FALSE(f.group.model_alive());
}

template <class F>
void group_updates_on_a_busy_update_stream_keep_stream_order_also_when_adjacent_ones_merge() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  CHECK(f.run() == 2.0f);
  event gate{dev, keel::event_flags::external};
  f.u.wait(gate);  // the update stream is busy until the gate opens: every swap below is pending
  std::vector<float> seen;
  auto observe = [&] {
    f.model.execute(f.u);
    f.u.launch_host([&] { seen.push_back(f.out); });
  };
  f.update(3.0f);
  f.update(4.0f);  // adjacent to the pending swap of 3: takes its place
  observe();       // sees 4
  f.update(5.0f);  // after the execution: a swap of its own
  observe();       // sees 5
  f.update(6.0f);
  {
    update_scope empty{f.u, f.group};  // no tasks: changes nothing, issues nothing
    empty.end();
  }
  f.update(7.0f);  // merges with 6
  observe();       // sees 7
  CHECK(f.run() == 2.0f);  // nothing took effect yet
  {
    update_scope refused{f.u, f.group};  // a refused update leaves the pending swap alone
    F::copy(f.u, &f.copied, &f.tmp);
    KEEL_TESTING_REQUIRE_ERROR(refused.end(), errc::update_violation, "the group is unchanged");
  }
  gate.record(f.s);
  f.u.synchronize();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == 5.0f);
  CHECK(seen[1] == 6.0f);
  CHECK(seen[2] == 8.0f);
  CHECK(f.run() == 8.0f);
  // Idle update stream: the update takes effect when end() returns.
  f.update(9.0f);
  CHECK(f.run() == 10.0f);
}

template <class F>
void group_replacements_must_match_the_group_in_number_and_kind() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  SECTION("too many") {
    update_scope update{f.u, f.group};
    F::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
    F::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
    KEEL_TESTING_REQUIRE_ERROR(update.end(), errc::update_violation, "has 1 tasks and the update issued 2");
  }
  SECTION("wrong kind") {
    update_scope update{f.u, f.group};
    F::copy(f.u, &f.out, &f.tmp);
    KEEL_TESTING_REQUIRE_ERROR(update.end(), errc::update_violation,
                               std::string("is kernel '") + F::axpy_kind_name + "' and the update issued '" + F::copy_kind_name +
                                   "'");
  }
  SECTION("only operator launches") {
    update_scope update{f.u, f.group};
    KEEL_TESTING_REQUIRE_ERROR(f.u.launch_host([] {}), errc::update_violation, "not a host callable");
    int x = 0;
    KEEL_TESTING_REQUIRE_ERROR(f.u.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::update_violation,
                       "not a copy");
    event e{dev};
    KEEL_TESTING_REQUIRE_ERROR(e.record(f.u), errc::update_violation, "not an event operation");
    update.cancel();
  }
  SECTION("an update with no tasks leaves the group as it was") {
    update_scope update{f.u, f.group};
    update.end();
  }
  if (keel::abandon_restores_group_v<typename F::backend>) {
    SECTION("an exception abandons the update") {
      recorded_reports reports;
      try {
        update_scope update{f.u, f.group};
        F::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
        throw std::runtime_error("changed my mind");
      } catch (const std::runtime_error&) {
      }
      CHECK_FALSE(f.u.capture_status().updating);
    }
  }
  f.u.synchronize();
  CHECK(f.run() == 2.0f);  // the model is unchanged in every case
  // and the group can be updated again afterwards
  f.update(3.0f);
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
}

template <class F>
void group_an_exception_leaves_the_update_and_the_stream_can_update_again() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  recorded_reports reports;
  try {
    update_scope update{f.u, f.group};
    throw std::runtime_error("changed my mind");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(f.u.capture_status().updating);
  CHECK(reports.taken().empty());  // left by an exception: abandoned quietly (the exception tells)
  f.update(3.0f);
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
}

// TASK_COUNT: checks task_group::size.
template <class F>
void group_only_operator_launches_may_be_marked_into_a_group() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  event e{dev}, ext{dev, keel::event_flags::external};
  int x = 0;
  float out = 0, in = 1;
  capture_scope capture{s};
  task_group_scope mark{s};
  KEEL_TESTING_REQUIRE_ERROR(s.launch_host([] {}), errc::capture_violation, "not a host callable; stream #");
  KEEL_TESTING_REQUIRE_ERROR(s.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::capture_violation,
                     "task group open: yes");
  KEEL_TESTING_REQUIRE_ERROR(e.record(s), errc::capture_violation, "not an event record");
  KEEL_TESTING_REQUIRE_ERROR(s.wait(ext), errc::capture_violation, "not an event operation");
  KEEL_TESTING_REQUIRE_ERROR({ task_group_scope nested{s}; }, errc::capture_violation, "already marking");
  F::axpy(s, &out, &in, &in, 1.0f);
  auto group = mark.end();
  CHECK(group.size() == 1);
  KEEL_TESTING_REQUIRE_ERROR((void)mark.end(), errc::invalid_state, "already ended");
}

template <class F>
void group_while_a_group_is_marked_no_other_capturing_stream_may_issue_work() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, side{dev};
  float out = 0, in = 1;
  capture_scope first{s};
  capture_scope second{side};
  task_group_scope mark{s};
  F::axpy(s, &out, &in, &in, 1.0f);
  bool thrown = false;
  try {
    F::axpy(side, &out, &in, &in, 1.0f);
  } catch (const keel::error& e) {
    INFO(e.what());
    thrown = true;
    CHECK(F::is_launch_error(e.code(), errc::capture_violation));
    if (F::is_host) CHECK(contains(e.what(), "no other capturing stream may issue work"));
  }
  CHECK(thrown);
}

template <class F>
void group_groups_are_marked_during_capture_and_updated_on_streams_that_are_not_capturing() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  KEEL_TESTING_REQUIRE_ERROR({ task_group_scope mark{f.s}; }, errc::capture_violation, "is not capturing");
  f.capture(1.0f);
  capture_scope capture{f.u};
  KEEL_TESTING_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::capture_violation,
                     "updates are issued on a stream that is not capturing");
}

template <class F>
void group_one_update_of_a_group_at_a_time_a_second_is_an_error_never_a_race() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  stream u2{dev};
  update_scope first{f.u, f.group};
  std::string second;
  std::thread([&] { second = error_of([&] { update_scope again{u2, f.group}; }); }).join();
  CHECK_FALSE(second == "no error");
  if (F::is_host) CHECK(contains(second, "is already being updated"));
  KEEL_TESTING_REQUIRE_ERROR({ update_scope attempt(u2, f.group); }, errc::update_violation, "is already being updated");
  KEEL_TESTING_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::update_violation, "already updating");
  first.end();
  update_scope third{u2, f.group};  // free again
  third.end();
}

// TASK_COUNT: checks task_group::size (and ACL reports the dead group's handle as invalid).
template <class F>
void group_updating_a_group_whose_model_was_destroyed_is_an_error() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  f.model.reset();
  CHECK_FALSE(f.group.model_alive());
  CHECK(f.group.size() == 1);  // the handle itself stays valid
  // The checked layer refuses it first on every backend (F::dead_group_update, invalid_state).
  KEEL_TESTING_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, F::dead_group_update, "was destroyed");
}

template <class F>
void group_a_concurrent_update_through_an_external_event_takes_effect_in_the_running_execution() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, u{dev};
  external_event_pool pool{dev, 1};
  concurrent_update fenced{pool.acquire(u)};
  float out = 0, tmp = 1.0f, other = 1.0f;
  std::vector<float> seen;
  model m;
  task_group group;
  {
    capture_scope capture{s};
    fenced.fence(s);  // wait for the update stream's signal, then reset it
    task_group_scope mark{s};
    F::axpy(s, &out, &tmp, &other, 1.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    m = capture.end();
  }
  fenced.release(u);  // iteration 0 passes the fence unchanged
  m.execute(s);
  s.synchronize();
  m.execute(s);  // iteration 1 blocks at the fence until the update is recorded
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(seen.size() == 1);
  fenced.update(u, group, [&](stream_ref us) { F::axpy(us, &out, &tmp, &other, 7.0f); });
  s.synchronize();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == 2.0f);
  CHECK(seen[1] == 8.0f);  // the iteration after the update sees it
  // A refused update still releases the fence: the execution runs the old group.
  m.execute(s);
  KEEL_TESTING_REQUIRE_ERROR(fenced.update(u, group, [&](stream_ref us) { us.launch_host([] {}); }), errc::update_violation,
                     "not a host callable");
  s.synchronize();
  REQUIRE(seen.size() == 3);
  CHECK(seen[2] == 8.0f);
  // So does an update of the wrong number of tasks, issued from another thread.
  m.execute(s);
  std::thread updater([&] {
    KEEL_TESTING_REQUIRE_ERROR(fenced.update(u, group,
                                     [&](stream_ref us) {
                                       F::axpy(us, &out, &tmp, &other, 9.0f);
                                       F::axpy(us, &out, &tmp, &other, 9.0f);
                                     }),
                       errc::update_violation, "has 1 tasks and the update issued 2");
  });
  updater.join();
  s.synchronize();
  u.synchronize();
  REQUIRE(seen.size() == 4);
  CHECK(seen[3] == 8.0f);
}

template <class F>
void group_the_split_model_alternative_re_captures_only_the_changing_part() {
  KEEL_TESTING_USING_ALL(F);
  // Instead of a group: three models around the changing task; the middle
  // one is captured again with the new alpha, the others are kept.
  stream s{dev};
  float out = 0, tmp = 1.0f, other = 1.0f, copied = 0;
  auto capture = [&](auto&& issue) {
    capture_scope scope{s};
    issue();
    return scope.end();
  };
  auto before = capture([&] { F::copy(s, &copied, &tmp); });
  auto middle = capture([&] { F::axpy(s, &out, &tmp, &other, 1.1f); });
  auto after = capture([&] { F::copy(s, &copied, &out); });
  auto run = [&] {
    before.execute(s);
    middle.execute(s);
    after.execute(s);
    s.synchronize();
    return copied;
  };
  CHECK(run() == Approx(2.1f));
  middle = capture([&] { F::axpy(s, &out, &tmp, &other, 5.5f); });
  CHECK(run() == Approx(6.5f));
}

template <class F>
void group_every_fenced_iteration_sees_the_update_issued_for_it() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev}, u{dev};
  concurrent_update fenced{dev};
  float out = 0, tmp = 0.0f, other = 1.0f;
  std::vector<float> seen;
  model m;
  task_group group;
  {
    capture_scope capture{s};
    fenced.fence(s);
    task_group_scope mark{s};
    F::axpy(s, &out, &tmp, &other, 0.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    m = capture.end();
  }
  constexpr int iterations = 30;
  for (int i = 1; i <= iterations; ++i) {
    m.execute(s);  // blocks at the fence until the update below is recorded
    fenced.update(u, group, [&](stream_ref us) { F::axpy(us, &out, &tmp, &other, static_cast<float>(i)); });
    // One signal per execution: the next update may be recorded only after
    // this execution has reset the event (see basic_concurrent_update).
    s.synchronize();
  }
  REQUIRE(seen.size() == iterations);
  for (int i = 1; i <= iterations; ++i) CHECK(seen[static_cast<std::size_t>(i - 1)] == static_cast<float>(i));
}

template <class F>
void stress_random_executions_and_updates_across_streams() {
  KEEL_TESTING_USING_ALL(F);
  constexpr int n_streams = 3, n_models = 2;
  std::vector<stream> streams;
  for (int i = 0; i < n_streams; ++i) streams.emplace_back(dev);
  stream updater{dev};
  event e{dev};

  std::array<std::uint64_t, n_streams> next{};  // touched only by each stream's worker
  std::array<std::uint64_t, n_streams> issued{};
  std::array<typename F::slot, n_models> slot{};
  std::array<std::atomic<long>, n_models> runs{};
  std::array<long, n_models> executes{};
  std::array<int, n_models> last_value{};
  std::atomic<int> out_of_order{0};

  std::vector<model> models;
  std::vector<task_group> groups;
  for (int k = 0; k < n_models; ++k) {
    capture_scope capture{streams[0]};
    streams[0].launch_host([&runs, k] { runs[static_cast<std::size_t>(k)].fetch_add(1); });
    task_group_scope mark{streams[0]};
    F::store(streams[0], &slot[static_cast<std::size_t>(k)], 0);
    groups.push_back(mark.end());
    models.push_back(capture.end());
  }

  std::mt19937 rng(12345);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(F::stress_ms);
  int ops = 0;
  while (ops < 40000 && std::chrono::steady_clock::now() < deadline) {
    ++ops;
    const auto i = static_cast<std::size_t>(rng() % n_streams);
    const auto k = static_cast<std::size_t>(rng() % n_models);
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        const std::uint64_t seq = issued[i]++;
        streams[i].launch_host([&next, &out_of_order, i, seq] {
          if (next[i] != seq) ++out_of_order;
          next[i] = seq + 1;
        });
        break;
      }
      case 3:
      case 4:
        // Where a model's kernels write plain memory, its replays stay on one stream.
        models[k].execute(streams[F::replays_may_overlap ? i : k % n_streams]);
        ++executes[k];
        break;
      case 5: {
        const int value = static_cast<int>(rng() % 1000) + 1;
        update_scope update{updater, groups[k]};
        F::store(updater, &slot[k], value);
        update.end();
        last_value[k] = value;
        break;
      }
      case 6:
        e.record(streams[i]);
        streams[(i + 1) % n_streams].wait(e);
        break;
      default:
        if (rng() % 16 == 0) streams[i].synchronize();
        break;
    }
  }
  updater.synchronize();
  for (auto& s : streams) s.synchronize();
  INFO("operations: " << ops);
  CHECK(out_of_order == 0);
  for (std::size_t i = 0; i < n_streams; ++i) CHECK(next[i] == issued[i]);
  for (std::size_t k = 0; k < n_models; ++k) {
    CHECK(runs[k] == executes[k]);
    models[k].execute(streams[0]);
    streams[0].synchronize();
    CHECK(F::load(slot[k]) == last_value[k]);
  }
}

// ---- scopes: every scope finishes alike ----------------------------------

// What a scope left without end() reports: after an early return, one
// report; after an exception, none (the exception tells the caller).
inline void check_left_unfinished(recorded_reports& reports, const char* api, bool by_exception) {
  const auto got = reports.taken();
  if (by_exception) {
    CHECK(got.empty());
    return;
  }
  REQUIRE(got.size() == 1);
  INFO(got[0].api << ": " << got[0].message);
  CHECK(got[0].code == keel::errc::invalid_state);
  CHECK(got[0].api == api);
  CHECK(contains(got[0].message, "left without end() or cancel()"));
  CHECK_FALSE(contains(got[0].message, "by an exception"));
}

// How a test leaves a scope without end(): by an early return, or by an exception.
enum class leave { early_return, exception };

// Runs body(leave_now): the body opens its scope and calls leave_now(), which
// returns (the body then returns early) or throws, as @p how says.
template <class Body>
void leave_by(leave how, Body&& body) {
  const auto leave_now = [how] {
    if (how == leave::exception) throw std::runtime_error("leaving the scope");
  };
  try {
    body(leave_now);
  } catch (const std::runtime_error&) {
  }
}

template <class F>
void scopes_every_scope_has_end_cancel_active_and_stream() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  recorded_reports reports;
  {
    capture_scope capture{f.s};
    CHECK(capture.active());
    CHECK(capture.stream().native_handle() == f.s.native_handle());
    task_group_scope mark{f.s};
    CHECK(mark.active());
    CHECK(mark.stream().native_handle() == f.s.native_handle());
    F::axpy(f.s, &f.out, &f.tmp, &f.other, 1.0f);
    mark.cancel();
    CHECK_FALSE(mark.active());
    CHECK_FALSE(f.s.capture_status().group_open);
    mark.cancel();  // a second cancel does nothing
    KEEL_TESTING_REQUIRE_ERROR((void)mark.end(), errc::invalid_state, "already ended");
    capture.cancel();
    CHECK_FALSE(capture.active());
    CHECK_FALSE(f.s.is_capturing());
    KEEL_TESTING_REQUIRE_ERROR((void)capture.end(), errc::invalid_state, "already ended");
  }
  f.capture(1.0f);
  {
    update_scope update{f.u, f.group};
    CHECK(update.active());
    CHECK(update.stream().native_handle() == f.u.native_handle());
    F::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
    update.cancel();
    CHECK_FALSE(update.active());
    CHECK_FALSE(f.u.capture_status().updating);
    KEEL_TESTING_REQUIRE_ERROR(update.end(), errc::invalid_state, "already ended");
  }
  f.u.synchronize();
  CHECK(f.run() == 2.0f);  // the cancelled update changed nothing
  {
    update_scope update{f.u, f.group};
    F::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
    update.end();
    CHECK_FALSE(update.active());
  }
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
  CHECK(reports.taken().empty());  // end() and cancel() report nothing
}

template <class F>
void scopes_a_capture_scope_left_without_end_discards_the_capture_and_reports_it() {
  KEEL_TESTING_USING_ALL(F);
  stream s{dev};
  recorded_reports reports;
  for (leave how : {leave::early_return, leave::exception}) {
    int ran = 0;
    leave_by(how, [&](auto leave_now) {
      capture_scope capture{s};
      s.launch_host([&] { ++ran; });
      leave_now();
    });
    CHECK_FALSE(s.is_capturing());
    check_left_unfinished(reports, "keel::capture_scope", how == leave::exception);
    s.launch_host([&] { ++ran; });  // eager again
    s.synchronize();
    CHECK(ran == 1);  // the captured task never ran
  }
}

template <class F>
void scopes_a_task_group_scope_left_without_end_closes_the_group_without_a_handle_and_reports_it() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  recorded_reports reports;
  for (leave how : {leave::early_return, leave::exception}) {
    f.out = 0;
    capture_scope capture{f.s};
    leave_by(how, [&](auto leave_now) {
      task_group_scope mark{f.s};
      F::axpy(f.s, &f.out, &f.tmp, &f.other, 1.0f);
      leave_now();
    });
    CHECK_FALSE(f.s.capture_status().group_open);
    check_left_unfinished(reports, "keel::task_group_scope", how == leave::exception);
    // The capture goes on: what was marked stays in it, as a plain task.
    F::copy(f.s, &f.copied, &f.out);
    model m = capture.end();
    m.execute(f.s);
    f.s.synchronize();
    CHECK(f.out == 2.0f);
    CHECK(f.copied == 2.0f);
  }
  CHECK(reports.taken().empty());
}

template <class F>
void scopes_an_update_scope_left_without_end_abandons_the_update_never_commits_and_reports_it() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  recorded_reports reports;
  for (leave how : {leave::early_return, leave::exception}) {
    leave_by(how, [&](auto leave_now) {
      update_scope update{f.u, f.group};
      F::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
      leave_now();
    });
    CHECK_FALSE(f.u.capture_status().updating);
    check_left_unfinished(reports, "keel::update_scope", how == leave::exception);
    f.u.synchronize();
    if (keel::abandon_restores_group_v<typename F::backend>) CHECK(f.run() == 2.0f);  // not committed
  }
  f.update(3.0f);  // the group is free to update again
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
  CHECK(reports.taken().empty());
}

template <class F>
void scopes_a_concurrent_update_whose_issue_throws_abandons_the_update_without_a_report() {
  KEEL_TESTING_USING_ALL(F);
  group_fixture<F> f;
  f.capture(1.0f);
  concurrent_update fenced{dev};
  recorded_reports reports;
  CHECK_THROWS_AS(fenced.update(f.u, f.group,
                                [&](stream_ref us) {
                                  F::axpy(us, &f.out, &f.tmp, &f.other, 9.0f);
                                  throw std::runtime_error("issuing failed");
                                }),
                  std::runtime_error);
  CHECK_FALSE(f.u.capture_status().updating);
  CHECK(reports.taken().empty());  // the exception told the caller; nothing was left by mistake
  f.u.synchronize();
  if (keel::abandon_restores_group_v<typename F::backend>) CHECK(f.run() == 2.0f);
}

}  // namespace task_group_tests
/// @endcond

/**
 * @brief Registers the task-group layer's tests for fixture F, each named "<test> - <suffix>";
 * F supplies the all five layers. Tests that need asynchronous work are left out when
 * F::asynchronous is false. Call it before Catch2 runs (KEEL_BACKEND_CONFORMANCE does).
 */
template <class F>
void register_task_group_tests(const std::string& suffix) {
  KEEL_TESTING_ADD(F, task_group_tests::group_raii_checklist_every_field_after_moves,
      "task_group: RAII checklist, every field after moves", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_a_sequential_update_replaces_the_group_s_arguments,
      "task_group: a sequential update replaces the group's arguments", "[runtime][task_group]");
  KEEL_TESTING_ADD_ASYNC(F, task_group_tests::group_updates_on_a_busy_update_stream_keep_stream_order_also_when_adjacent_ones_merge,
      "task_group: updates on a busy update stream keep stream order, also when adjacent ones merge", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_replacements_must_match_the_group_in_number_and_kind,
      "task_group: replacements must match the group in number and kind", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_an_exception_leaves_the_update_and_the_stream_can_update_again,
      "task_group: an exception leaves the update, and the stream can update again", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_only_operator_launches_may_be_marked_into_a_group,
      "task_group: only operator launches may be marked into a group", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_while_a_group_is_marked_no_other_capturing_stream_may_issue_work,
      "task_group: while a group is marked, no other capturing stream may issue work", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_groups_are_marked_during_capture_and_updated_on_streams_that_are_not_capturing,
      "task_group: groups are marked during capture and updated on streams that are not capturing", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_one_update_of_a_group_at_a_time_a_second_is_an_error_never_a_race,
      "task_group: one update of a group at a time, a second is an error, never a race", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_updating_a_group_whose_model_was_destroyed_is_an_error,
      "task_group: updating a group whose model was destroyed is an error", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_a_concurrent_update_through_an_external_event_takes_effect_in_the_running_execution,
      "task_group: a concurrent update through an external event takes effect in the running execution", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_the_split_model_alternative_re_captures_only_the_changing_part,
      "task_group: the split-model alternative re-captures only the changing part", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::group_every_fenced_iteration_sees_the_update_issued_for_it,
      "task_group: every fenced iteration sees the update issued for it", "[runtime][task_group]");
  KEEL_TESTING_ADD(F, task_group_tests::scopes_every_scope_has_end_cancel_active_and_stream,
      "scopes: every scope has end, cancel, active and stream, and end and cancel report nothing", "[runtime][scope]");
  KEEL_TESTING_ADD(F, task_group_tests::scopes_a_capture_scope_left_without_end_discards_the_capture_and_reports_it,
      "scopes: a capture scope left without end() discards the capture and reports an early return", "[runtime][scope]");
  KEEL_TESTING_ADD(F, task_group_tests::scopes_a_task_group_scope_left_without_end_closes_the_group_without_a_handle_and_reports_it,
      "scopes: a task group scope left without end() closes the group without a handle and reports an early return", "[runtime][scope]");
  KEEL_TESTING_ADD(F, task_group_tests::scopes_an_update_scope_left_without_end_abandons_the_update_never_commits_and_reports_it,
      "scopes: an update scope left without end() abandons the update, never commits, and reports an early return", "[runtime][scope]");
  KEEL_TESTING_ADD(F, task_group_tests::scopes_a_concurrent_update_whose_issue_throws_abandons_the_update_without_a_report,
      "scopes: a concurrent update whose issue throws abandons the update without a report", "[runtime][scope]");
  KEEL_TESTING_ADD(F, task_group_tests::stress_random_executions_and_updates_across_streams,
      "stress: random executions and updates across streams", "[runtime][stress]");
}

} KEEL_END_NAMESPACE  // namespace keel::testing
