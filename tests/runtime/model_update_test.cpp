// SPDX-License-Identifier: Apache-2.0
// Per-task and whole-model updates: a kernel
// task's arguments, a copy's addresses, disabling a task, committed in
// stream order; a model updated from another capture of the same topology.
// Each rule is broken once, its error checked, and the model shown to
// execute with its old parameters. Typed arguments on both backends (on
// ACL an operator task takes a new executor's plan), copies on the host
// backend (" - host"); disabling and update_model on both (" - acl": over
// aclmdlRITaskDisable / GetParams / SetParams / aclmdlRIUpdate).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "keel/runtime/model_update.hpp"
#include "test_support.hpp"

using keel::errc;
using keel::task_type;
using keel_test::matches;

namespace {

struct failure {
  std::error_code code;
  std::string what = "no error";
};
template <class F>
failure error_of(F&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

constexpr keel::kernel_kind other_kind{"other"};

// out = tmp + alpha * other, then copy out into copied; captured on s.
struct captured {
  keel::host::stream s{keel_test::test_device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f, copied = 0.0f;
  keel::host::model m;
  explicit captured(float alpha = 1.0f) {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, alpha);
    s.copy_async(&copied, &out, sizeof(float), keel::copy_kind::host_to_host);
    m = capture.end();
  }
  float run() {
    out = copied = 0.0f;
    m.execute(s);
    s.synchronize();
    return out;
  }
  keel::task_info kernel() const { return m.tasks().at(0); }
  keel::task_info copy() const { return m.tasks().at(1); }
};

}  // namespace

TEST_CASE("task update: new kernel arguments take effect at end(), and tasks() reports them - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  REQUIRE(c.run() == 3.0f);
  keel::host::task_update_scope update{c.m};
  update.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, 5.5f);
  CHECK(c.run() == 3.0f);  // staged, not committed
  update.end(c.s);
  CHECK(c.run() == 12.0f);
  CHECK(c.copied == 12.0f);
  const keel::task_info k = c.kernel();
  REQUIRE(k.kernel.argument_count == 4);
  CHECK(k.kernel.arguments[3].floating == 5.5);
}

TEST_CASE("task update: arguments of another type are refused naming the argument, the model runs as before - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  keel::host::task_update_scope update{c.m};
  auto e = error_of([&] { update.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, 5.5); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("set_arguments") && Catch::Contains("argument 3 is float") &&
                           Catch::Contains("passed double"));
  e = error_of([&] { update.set_arguments(c.kernel(), &c.out, &c.tmp, 5.5f); });
  CHECK_THAT(e.what, Catch::Contains("takes 4 arguments and the update passed 3"));
  update.end(c.s);
  CHECK(c.run() == 3.0f);
}

TEST_CASE("task update: a task named wrongly, or of a task group, is refused - host", "[runtime][model_update]") {
  keel::host::stream s{keel_test::test_device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  keel::host::model m;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{s};
    keel::host::task_group_scope mark{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    group = mark.end();
    m = capture.end();
  }
  const keel::task_info in_group = m.tasks().at(0);
  keel::host::task_update_scope update{m};
  auto e = error_of([&] { update.set_arguments(in_group, &out, &tmp, &other, 2.0f); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("belongs to task group") && Catch::Contains("update_scope"));
  keel::task_info missing = in_group;
  missing.sequence = 7;
  e = error_of([&] { update.disable(missing); });
  CHECK_THAT(e.what, Catch::Contains("has no task at stream 0, sequence 7"));
  keel::task_info wrong_kind = in_group;
  wrong_kind.kernel.kind = other_kind;
  e = error_of([&] { update.disable(wrong_kind); });
  CHECK_THAT(e.what, Catch::Contains("not the kernel task named"));
  update.cancel();
  out = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}

TEST_CASE("task update: one update of a model at a time, committed on a stream that is not capturing - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  {
    keel::host::task_update_scope first{c.m};
    auto e = error_of([&] { keel::host::task_update_scope second{c.m}; });
    CHECK(matches(e.code, errc::update_violation));
    CHECK_THAT(e.what, Catch::Contains("already being updated"));
    e = error_of([&] { keel::update_model(c.m.ref(), captured(2.0f).m.ref(), c.s.ref()); });
    CHECK(matches(e.code, errc::update_violation));
    first.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, 9.0f);
    keel::host::stream capturing{keel_test::test_device()};
    keel::host::capture_scope capture{capturing};
    e = error_of([&] { first.end(capturing); });
    CHECK(matches(e.code, errc::capture_violation));
    capture.cancel();
    CHECK_FALSE(first.active());
  }
  CHECK(c.run() == 3.0f);                       // abandoned: unchanged
  keel::host::task_update_scope again{c.m};  // and the model can be updated again
  again.cancel();
}

TEST_CASE("task update: the commit is in stream order: executions issued before it run the old arguments - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  keel_test::gate g;
  std::vector<float> seen;
  g.hold(c.s.ref());
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out); });
  keel::host::task_update_scope update{c.m};
  update.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, 5.5f);
  update.end(c.s);
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out); });
  g.open();
  c.s.synchronize();
  CHECK(seen == std::vector<float>{3.0f, 12.0f});
}

