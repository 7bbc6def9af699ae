// SPDX-License-Identifier: Apache-2.0
// Built models (keel/runtime/model_builder.hpp): streams
// bound to a model record their work, activation and switch tasks choose at
// run time which bound streams run, and every rule of the build is checked
// with the objects left usable. Each test runs on the host and the ACL
// backend; the last ones call the emulation's C API for CANN's statuses.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

using keel::bound_stream;
using keel::compare_condition;
using keel::errc;

namespace {

// What a builder left without end() or cancel() reports: after an early
// return, one report; after an exception, none (the exception tells).
void check_left_unfinished(keel::testing::recorded_reports& reports, bool by_exception) {
  const auto got = reports.taken();
  if (by_exception) {
    CHECK(got.empty());
    return;
  }
  REQUIRE(got.size() == 1);
  INFO(got[0].api << ": " << got[0].message);
  CHECK(got[0].code == keel::errc::invalid_state);
  CHECK(got[0].api == "keel::model_builder");
  CHECK(got[0].message.find("left without end() or cancel()") != std::string::npos);
  CHECK(got[0].message.find("by an exception") == std::string::npos);
  CHECK(got[0].message.find("discarded") != std::string::npos);
}

template <class F>
auto persistent(typename F::backend::device_type& d) {
  return keel::make_persistent_stream<typename F::backend>(d);
}

// A model of three bound streams: head computes out[0], then switches to
// branch when *flag == 1 (head's remaining out[1] is skipped), else goes on;
// branch computes out[2] and activates extra, which computes out[3].
template <class F>
struct three_streams {
  using B = typename F::backend;
  typename F::stream head{persistent<F>(F::device())}, branch{persistent<F>(F::device())},
      extra{persistent<F>(F::device())};
  float tmp = 1.0f, other = 2.0f;
  float out[4] = {0, 0, 0, 0};
  std::int32_t flag = 1, one = 1;

  typename F::model build() {
    keel::basic_model_builder<B> builder{F::device()};
    builder.bind(head, bound_stream::head);
    builder.bind(branch);
    builder.bind(extra);
    F::axpy(head, &out[0], &tmp, &other, 1.0f);
    builder.switch_to(head, &flag, compare_condition::equal, &one, branch);
    F::axpy(head, &out[1], &tmp, &other, 2.0f);
    builder.end_task(head);
    F::axpy(branch, &out[2], &tmp, &other, 3.0f);
    builder.activate(branch, extra);
    builder.end_task(branch);
    F::axpy(extra, &out[3], &tmp, &other, 4.0f);
    builder.end_task(extra);
    return builder.end();
  }
  void clear() {
    for (float& o : out) o = 0.0f;
  }
};

}  // namespace

KEEL_BACKEND_TEST("built model: the head runs, a switch that holds jumps to its stream, an activation runs another",
                  "[runtime][built_model]") {
  KEEL_USING_BACKEND(TestType);
  three_streams<TestType> t;
  model m = t.build();
  CHECK(m.task_count() == 9);  // 4 on head, 3 on branch, 2 on extra (end tasks included)
  // tasks() lists each stream's tasks with its switch, activation and end
  // tasks (CANN's aclmdlRITaskType has no type for them: other on ACL).
  {
    using tt = keel::task_type;
    const auto control = [](tt t) { return TestType::is_host ? t : tt::other; };
    std::vector<tt> kinds;
    for (const keel::task_info& task : m.tasks()) kinds.push_back(task.type);
    CHECK(kinds == std::vector<tt>{tt::kernel, control(tt::switch_), tt::kernel, tt::other, tt::kernel,
                                   control(tt::activation), tt::other, tt::kernel, tt::other});
    CHECK(m.streams().size() == 3);
  }
  stream s{dev};
  CHECK(t.out[0] == 0.0f);  // recorded, not run
  m.execute(s);
  s.synchronize();
  CHECK(t.out[0] == 3.0f);
  CHECK(t.out[1] == 0.0f);  // head stopped where it switched
  CHECK(t.out[2] == 7.0f);
  CHECK(t.out[3] == 9.0f);
  t.clear();
  t.flag = 0;  // read when the switch runs: now head goes on
  m.execute(s);
  s.synchronize();
  CHECK(t.out[0] == 3.0f);
  CHECK(t.out[1] == 5.0f);
  CHECK(t.out[2] == 0.0f);
  CHECK(t.out[3] == 0.0f);
}