// The commit path reuses what an earlier commit left behind: the table
// before the last one (the spare) and the replacement kernels it holds,
// rebuilt in place while at most four changes are staged. Every mix of
// that reuse with what can break it (an abandoned update after staging, a
// commit queued behind work on a busy stream, more than four changes at
// once, a whole-model update in between, a disabled task, a kernel_task
// update written in place or committed) must leave each
// execution running exactly the arguments last committed.
TEST_CASE("task update: reused tables and replacements run the last committed arguments, whatever the sequence - host",
          "[runtime][model_update]") {
  constexpr int kernels = 6;
  keel::host::stream s{keel_test::test_device()}, u{keel_test::test_device()};
  float tmp = 1.0f, other = 2.0f;
  float out[kernels] = {};
  auto capture_with = [&](float alpha) {
    keel::host::capture_scope capture{s};
    for (int k = 0; k < kernels; ++k) s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out[k], &tmp, &other, alpha);
    return capture.end();
  };
  keel::host::model m = capture_with(1.0f);
  keel::host::model source = capture_with(7.0f);
  const std::vector<keel::task_info> tasks = m.tasks();
  std::vector<float> alpha(kernels, 1.0f);  // what each task runs, as committed
  std::vector<bool> enabled(kernels, true);
  auto check_run = [&](int step) {
    for (float& o : out) o = -1.0f;
    m.execute(s);
    s.synchronize();
    for (int k = 0; k < kernels; ++k) {
      INFO("step " << step << ", task " << k);
      CHECK(out[k] == (enabled[k] ? tmp + alpha[k] * other : -1.0f));
    }
  };
  // First a fixed sequence: one task set, disabled, then set again and
  // again (the last commits reuse the table that had it disabled).
  for (int step = 0; step < 6; ++step) {
    keel::host::task_update_scope update{m};
    if (step == 1) {
      update.disable(tasks[2]);
      enabled[2] = false;
    } else {
      update.set_arguments(tasks[2], &out[2], &tmp, &other, 3.0f + static_cast<float>(step));
      alpha[2] = 3.0f + static_cast<float>(step);
      enabled[2] = true;
    }
    update.end(u);
    u.synchronize();
    check_run(-step);
  }
  std::uint32_t seed = 12345;
  auto next = [&](std::uint32_t n) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % n;
  };
  // kernel_task handles of the same tasks: their updates are written in
  // place when nothing else holds what they change, else committed.
  std::vector<keel::host::kernel_task<float*, float*, float*, float>> handles;
  for (int k = 0; k < kernels; ++k) handles.emplace_back(m, tasks[k]);
  for (int step = 0; step < 400; ++step) {
    const std::uint32_t what = next(13);
    if (what >= 10) {  // one kernel_task update, on an idle stream or (12) a held one
      const std::uint32_t k = next(kernels);
      const float a = static_cast<float>(step * 10);
      keel_test::gate g;
      if (what == 12) g.hold(u.ref());
      handles[k].update(u, &out[k], &tmp, &other, a);
      if (what == 12) {
        check_run(step);  // queued behind the held work
        g.open();
      }
      u.synchronize();
      alpha[k] = a;
      enabled[k] = true;
    } else if (what == 0) {  // a whole-model update from the other capture
      keel::update_model(m.ref(), source.ref(), u.ref());
      u.synchronize();
      std::fill(alpha.begin(), alpha.end(), 7.0f);
      std::fill(enabled.begin(), enabled.end(), true);
    } else if (what == 1) {  // staged, then abandoned: nothing changes
      keel::host::task_update_scope update{m};
      update.set_arguments(tasks[next(kernels)], &out[0], &tmp, &other, -100.0f);
      update.cancel();
    } else {
      // one change (mostly), or up to six at once (past the four rebuilt in place)
      const std::uint32_t changes = what < 8 ? 1 : 1 + next(kernels);
      const bool busy = what == 7;
      keel_test::gate g;
      if (busy) g.hold(u.ref());
      keel::host::task_update_scope update{m};
      std::vector<float> staged = alpha;
      std::vector<bool> staged_enabled = enabled;
      for (std::uint32_t c = 0; c < changes; ++c) {
        const std::uint32_t k = what == 9 ? c % kernels : next(kernels);
        if (next(8) == 0) {
          update.disable(tasks[k]);
          staged_enabled[k] = false;
        } else {
          const float a = static_cast<float>(step * 10 + static_cast<int>(c));
          update.set_arguments(tasks[k], &out[k], &tmp, &other, a);
          staged[k] = a;
          staged_enabled[k] = true;
        }
      }
      update.end(u);
      if (busy) {
        check_run(step);  // queued behind the held work: the model still runs what it ran
        g.open();
      }
      u.synchronize();
      alpha = staged;
      enabled = staged_enabled;
    }
    check_run(step);
  }
}

// A commit on a busy stream queues its swap, which the stream may run
// before end() returns: the commit must hold what it keeps of the last
// table before queueing (under AddressSanitizer a late hold is a
// use-after-free). Commits alternate between a draining stream and an idle one.
TEST_CASE("task update: commits whose queued swap runs at once keep the tables they reuse - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  keel::host::stream busy{keel_test::test_device()}, idle{keel_test::test_device()};
  float last = 1.0f;
  for (int i = 0; i < 20000; ++i) {
    busy.launch_host([] {});  // the stream has work: the commit queues its swap behind it
    keel::host::task_update_scope update{c.m};
    last = static_cast<float>(i % 7);
    update.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, last);
    update.end(i % 3 == 0 ? idle : busy);
  }
  busy.synchronize();
  CHECK(c.run() == 1.0f + 2.0f * last);
}

TEST_CASE("task update: a copy takes new addresses (same direction only) and a task can be disabled - host",
          "[runtime][model_update]") {
  captured c(1.0f);
  float elsewhere = 0.0f;
  {
    keel::host::task_update_scope update{c.m};
    auto e = error_of([&] {
      keel::task_info t = c.copy();
      t.copy.kind = keel::copy_kind::device_to_host;
      update.set_copy(t, &elsewhere, &c.out, sizeof(float));
    });
    CHECK(matches(e.code, errc::invalid_parameter));
    CHECK_THAT(e.what, Catch::Contains("keeps its direction"));
    update.set_copy(c.copy(), &elsewhere, &c.out, sizeof(float));
    update.end(c.s);
  }
  CHECK(c.run() == 3.0f);
  CHECK(elsewhere == 3.0f);
  CHECK(c.copied == 0.0f);
  CHECK(c.copy().copy.dst == &elsewhere);
  {
    keel::host::task_update_scope update{c.m};
    update.disable(c.kernel());
    update.end(c.s);
  }
  CHECK(c.run() == 0.0f);  // the kernel no longer runs
  CHECK(c.kernel().disabled);
  {
    keel::host::task_update_scope update{c.m};
    update.set_arguments(c.kernel(), &c.out, &c.tmp, &c.other, 2.0f);  // enables it again
    update.end(c.s);
  }
  CHECK(c.run() == 5.0f);
  CHECK_FALSE(c.kernel().disabled);
}

TEST_CASE("task update: event tasks cannot be disabled - host", "[runtime][model_update]") {
  keel::host::stream s{keel_test::test_device()};
  keel::host::event ev{keel_test::test_device(), keel::event_flags::external};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    s.reset_event(ev);
    m = capture.end();
  }
  keel::host::task_update_scope update{m};
  auto e = error_of([&] { update.disable(m.tasks().at(1)); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("event reset task: only kernels and copies are disabled"));
  update.end(s);
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}

TEST_CASE("update_model: every task takes the source's parameters, the source still runs its own - host",
          "[runtime][model_update]") {
  captured target(1.0f);
  keel::host::stream s{keel_test::test_device()};
  float tmp = 10.0f, other = 1.0f, out = 0.0f, copied = 0.0f;
  keel::host::model source;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 3.0f);
    s.copy_async(&copied, &out, sizeof(float), keel::copy_kind::host_to_host);
    source = capture.end();
  }
  keel::update_model(target.m.ref(), source.ref(), target.s.ref());
  target.m.execute(target.s);
  target.s.synchronize();
  CHECK(out == 13.0f);
  CHECK(copied == 13.0f);
  CHECK(target.kernel().kernel.arguments[3].floating == 3.0);
  source = keel::host::model{};  // the target keeps what it runs alive
  out = 0.0f;
  target.m.execute(target.s);
  target.s.synchronize();
  CHECK(out == 13.0f);
}

TEST_CASE("update_model: models updated from each other (two, or a ring of three) are destroyed once dropped - host",
          "[runtime][model_update]") {
  // Each model holds a token in its host task: the token lives as long as
  // something keeps that model's tasks. A model that runs another's tasks
  // keeps them, never the other model: no cycle of updates leaks.
  keel::host::stream s{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  for (const std::size_t n : {std::size_t{2}, std::size_t{3}}) {
    std::vector<std::weak_ptr<int>> watched;
    {
      std::vector<keel::host::model> models;
      for (std::size_t i = 0; i < n; ++i) {
        auto token = std::make_shared<int>(0);
        watched.push_back(token);
        keel::host::capture_scope capture{s};
        s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, static_cast<float>(i + 1));
        s.launch_host([token] { ++*token; });
        models.push_back(capture.end());
      }
      for (std::size_t i = 0; i < n; ++i) keel::update_model(models[i].ref(), models[(i + 1) % n].ref(), s.ref());
      models[0].execute(s);  // runs model 1's tasks (with three: model 2 runs model 0's, which are model 1's)
      s.synchronize();
      CHECK(out == 3.0f);
      CHECK(*watched[1].lock() == 1);
    }
    s.synchronize();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("model " << i << " of " << n);
      CHECK(watched[i].expired());
    }
  }
}

// Two views of one kernel name: the same kind, though not the same pointer.
constexpr char axpy_name_elsewhere[] = "axpy";
constexpr keel::kernel_kind axpy_kind_elsewhere{std::string_view(axpy_name_elsewhere, 4)};

TEST_CASE("update_model: a kind named by another view of its name still matches, and later mismatches are named - host",
          "[runtime][model_update]") {
  // The host backend compares two models' packed shapes first, kernel kinds
  // by their views; a kind named elsewhere falls back to the task-by-task
  // check, which compares names, and a mismatch is named there whatever
  // shapes earlier updates made.
  REQUIRE(axpy_kind_elsewhere.name().data() != keel_test::axpy_kind.name().data());
  captured target(1.0f);
  keel::host::stream s{keel_test::test_device()};
  float tmp = 10.0f, other = 1.0f, out = 0.0f, copied = 0.0f;
  const auto capture_axpy = [&](keel::kernel_kind kind, float alpha) {
    keel::host::capture_scope capture{s};
    s.launch(kind, &keel_test::axpy_kernel, &out, &tmp, &other, alpha);
    s.copy_async(&copied, &out, sizeof(float), keel::copy_kind::host_to_host);
    return capture.end();
  };
  keel::host::model elsewhere = capture_axpy(axpy_kind_elsewhere, 3.0f);
  keel::host::model same_view = capture_axpy(keel_test::axpy_kind, 5.0f);
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    keel::update_model(target.m.ref(), elsewhere.ref(), target.s.ref());
    target.m.execute(target.s);
    target.s.synchronize();
    CHECK(out == 13.0f);
    CHECK(target.kernel().kernel.kind == keel_test::axpy_kind);
    keel::update_model(target.m.ref(), same_view.ref(), target.s.ref());
    target.m.execute(target.s);
    target.s.synchronize();
    CHECK(out == 15.0f);
  }
  keel::host::model reversed;
  {
    keel::host::capture_scope capture{s};
    s.copy_async(&copied, &out, sizeof(float), keel::copy_kind::host_to_host);
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 7.0f);
    reversed = capture.end();
  }
  const auto e = error_of([&] { keel::update_model(target.m.ref(), reversed.ref(), target.s.ref()); });
  CHECK(matches(e.code, errc::update_violation));
  CHECK_THAT(e.what, Catch::Contains("first mismatching task is stream 0, sequence 0: expected kernel 'axpy', found copy"));
  target.m.execute(target.s);  // unchanged: still the last source's parameters
  target.s.synchronize();
  CHECK(out == 15.0f);
}