KEEL_BACKEND_TEST("built model: each condition and both value types of a switch", "[runtime][built_model]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  struct row {
    compare_condition c;
    std::int64_t left, right;
    bool holds;
  };
  const row rows[] = {{compare_condition::equal, 2, 2, true},        {compare_condition::not_equal, 2, 2, false},
                      {compare_condition::greater, 3, 2, true},      {compare_condition::greater_or_equal, 1, 2, false},
                      {compare_condition::less, -1, 2, true},        {compare_condition::less_or_equal, 3, 2, false}};
  stream s{dev};
  for (const row& r : rows) {
    for (bool wide : {false, true}) {
      stream head = persistent<TestType>(dev), target = persistent<TestType>(dev);
      std::int32_t l32 = static_cast<std::int32_t>(r.left), r32 = static_cast<std::int32_t>(r.right);
      std::int64_t l64 = r.left, r64 = r.right;
      float tmp = 1.0f, other = 1.0f, hit = 0.0f;
      keel::basic_model_builder<B> builder{dev};
      builder.bind(head, bound_stream::head);
      builder.bind(target);
      if (wide)
        builder.switch_to(head, &l64, r.c, &r64, target);
      else
        builder.switch_to(head, &l32, r.c, &r32, target);
      builder.end_task(head);
      TestType::axpy(target, &hit, &tmp, &other, 1.0f);
      builder.end_task(target);
      model m = builder.end();
      m.execute(s);
      s.synchronize();
      INFO("condition " << static_cast<int>(r.c) << (wide ? " int64" : " int32"));
      CHECK((hit == 2.0f) == r.holds);
    }
  }
}

KEEL_BACKEND_TEST("built model: a stream is bound only when persistent, to one model, not while capturing",
                  "[runtime][built_model][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream plain{dev};
  stream p = persistent<TestType>(dev);
  keel::basic_model_builder<B> builder{dev};
  KEEL_REQUIRE_ERROR(builder.bind(plain, bound_stream::head), errc::invalid_parameter, "only a persistent stream");
  builder.bind(p, bound_stream::head);
  {
    keel::basic_model_builder<B> second{dev};
    KEEL_REQUIRE_ERROR(second.bind(p), errc::invalid_state, "one model at a time");
    second.cancel();
  }
  stream q = persistent<TestType>(dev);
  {
    capture_scope capture{q};
    KEEL_REQUIRE_ERROR(builder.bind(q), errc::capture_violation, "a capturing stream cannot be bound");
    capture.cancel();
  }
  // Unchanged and usable: the plain stream runs work, the build goes on.
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  TestType::axpy(plain, &out, &tmp, &other, 1.0f);
  plain.synchronize();
  CHECK(out == 2.0f);
  out = 0.0f;
  TestType::axpy(p, &out, &tmp, &other, 2.0f);
  builder.end_task(p);
  model m = builder.end();
  CHECK(out == 0.0f);
  m.execute(plain);
  plain.synchronize();
  CHECK(out == 3.0f);
}