TEST_CASE("update_model: a mismatch names the first mismatching task and leaves the model unchanged - host",
          "[runtime][model_update]") {
  captured target(1.0f);
  keel::host::stream s{keel_test::test_device()};
  float x = 0.0f, y = 0.0f;
  keel::host::model other_kernel, shorter;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &x, &x, &x, 3.0f);
    s.launch(keel_test::copy_kind, &keel_test::copy_kernel, &y, &x);
    other_kernel = capture.end();
  }
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &x, &x, &x, 3.0f);
    shorter = capture.end();
  }
  auto e = error_of([&] { keel::update_model(target.m.ref(), other_kernel.ref(), target.s.ref()); });
  CHECK(matches(e.code, errc::update_violation));
  CHECK_THAT(e.what, Catch::Contains("first mismatching task is stream 0, sequence 1: expected copy, found kernel 'copy'"));
  e = error_of([&] { keel::update_model(target.m.ref(), shorter.ref(), target.s.ref()); });
  CHECK_THAT(e.what, Catch::Contains("stream 0, sequence 1: expected copy, found no task"));
  e = error_of([&] { keel::update_model(target.m.ref(), target.m.ref(), target.s.ref()); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK(target.run() == 3.0f);
  CHECK(target.copied == 3.0f);
  keel::host::task_update_scope free_again{target.m};  // a refusal gave the claim back
  free_again.cancel();
}

TEST_CASE("task update: updates race executions on other streams, each execution runs one whole set - host",
          "[runtime][model_update][concurrency]") {
  keel::host::stream s{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f;
  constexpr int runners = 1;
  float outs[runners] = {};
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &outs[0], &tmp, &other, 1.0f);
    m = capture.end();
  }
  const keel::task_info axpy = m.tasks().at(0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<keel::host::stream> streams;
  for (int i = 0; i < runners; ++i) streams.emplace_back(keel_test::test_device());
  std::atomic<int> bad{0};
  for (int i = 0; i < runners; ++i) {
    threads.emplace_back([&, i] {
      std::vector<float> seen;
      int rounds = 0;
      while (!stop.load() || rounds < 10) {
        m.execute(streams[i]);
        streams[i].launch_host([&] { seen.push_back(outs[0]); });
        streams[i].synchronize();
        ++rounds;
      }
      (void)outs[i];
      for (float v : seen)
        if (v != 0.0f && (v < 2.0f || v > 101.0f)) bad.fetch_add(1);
    });
  }
  keel::host::stream u{keel_test::test_device()};
  for (int k = 1; k <= 100; ++k) {
    keel::host::task_update_scope update{m};
    update.set_arguments(axpy, &outs[0], &tmp, &other, static_cast<float>(k));
    update.end(u);
  }
  stop.store(true);
  for (auto& t : threads) t.join();
  u.synchronize();
  CHECK(bad.load() == 0);
  outs[0] = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(outs[0] == 101.0f);
}

// The model's update claim, its table lock and its introspection lock are
// self-biased (keel/core/biased_lock.hpp): the thread that commits in a
// streak (more than the 256 sections that make it the owner) enters them with
// plain stores, and every other thread breaks in. Here it commits 5,000
// updates while a stream executes the model (the table), a thread reads
// tasks() (the introspection lists) and another tries to claim the model:
// claims stay exclusive, every execution runs one committed alpha, and every
// read shows a whole task.
TEST_CASE("task update: a committing thread that owns the model's locks and threads breaking in stay exclusive - host",
          "[runtime][model_update][concurrency]") {
  keel::host::stream s{keel_test::test_device()}, runner{keel_test::test_device()}, u{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  const keel::task_info axpy = m.tasks().at(0);
  constexpr int commits = 5000;
  std::atomic<bool> stop{false};
  std::atomic<int> holders{0}, bad{0}, claimed_elsewhere{0}, refused{0};
  std::thread executor([&] {
    std::vector<float> seen;
    while (!stop.load()) {
      m.execute(runner);
      runner.launch_host([&] { seen.push_back(out); });
      runner.synchronize();
    }
    for (float v : seen)
      if (v < 2.0f || v > commits + 1.0f) ++bad;
  });
  std::thread reader([&] {
    while (!stop.load()) {
      const std::vector<keel::task_info> tasks = m.tasks();
      if (tasks.size() != 1 || tasks[0].type != keel::task_type::kernel || tasks[0].kernel.argument_count != 4) ++bad;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::thread claimer([&] {
    while (!stop.load()) {
      try {
        keel::host::task_update_scope update{m};
        if (holders.fetch_add(1) != 0) ++bad;
        ++claimed_elsewhere;
        holders.fetch_sub(1);
        update.cancel();
      } catch (const keel::error& e) {
        if (matches(e.code(), keel::errc::update_violation)) {
          ++refused;
        } else {
          ++bad;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  int committed = 0;
  for (int k = 1; k <= commits; ++k) {
    try {
      keel::host::task_update_scope update{m};
      if (holders.fetch_add(1) != 0) ++bad;
      update.set_arguments(axpy, &out, &tmp, &other, static_cast<float>(k));
      holders.fetch_sub(1);
      update.end(u);
      ++committed;
    } catch (const keel::error& e) {
      if (!matches(e.code(), keel::errc::update_violation)) ++bad;
    }
  }
  u.synchronize();
  stop.store(true);
  for (std::thread* t : {&executor, &reader, &claimer}) t->join();
  INFO("committed " << committed << ", claimed elsewhere " << claimed_elsewhere << ", refused " << refused);
  CHECK(bad.load() == 0);
  CHECK(committed > commits / 2);
  m.execute(s);
  s.synchronize();
  CHECK(out >= 2.0f);
  CHECK(out <= commits + 1.0f);
}

// ---- both backends: what ACL's aclmdlRITaskDisable / SetParams / Update give ----

namespace {

// Two axpy tasks (out = tmp + alpha * other, then out2 = out + alpha2 * other) on one stream.
template <class F>
struct two_kernels {
  typename F::stream s{F::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f, out2 = 0.0f;
  typename F::model m;
  two_kernels(float alpha, float alpha2, bool second_is_copy = false) {
    typename F::capture_scope capture{s};
    F::axpy(s, &out, &tmp, &other, alpha);
    if (second_is_copy) {
      F::copy(s, &out2, &out);
    } else {
      F::axpy(s, &out2, &out, &other, alpha2);
    }
    m = capture.end();
  }
  std::pair<float, float> run() {
    out = out2 = 0.0f;
    m.execute(s);
    s.synchronize();
    return {out, out2};
  }
  keel::task_info kernel(std::size_t i) const {
    std::size_t seen = 0;
    for (const keel::task_info& t : m.tasks())
      if (t.type == task_type::kernel && seen++ == i) return t;
    FAIL("the model has no kernel task " << i);
    return {};
  }
};

}  // namespace

KEEL_BACKEND_TEST("update_model: the target runs the source's parameters, task by task", "[runtime][model_update]") {
  two_kernels<TestType> target(1.0f, 1.0f), source(3.0f, 10.0f);
  REQUIRE(target.run() == std::make_pair(2.0f, 3.0f));
  keel::update_model(target.m.ref(), source.m.ref(), target.s.ref());
  target.out = target.out2 = source.out = source.out2 = 0.0f;
  target.m.execute(target.s);
  target.s.synchronize();
  // The target's tasks now read and write what the source's read and write.
  CHECK(source.out == 4.0f);
  CHECK(source.out2 == 14.0f);
  CHECK(target.out == 0.0f);
}

KEEL_BACKEND_TEST("update_model: a mismatch names the first mismatching task, the target runs as before",
                  "[runtime][model_update]") {
  two_kernels<TestType> target(1.0f, 1.0f), source(3.0f, 0.0f, true);
  auto e = error_of([&] { keel::update_model(target.m.ref(), source.m.ref(), target.s.ref()); });
  CHECK(matches(e.code, errc::update_violation));
  CHECK_THAT(e.what, Catch::Contains("the first mismatching task is stream 0, sequence " +
                                     std::to_string(target.kernel(1).sequence) + ": expected kernel '") &&
                         Catch::Contains("found kernel '"));
  CHECK(target.run() == std::make_pair(2.0f, 3.0f));
}

// Found by the differential test: the host backend left conditional tasks
// out of tasks(), so update_model took a source whose IF held other bodies
// (and ran the source's condition) where ACL refuses the conditional task.
KEEL_BACKEND_TEST("update_model: a conditional task is not replaced, the update is refused and the target runs as before",
                  "[runtime][model_update][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream side{dev};
  float tmp = 1.0f, one = 1.0f, out = 0.0f, then_target = 0.0f, then_source = 0.0f;
  auto capture_if = [&](float* then_out, float alpha) {
    typename TestType::stream s{dev};
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1);
    TestType::axpy(s, &out, &tmp, &one, alpha);
    auto body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body};
      TestType::axpy(side, then_out, then_out, &one, 1.0f);
      into.end();
    }
    return capture.end();
  };
  model target = capture_if(&then_target, 1.0f);
  model source = capture_if(&then_source, 5.0f);
  bool listed = false;
  for (const keel::task_info& t : target.tasks()) listed = listed || t.type != task_type::kernel;
  CHECK(listed);  // the conditional task is in the list, not only the kernel
  stream s{dev};
  auto e = error_of([&] { keel::update_model(target.ref(), source.ref(), s.ref()); });
  CHECK(matches(e.code, errc::update_violation));
  CHECK_THAT(e.what, Catch::Contains("the model is unchanged"));
  target.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);  // the target's own alpha
  CHECK(then_target == 1.0f);
  CHECK(then_source == 0.0f);
}

// Found by the differential test: the host backend listed no task of a
// built model, so update_model between two built models swapped in the
// source's whole program where ACL refuses (its streams and control tasks).
KEEL_BACKEND_TEST("update_model: a built model's tasks are not replaced, the update is refused and the target runs as before",
                  "[runtime][model_update][built_model]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  float tmp = 1.0f, one = 1.0f, out = 0.0f;
  std::vector<stream> bound;
  auto build = [&](float alpha) {
    bound.push_back(keel::make_persistent_stream<B>(dev));
    keel::basic_model_builder<B> builder{dev};
    builder.bind(bound.back(), keel::bound_stream::head);
    TestType::axpy(bound.back(), &out, &tmp, &one, alpha);
    builder.end_task(bound.back());
    return builder.end();
  };
  model target = build(1.0f);
  model source = build(5.0f);
  CHECK_FALSE(target.streams().empty());
  stream s{dev};
  auto e = error_of([&] { keel::update_model(target.ref(), source.ref(), s.ref()); });
  CHECK(matches(e.code, errc::update_violation));
  CHECK_THAT(e.what, Catch::Contains("the model is unchanged"));
  target.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);  // the target's own alpha
}

KEEL_BACKEND_TEST("task update: a disabled kernel no longer runs, one update of a model at a time",
                  "[runtime][model_update]") {
  two_kernels<TestType> c(1.0f, 1.0f);
  {
    typename keel::basic_task_update_scope<typename TestType::backend> update{c.m};
    auto e = error_of([&] { typename keel::basic_task_update_scope<typename TestType::backend> second{c.m}; });
    CHECK(matches(e.code, errc::update_violation));
    update.disable(c.kernel(1));
    CHECK(c.run() == std::make_pair(2.0f, 3.0f));  // staged only
    update.end(c.s);
  }
  CHECK(c.run() == std::make_pair(2.0f, 0.0f));
}

namespace {

// A kernel_task of two_kernels' second axpy, and its update to alpha, as
// each backend's launch stored it (the host: the kernel's own arguments;
// ACL: run_on's plan and workspace, the plan a new executor's).
template <class F>
struct axpy_updates;
template <>
struct axpy_updates<host> {
  using task = keel::host::kernel_task<float*, const float*, const float*, float>;
  using wrong = keel::host::kernel_task<float*, const float*, const float*, double>;
  static void update(task& t, host::stream_ref u, two_kernels<host>& c, float alpha) {
    t.update(u, &c.out2, &c.out, &c.other, alpha);
  }
};
#ifdef KEEL_ACL_EMULATION_DIR
template <>
struct axpy_updates<acl> {
  using plan = std::shared_ptr<const keel::acl::aclnn_operators::plan_type>;
  using task = keel::acl::kernel_task<plan, void*>;
  using wrong = keel::acl::kernel_task<plan, float>;
  static void update(task& t, acl::stream_ref u, two_kernels<acl>& c, float alpha) {
    auto ex = keel::acl::prepare_add(acl::device(), acl::one(&c.out), acl::one(&c.other), keel::ops::scalar(alpha),
                                     acl::one(&c.out2));
    void* const no_workspace = nullptr;
    t.update(u, ex.plan(), no_workspace);
  }
};
#endif

}  // namespace

KEEL_BACKEND_TEST("kernel task: update() commits in the stream's order, other types and a second updater are refused",
                  "[runtime][model_update][kernel_task]") {
  using U = axpy_updates<TestType>;
  two_kernels<TestType> c(1.0f, 1.0f);
  typename TestType::stream u{TestType::device()};
  auto e = error_of([&] { typename U::wrong t{c.m, c.kernel(1)}; });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("keel::kernel_task") && Catch::Contains("the kernel_task was made for"));
  typename U::task second{c.m, c.kernel(1)};
  for (float alpha : {3.0f, 9.0f, 4.0f}) {
    U::update(second, u, c, alpha);
    u.synchronize();
    CHECK(c.run() == std::make_pair(2.0f, 2.0f + alpha));
  }
  // On the stream the model runs on: the execution issued before runs the
  // old alpha (ACL's commit waits for it; the host backend queues the
  // commit, a held stream shows that in a test above).
  std::vector<float> seen;
  c.out = c.out2 = 0.0f;
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out2); });
  U::update(second, c.s, c, 6.0f);
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out2); });
  c.s.synchronize();
  CHECK(seen == std::vector<float>{6.0f, 8.0f});
  {
    keel::basic_task_update_scope<typename TestType::backend> other{c.m};
    e = error_of([&] { U::update(second, u, c, 1.0f); });
    CHECK(matches(e.code, errc::update_violation));
    other.cancel();
  }
  CHECK(c.run() == std::make_pair(2.0f, 8.0f));
}

// A kernel_task and an open task_update_scope name a model they do not own;
// used after the model went they refuse with invalid_handle (they hold its
// life flag) instead of touching the freed model, and the scope's cancel
// and destruction do nothing.
KEEL_BACKEND_TEST("kernel task: a kernel_task or an open task_update_scope used after its model went is refused",
                  "[runtime][model_update][kernel_task]") {
  using U = axpy_updates<TestType>;
  two_kernels<TestType> c(1.0f, 1.0f);
  typename TestType::stream u{TestType::device()};
  typename U::task task{c.m, c.kernel(1)};
  const keel::task_info first = c.kernel(0);
  {
    keel::basic_task_update_scope<typename TestType::backend> scope{c.m};
    c.m.reset();
    auto e = error_of([&] { scope.disable(first); });
    CHECK(matches(e.code, errc::invalid_handle));
    CHECK_THAT(e.what, Catch::Contains("keel::task_update_scope::disable") && Catch::Contains("was destroyed"));
    e = error_of([&] { scope.end(u); });
    CHECK(matches(e.code, errc::invalid_handle));
    CHECK(scope.active());
    scope.cancel();  // nothing to abandon: the update went with the model
    CHECK_FALSE(scope.active());
  }
  auto e = error_of([&] { U::update(task, u, c, 2.0f); });
  CHECK(matches(e.code, errc::invalid_handle));
  CHECK_THAT(e.what, Catch::Contains("keel::kernel_task::update") && Catch::Contains("kernel_task (task ") &&
                         Catch::Contains("was destroyed"));
  u.synchronize();
}