KEEL_BACKEND_TEST("built model: the build ends with a head stream and an end task", "[runtime][built_model][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev), b = persistent<TestType>(dev);
  keel::basic_model_builder<B> builder{dev};
  builder.bind(a);
  KEEL_REQUIRE_ERROR((void)builder.end(), errc::invalid_state, "no head stream");
  CHECK(builder.active());
  builder.bind(b, bound_stream::head);
  KEEL_REQUIRE_ERROR((void)builder.end(), errc::invalid_state, "no end task");
  CHECK(builder.active());
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  TestType::axpy(b, &out, &tmp, &other, 1.0f);
  builder.end_task(b);
  model m = builder.end();
  CHECK_FALSE(builder.active());
  KEEL_REQUIRE_ERROR((void)builder.end(), errc::invalid_state, "the build already ended");
  stream s{dev};
  m.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);
}

KEEL_BACKEND_TEST("built model: no work after a stream's end task, nor on a bound stream after build end",
                  "[runtime][built_model][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev);
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  model m;
  {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(a, bound_stream::head);
    TestType::axpy(a, &out, &tmp, &other, 1.0f);
    builder.end_task(a);
    KEEL_REQUIRE_ERROR(TestType::axpy(a, &out, &tmp, &other, 5.0f), errc::invalid_state, "end task was issued");
    KEEL_REQUIRE_ERROR(builder.end_task(a), errc::invalid_state, "end task was issued");
    m = builder.end();
  }
  CHECK(m.task_count() == 2);  // the refused launch left nothing behind
  KEEL_REQUIRE_ERROR(TestType::axpy(a, &out, &tmp, &other, 5.0f), errc::invalid_state, "whose build ended");
  stream s{dev};
  m.execute(s);
  s.synchronize();
  CHECK(out == 2.0f);
  keel::unbind(m.ref(), a.ref());
  KEEL_REQUIRE_ERROR(keel::unbind(m.ref(), a.ref()), errc::invalid_parameter, "is not bound");
  TestType::axpy(a, &out, &tmp, &other, 5.0f);  // unbound: it runs work again
  a.synchronize();
  CHECK(out == 6.0f);
  out = 0.0f;
  m.execute(s);  // the model keeps what was recorded
  s.synchronize();
  CHECK(out == 2.0f);
}

KEEL_BACKEND_TEST("built model: activation and switch tasks name another stream bound to the same model",
                  "[runtime][built_model][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev), b = persistent<TestType>(dev), loose = persistent<TestType>(dev);
  stream other_model = persistent<TestType>(dev);
  keel::basic_model_builder<B> builder{dev}, second{dev};
  builder.bind(a, bound_stream::head);
  builder.bind(b);
  second.bind(other_model, bound_stream::head);
  std::int32_t x = 0;
  KEEL_REQUIRE_ERROR(builder.activate(a, loose), errc::invalid_parameter, "is not bound to built model");
  KEEL_REQUIRE_ERROR(builder.activate(a, other_model), errc::invalid_parameter, "is not bound to built model");
  KEEL_REQUIRE_ERROR(builder.activate(a, a), errc::invalid_parameter, "cannot activate or switch to itself");
  KEEL_REQUIRE_ERROR(builder.activate(loose, a), errc::invalid_state, "belong to built models");
  KEEL_REQUIRE_ERROR(builder.switch_to(a, &x, compare_condition::equal, &x, loose), errc::invalid_parameter,
                     "is not bound to built model");
  KEEL_REQUIRE_ERROR(builder.switch_to(a, nullptr, compare_condition::equal, &x, keel::compare_type::int32, b),
                     errc::null_parameter, "must not be null");
  KEEL_REQUIRE_ERROR(builder.switch_to(a, &x, static_cast<compare_condition>(9), &x, keel::compare_type::int32, b),
                     errc::invalid_parameter, "unknown compare condition");
  KEEL_REQUIRE_ERROR(builder.end_task(loose), errc::invalid_parameter, "is not bound to built model");
  // Nothing was recorded by the refused calls: the model counts the good ones only.
  builder.activate(a, b);
  builder.end_task(a);
  builder.end_task(b);
  model m = builder.end();
  second.cancel();
  CHECK(m.task_count() == 3);
  float tmp = 1.0f, one = 1.0f, out = 0.0f;
  TestType::axpy(loose, &out, &tmp, &one, 1.0f);  // never bound: runs
  loose.synchronize();
  CHECK(out == 2.0f);
}