#ifdef KEEL_ACL_EMULATION_DIR
// run_on is a launch of (plan, workspace): an operator task takes another
// executor's plan, typed, through aclmdlRITaskGetParams / SetParams / Update.
TEST_CASE("task update: an operator task takes a new executor's plan, other argument types are refused - acl",
          "[runtime][model_update]") {
  two_kernels<acl> c(1.0f, 1.0f);
  const keel::task_info add = c.kernel(0);
  REQUIRE(add.kernel.argument_count == 2);  // the plan and the workspace, as run_on launched them
  auto alpha5 = keel::acl::prepare_add(acl::device(), acl::one(&c.tmp), acl::one(&c.other), keel::ops::scalar(5.0f),
                                       acl::one(&c.out));
  void* const no_workspace = nullptr;
  {
    keel::acl::task_update_scope update{c.m};
    auto e = error_of([&] { update.set_arguments(add, alpha5.plan(), 5.0f); });
    CHECK(matches(e.code, errc::invalid_parameter));
    CHECK_THAT(e.what, Catch::Contains("set_arguments") && Catch::Contains("argument 1 is ") &&
                           Catch::Contains("passed float (4 bytes)") && Catch::Contains("the task is unchanged"));
    e = error_of([&] { update.set_arguments(add, alpha5.plan()); });
    CHECK_THAT(e.what, Catch::Contains("takes 2 arguments and the update passed 1"));
    CHECK(c.run() == std::make_pair(2.0f, 3.0f));  // nothing staged by the refusals
    update.set_arguments(add, alpha5.plan(), no_workspace);
    CHECK(c.run() == std::make_pair(2.0f, 3.0f));  // staged only
    update.end(c.s);
  }
  CHECK(c.run() == std::make_pair(6.0f, 7.0f));  // 1 + 5 * 1, then 6 + 1 * 1
  CHECK(c.kernel(0).kernel.argument_count == 2);
  // The executor may go: the model keeps the plan its task runs.
  alpha5 = keel::acl::executor{};
  CHECK(c.run() == std::make_pair(6.0f, 7.0f));
}

TEST_CASE("task update: a later change of the same operator task replaces the earlier, a refused scope changes nothing - acl",
          "[runtime][model_update]") {
  two_kernels<acl> c(1.0f, 1.0f);
  auto alpha3 = keel::acl::prepare_add(acl::device(), acl::one(&c.out), acl::one(&c.other), keel::ops::scalar(3.0f),
                                       acl::one(&c.out2));
  auto alpha9 = keel::acl::prepare_add(acl::device(), acl::one(&c.out), acl::one(&c.other), keel::ops::scalar(9.0f),
                                       acl::one(&c.out2));
  void* const no_workspace = nullptr;
  {
    keel::acl::task_update_scope update{c.m};
    update.set_arguments(c.kernel(1), alpha9.plan(), no_workspace);
    update.cancel();
  }
  CHECK(c.run() == std::make_pair(2.0f, 3.0f));
  {
    keel::acl::task_update_scope update{c.m};
    update.set_arguments(c.kernel(1), alpha9.plan(), no_workspace);
    update.set_arguments(c.kernel(1), alpha3.plan(), no_workspace);
    update.end(c.s);
  }
  CHECK(c.run() == std::make_pair(2.0f, 5.0f));  // 2 + 3 * 1
}

TEST_CASE("task update: kernel tasks that do not pair one to one with launches take no typed arguments - acl",
          "[runtime][model_update]") {
  acl::stream s{acl::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  acl::model m;
  {
    acl::capture_scope capture{s};
    s.launch(other_kind, [](keel::acl::launch_context&, int) {}, 1);  // a launch that issues no ACL task
    acl::axpy(s, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  keel::task_info add;
  for (const keel::task_info& t : m.tasks())
    if (t.type == task_type::kernel) add = t;
  REQUIRE(add.type == task_type::kernel);
  CHECK(add.kernel.argument_count == 0);  // keel cannot tell which launch issued it
  auto alpha5 =
      keel::acl::prepare_add(acl::device(), acl::one(&tmp), acl::one(&other), keel::ops::scalar(5.0f), acl::one(&out));
  void* const no_workspace = nullptr;
  keel::acl::task_update_scope update{m};
  auto e = error_of([&] { update.set_arguments(add, alpha5.plan(), no_workspace); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("do not pair") && Catch::Contains("the task is unchanged"));
  update.end(s);
  m.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);
}
#endif

TEST_CASE("update_model: whole-model updates race an execution in flight, each execution runs one source's tasks - host",
          "[runtime][model_update][concurrency]") {
  keel::host::stream s{keel_test::test_device()}, runner{keel_test::test_device()}, u{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  auto capture_with = [&](float alpha) {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, alpha);
    return capture.end();
  };
  keel::host::model target = capture_with(1.0f), a = capture_with(2.0f), b = capture_with(4.0f);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread executions([&] {
    int rounds = 0;
    while (!stop.load() || rounds < 10) {
      target.execute(runner);
      runner.launch_host([&] {
        if (out != 2.0f && out != 3.0f && out != 5.0f) bad.fetch_add(1);
      });
      ++rounds;
      if (rounds % 16 == 0) runner.synchronize();
    }
    runner.synchronize();
  });
  for (int k = 0; k < 200; ++k) keel::update_model(target.ref(), (k % 2 ? a : b).ref(), u.ref());
  stop.store(true);
  executions.join();
  u.synchronize();
  CHECK(bad.load() == 0);
  out = 0.0f;
  target.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);  // the last update (k = 199) was from a
}

// ---- kernel_task: one kernel task found and checked once, updated per step ----

namespace {

using axpy_task = keel::host::kernel_task<float*, float*, float*, float>;  // as captured launches it

// A kernel whose two scale arguments an update always sets equal: an
// execution that read them while an update wrote them would see two values.
void halves_kernel(keel::host::launch_context&, float* out, std::atomic<int>* torn, float a, float b) {
  if (a != b) torn->fetch_add(1, std::memory_order_relaxed);
  *out = a;
}
constexpr keel::kernel_kind halves_kind{"halves"};

}  // namespace

TEST_CASE("kernel task: update() commits new arguments, tasks() reports them, again and again - host",
          "[runtime][model_update][kernel_task]") {
  captured c(1.0f);
  keel::host::stream u{keel_test::test_device()};
  axpy_task axpy{c.m, c.kernel()};
  CHECK(axpy.task().sequence == c.kernel().sequence);
  // The first update makes the model's table, the next write in place (an
  // idle update stream, no execution running): each must run as committed.
  for (float alpha : {5.5f, 2.0f, 3.0f, -1.0f}) {
    axpy.update(u, &c.out, &c.tmp, &c.other, alpha);
    CHECK(c.run() == 1.0f + alpha * 2.0f);
    CHECK(c.copied == c.out);
    const keel::task_info k = c.kernel();
    REQUIRE(k.kernel.argument_count == 4);
    CHECK(k.kernel.arguments[3].floating == static_cast<double>(alpha));
    CHECK(k.kernel.arguments[0].address == &c.out);
    CHECK(k.kernel.arguments[3].type == "float");
  }
  // Other addresses, too: the task now writes elsewhere.
  float elsewhere = 0.0f;
  axpy.update(u, &elsewhere, &c.tmp, &c.other, 1.0f);
  c.run();
  CHECK(elsewhere == 3.0f);
}

TEST_CASE("kernel task: the commit is in stream order: executions issued before it on its stream run the old arguments - host",
          "[runtime][model_update][kernel_task]") {
  captured c(1.0f);
  axpy_task axpy{c.m, c.kernel()};
  keel::host::stream u{keel_test::test_device()};
  axpy.update(u, &c.out, &c.tmp, &c.other, 2.0f);  // a table exists: the next could be written in place
  REQUIRE(c.run() == 5.0f);
  keel_test::gate g;
  std::vector<float> seen;
  g.hold(c.s.ref());
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out); });
  axpy.update(c.s, &c.out, &c.tmp, &c.other, 5.5f);  // a busy stream: queued
  c.m.execute(c.s);
  c.s.launch_host([&] { seen.push_back(c.out); });
  g.open();
  c.s.synchronize();
  CHECK(seen == std::vector<float>{5.0f, 12.0f});
}

TEST_CASE("kernel task: an execution in flight keeps the arguments it started with, later ones run the new - host",
          "[runtime][model_update][kernel_task]") {
  keel::host::stream s{keel_test::test_device()}, u{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::atomic<bool> entered{false}, release{true};
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch_host([&] {  // an execution waits here while release is false
      entered.store(true);
      while (!release.load()) std::this_thread::yield();
    });
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  keel::task_info kernel;
  for (const keel::task_info& t : m.tasks())
    if (t.type == task_type::kernel) kernel = t;
  axpy_task axpy{m, kernel};
  axpy.update(u, &out, &tmp, &other, 2.0f);
  axpy.update(u, &out, &tmp, &other, 3.0f);  // nothing runs: written in place
  m.execute(s);
  s.synchronize();
  REQUIRE(out == 4.0f);
  // An execution holds the model's tasks when updates come on an idle
  // stream: the first must not write into what that execution runs, the
  // second may write into what the first committed.
  release.store(false);
  entered.store(false);
  out = 0.0f;
  m.execute(s);
  while (!entered.load()) std::this_thread::yield();
  axpy.update(u, &out, &tmp, &other, 7.0f);
  axpy.update(u, &out, &tmp, &other, 9.0f);
  CHECK(m.tasks().at(1).kernel.arguments[3].floating == 9.0);
  release.store(true);
  s.synchronize();
  CHECK(out == 4.0f);  // the execution ran the arguments it started with
  m.execute(s);
  s.synchronize();
  CHECK(out == 10.0f);
}

TEST_CASE("kernel task: made for other argument types, a task group's task, a missing or non-kernel task are refused - host",
          "[runtime][model_update][kernel_task]") {
  captured c(1.0f);
  auto e = error_of([&] { keel::host::kernel_task<float*, const float*, const float*, double> t{c.m, c.kernel()}; });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("keel::kernel_task") && Catch::Contains("argument 3 is float (4 bytes)") &&
                         Catch::Contains("the kernel_task was made for double (8 bytes)"));
  e = error_of([&] { keel::host::kernel_task<float*, const float*, const float*> t{c.m, c.kernel()}; });
  CHECK_THAT(e.what, Catch::Contains("takes 4 arguments and the kernel_task was made for 3"));
  e = error_of([&] { keel::host::kernel_task<float*, float*, const float*, float> t{c.m, c.kernel()}; });
  CHECK_THAT(e.what, Catch::Contains("other argument types than those given"));
  e = error_of([&] { axpy_task t{c.m, c.copy()}; });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("is a copy task, not a kernel task"));
  keel::task_info missing = c.kernel();
  missing.sequence = 9;
  e = error_of([&] { axpy_task t{c.m, missing}; });
  CHECK_THAT(e.what, Catch::Contains("has no task at stream 0, sequence 9"));
  // A task group's kernel is its updates'.
  keel::host::stream s{keel_test::test_device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  keel::host::model grouped;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{s};
    keel::host::task_group_scope mark{s};
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    group = mark.end();
    grouped = capture.end();
  }
  e = error_of([&] { axpy_task t{grouped, grouped.tasks().at(0)}; });
  CHECK_THAT(e.what, Catch::Contains("belongs to task group"));
  // Nothing changed, and the claim each refusal held is free again.
  CHECK(c.run() == 3.0f);
  axpy_task fine{c.m, c.kernel()};
  keel::host::stream u{keel_test::test_device()};
  fine.update(u, &c.out, &c.tmp, &c.other, 4.0f);
  CHECK(c.run() == 9.0f);
}

namespace {
struct launch_settings {
  float scale;
  int steps;
};
}  // namespace

TEST_CASE("kernel task: a refusal names a class-type argument by its C++ type, not as an object - host",
          "[runtime][model_update][kernel_task]") {
  keel::host::stream s{keel_test::test_device()};
  float out = 0.0f;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(other_kind, [](keel::host::launch_context&, float* o, launch_settings k) { *o = k.scale * k.steps; }, &out,
             launch_settings{2.0f, 3});
    m = capture.end();
  }
  auto e = error_of([&] { keel::host::kernel_task<float*, float> t{m, m.tasks().at(0)}; });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("argument 1 is ") && Catch::Contains("launch_settings (8 bytes)") &&
                         Catch::Contains("the kernel_task was made for float (4 bytes)") &&
                         !Catch::Contains("object ("));
  CHECK(m.tasks().at(0).kernel.arguments[1].type.find("launch_settings") != std::string_view::npos);
  keel::host::kernel_task<float*, launch_settings> fine{m, m.tasks().at(0)};
  fine.update(s, &out, launch_settings{1.5f, 2});
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}