KEEL_BACKEND_TEST("built model: a builder left by an exception cancels and unbinds its streams, without a report",
                  "[runtime][built_model][rules][scope]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev);
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  keel::testing::recorded_reports reports;
  try {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(a, bound_stream::head);
    TestType::axpy(a, &out, &tmp, &other, 1.0f);
    throw std::runtime_error("left");
  } catch (const std::runtime_error&) {
  }
  check_left_unfinished(reports, true);
  CHECK(out == 0.0f);  // recorded into the discarded model, never run
  TestType::axpy(a, &out, &tmp, &other, 2.0f);
  a.synchronize();
  CHECK(out == 3.0f);
  // And a built model's destruction unbinds what is still bound.
  {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(a, bound_stream::head);
    builder.end_task(a);
    model m = builder.end();
  }
  keel::basic_model_builder<B> again{dev};
  again.bind(a, bound_stream::head);  // bound to one model at a time: the last one is gone
}

KEEL_BACKEND_TEST("built model: a bound stream destroyed during the build refuses the end",
                  "[runtime][built_model][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev);
  keel::basic_model_builder<B> builder{dev};
  builder.bind(a, bound_stream::head);
  builder.end_task(a);
  {
    stream doomed = persistent<TestType>(dev);
    builder.bind(doomed);
  }
  KEEL_REQUIRE_ERROR((void)builder.end(), errc::invalid_state, "was destroyed during the build");
  CHECK(builder.active());  // a refused end leaves the build to cancel
  builder.cancel();
  CHECK_FALSE(builder.active());
}

KEEL_BACKEND_TEST("built model: a builder left by an early return cancels, unbinds its streams and reports it",
                  "[runtime][built_model][rules][scope]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev);
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  keel::testing::recorded_reports reports;
  const auto build_or_give_up = [&](bool give_up) -> model {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(a, bound_stream::head);
    TestType::axpy(a, &out, &tmp, &other, 1.0f);
    if (give_up) return model{};  // early return: never a silent end
    builder.end_task(a);
    return builder.end();
  };
  model none = build_or_give_up(true);
  CHECK_FALSE(none);
  check_left_unfinished(reports, false);
  CHECK(out == 0.0f);                           // recorded into the discarded model, never run
  TestType::axpy(a, &out, &tmp, &other, 2.0f);  // unbound again: runs
  a.synchronize();
  CHECK(out == 3.0f);
  model built = build_or_give_up(false);  // the stream binds again; end() reports nothing
  CHECK(reports.taken().empty());
  CHECK(built.task_count() == 2);
}

KEEL_BACKEND_TEST(
    "built model: cancel() drops the build without a report, end() and cancel() after it are refused or no-ops",
    "[runtime][built_model][rules][scope]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = persistent<TestType>(dev);
  keel::testing::recorded_reports reports;
  {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(a, bound_stream::head);
    CHECK(builder.active());
    CHECK(builder.model());
    builder.cancel();
    CHECK_FALSE(builder.active());
    CHECK_FALSE(builder.model());
    builder.cancel();  // again: nothing to drop
    KEEL_REQUIRE_ERROR((void)builder.end(), errc::invalid_state, "ended or was cancelled");
    KEEL_REQUIRE_ERROR(builder.bind(a), errc::invalid_state, "ended or was cancelled");
  }
  CHECK(reports.taken().empty());  // cancelled: the destructor has nothing to report
  keel::basic_model_builder<B> again{dev};
  again.bind(a, bound_stream::head);  // the cancelled build unbound the stream
  again.cancel();
}