TEST_CASE("kernel task: refused while the model is being updated, on a capturing stream, and once retyped - host",
          "[runtime][model_update][kernel_task]") {
  captured c(1.0f);
  keel::host::stream u{keel_test::test_device()};
  axpy_task axpy{c.m, c.kernel()};
  {
    keel::host::task_update_scope other_update{c.m};
    auto e = error_of([&] { axpy_task t{c.m, c.kernel()}; });
    CHECK(matches(e.code, errc::update_violation));
    CHECK_THAT(e.what, Catch::Contains("keel::kernel_task") && Catch::Contains("is already being updated"));
    e = error_of([&] { axpy.update(u, &c.out, &c.tmp, &c.other, 5.0f); });
    CHECK(matches(e.code, errc::update_violation));
    CHECK_THAT(e.what, Catch::Contains("keel::kernel_task::update"));
    other_update.cancel();
  }
  CHECK(c.run() == 3.0f);
  {
    keel::host::stream capturing{keel_test::test_device()};
    keel::host::capture_scope capture{capturing};
    auto e = error_of([&] { axpy.update(capturing, &c.out, &c.tmp, &c.other, 5.0f); });
    CHECK(matches(e.code, errc::capture_violation));
    CHECK_THAT(e.what, Catch::Contains("keel::kernel_task::update") && Catch::Contains("is capturing"));
    capture.cancel();
  }
  CHECK(c.run() == 3.0f);
  // A whole-model update from a capture whose axpy took a double: the task
  // now takes other types, which the old handle is told.
  keel::host::stream s{keel_test::test_device()};
  double alpha = 4.0;
  float out = 0.0f, copied = 0.0f;
  keel::host::model source;
  {
    keel::host::capture_scope capture{s};
    s.launch(keel_test::axpy_kind, [](keel::host::launch_context&, float* o, double a) { *o = static_cast<float>(a); },
             &out, alpha);
    s.copy_async(&copied, &out, sizeof(float), keel::copy_kind::host_to_host);
    source = capture.end();
  }
  keel::update_model(c.m.ref(), source.ref(), u.ref());
  auto e = error_of([&] { axpy.update(u, &c.out, &c.tmp, &c.other, 5.0f); });
  CHECK(matches(e.code, errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("task (stream 0, sequence 0) of model #") &&
                         Catch::Contains("other argument types than when the kernel_task was made") &&
                         Catch::Contains("the model is unchanged"));
  c.run();
  CHECK(out == 4.0f);
  // What the task takes now is found by a new handle.
  const keel::task_info retyped = c.kernel();
  CHECK(retyped.kernel.arguments[1].type == "double");
}

TEST_CASE("kernel task: a task_update_scope commits it with other changes, one of another model is refused - host",
          "[runtime][model_update][kernel_task]") {
  captured c(1.0f), d(1.0f);
  axpy_task axpy{c.m, c.kernel()}, of_d{d.m, d.kernel()};
  float elsewhere = 0.0f;
  {
    keel::host::task_update_scope update{c.m};
    auto e = error_of([&] { update.set_arguments(of_d, &c.out, &c.tmp, &c.other, 2.0f); });
    CHECK(matches(e.code, errc::invalid_parameter));
    CHECK_THAT(e.what, Catch::Contains("another model"));
    update.set_arguments(axpy, &c.out, &c.tmp, &c.other, 2.0f);
    update.set_copy(c.copy(), &elsewhere, &c.out, sizeof(float));
    CHECK(c.run() == 3.0f);  // staged only
    update.end(c.s);
  }
  CHECK(c.run() == 5.0f);
  CHECK(elsewhere == 5.0f);
  CHECK(d.run() == 3.0f);
}

// The in-place write is guarded by the table's count, taken in the table
// lock an execution starts in: updates on an idle stream race executions
// on another, most written in place, some (an execution holds the tasks)
// committed as a new table. No execution may see one argument of an update
// and the other of another (ThreadSanitizer checks the memory, the kernel
// checks the pair), and the last update is what runs at the end.
TEST_CASE("kernel task: updates written in place race executions on another stream, no execution sees a torn update - host",
          "[runtime][model_update][kernel_task][concurrency]") {
  keel::host::stream s{keel_test::test_device()}, runner{keel_test::test_device()}, u{keel_test::test_device()};
  float out = 0.0f;
  std::atomic<int> torn{0};
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch(halves_kind, &halves_kernel, &out, &torn, 0.0f, 0.0f);
    m = capture.end();
  }
  keel::host::kernel_task<float*, std::atomic<int>*, float, float> halves{m, m.tasks().at(0)};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread executions([&] {
    int rounds = 0;
    float last = 0.0f;
    while (!stop.load() || rounds < 10) {
      m.execute(runner);
      runner.synchronize();
      if (out < last) bad.fetch_add(1);  // updates only grow: an execution never runs an older one
      last = out;
      ++rounds;
    }
  });
  constexpr int updates = 3000;
  for (int k = 1; k <= updates; ++k) {
    const float v = static_cast<float>(k);
    halves.update(u, &out, &torn, v, v);
  }
  stop.store(true);
  executions.join();
  CHECK(torn.load() == 0);
  CHECK(bad.load() == 0);
  m.execute(s);
  s.synchronize();
  CHECK(out == static_cast<float>(updates));
}

// Superseded task tables go back to their model for the next commits
// (host/detail/capture_state.hpp, table_bin). A table let go after its
// model went (an execution held it) is freed, not kept: AddressSanitizer
// and LeakSanitizer check that nothing is used after the model went and
// nothing is left behind.
TEST_CASE("task update: tables an execution still holds when its model goes are freed once it ends - host",
          "[runtime][model_update][kernel_task]") {
  keel::host::stream s{keel_test::test_device()}, u{keel_test::test_device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::atomic<bool> entered{false}, release{true};
  auto m = std::make_unique<keel::host::model>();
  {
    keel::host::capture_scope capture{s};
    s.launch_host([&] {
      entered.store(true);
      while (!release.load()) std::this_thread::yield();
    });
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, &out, &tmp, &other, 1.0f);
    *m = capture.end();
  }
  axpy_task axpy{*m, m->tasks().at(1)};
  for (int k = 0; k < 40; ++k) {  // updates queued between executions: tables made, let go and reused
    axpy.update(s, &out, &tmp, &other, static_cast<float>(k));
    m->execute(s);
  }
  s.synchronize();
  CHECK(out == 40.0f);
  release.store(false);
  entered.store(false);
  m->execute(s);
  while (!entered.load()) std::this_thread::yield();
  axpy.update(u, &out, &tmp, &other, 100.0f);  // the execution holds the table: a new one is committed
  m.reset();  // the model goes while its execution holds a table
  release.store(true);
  s.synchronize();
  CHECK(out == 40.0f);  // the execution ran what it started with
}