#ifdef KEEL_ACL_EMULATION_DIR
// CANN's statuses, through the emulation's C API (the function table).
TEST_CASE("built model: the C API's statuses for the build's rules - acl", "[runtime][built_model][rules][acl]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::stream_handle plain = nullptr, bound = nullptr, loose = nullptr;
  REQUIRE(api.aclrtCreateStream(&plain) == 0);
  REQUIRE(api.aclrtCreateStreamWithConfig(&bound, 0, 0x4U) == 0);
  REQUIRE(api.aclrtCreateStreamWithConfig(&loose, 0, 0x4U) == 0);
  keel::acl::model_handle m = nullptr, second = nullptr;
  REQUIRE(api.aclmdlRIBuildBegin(&m, 0) == 0);
  REQUIRE(api.aclmdlRIBuildBegin(&second, 0) == 0);
  CHECK(api.aclmdlRIBindStream(m, plain, 0) == 100000);         // ACL_ERROR_INVALID_PARAM: not persistent
  CHECK(api.aclmdlRIBindStream(m, bound, 5) == 100000);         // an unknown flag
  REQUIRE(api.aclmdlRIBindStream(m, bound, 0x7FFFFFFFU) == 0);  // ACL_MODEL_STREAM_FLAG_DEFAULT
  CHECK(api.aclmdlRIBindStream(second, bound, 0) == 107000);    // ACL_ERROR_RT_PARAM_INVALID: bound elsewhere
  CHECK(api.aclmdlRIEndTask(m, bound) == 0);
  CHECK(api.aclmdlRIBuildEnd(m, nullptr) == 107000);  // no head stream
  CHECK(api.aclmdlRIExecuteAsync(m, plain) == 107000);  // the build has not ended
  CHECK(api.aclrtActiveStream(loose, bound) == 107000);  // bound's part ended: no more tasks
  std::int32_t v = 0;
  CHECK(api.aclrtSwitchStream(&v, keel::compare_condition::equal, &v, keel::compare_type::int32, bound, loose, plain) ==
        100000);  // falseStream is reserved
  REQUIRE(api.aclmdlRIBindStream(m, loose, 0) == 0);
  CHECK(api.aclmdlRIEndTask(m, loose) == 0);
  REQUIRE(api.aclmdlRIBuildEnd(m, nullptr) == 0);
  float f = 0.0f;
  CHECK(api.aclrtMemsetAsync(&f, sizeof f, 0, sizeof f, loose) == 107000);  // bound, build ended
  CHECK(api.aclmdlRIExecuteAsync(m, plain) == 0);
  CHECK(api.aclrtSynchronizeStream(plain) == 0);
  CHECK(api.aclmdlRIUnbindStream(m, loose) == 0);
  CHECK(api.aclmdlRIUnbindStream(m, loose) == 100000);  // not bound any more
  CHECK(api.aclmdlRIDestroy(m) == 0);
  CHECK(api.aclmdlRIDestroy(second) == 0);  // a model still being built is discarded
  CHECK(api.aclmdlRIBindStream(m, bound, 0) == 107017);  // ACL_ERROR_RT_INVALID_HANDLE: destroyed
  for (auto s : {plain, bound, loose}) CHECK(api.aclrtDestroyStream(s) == 0);
}
#endif

KEEL_BACKEND_TEST("built model: a model still being built takes a name and answers queries and abort()",
                  "[runtime][built_model]") {
  // "Ended" in the docs of names, queries and abort() is the model's
  // destruction: a model being built is not ended.
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  auto head = persistent<TestType>(dev);
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  keel::basic_model_builder<B> builder{dev};
  builder.bind(head, bound_stream::head);
  TestType::axpy(head, &out, &tmp, &other, 1.0f);
  const keel::basic_model_ref<B> building = builder.model();
  building.set_name("half");
  CHECK(building.name() == "half");
  const std::uint64_t id = building.id();
  CHECK(building.tasks().empty());  // listed once the build ends
  CHECK(building.streams().empty());
  building.abort();  // no execution issued: nothing to stop
  builder.end_task(head);
  model m = builder.end();
  CHECK(m.id() == id);
  CHECK(m.name() == "half");
  stream s{dev};
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}
