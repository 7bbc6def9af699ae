// SPDX-License-Identifier: Apache-2.0
// Every keel scope left without end() or cancel() cancels; left by an
// exception it reports nothing (the exception tells the caller, and a runner
// that falls back to eager work after a failed capture writes no failure
// line), left by a normal return it reports "left without end() or
// cancel()". One test per scope family: capture and body capture scopes,
// task-group and update scopes, per-task update scopes, model builders.
// Host and ACL (" - host" / " - acl").
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "keel/runtime/model_builder.hpp"
#include "keel/runtime/model_update.hpp"
#include "test_support.hpp"

namespace {

enum class leave { early_return, exception };

// Runs body(leave_now) with every error report recorded: leave_now() returns
// (the body then returns early) or throws, as @p how says. Returns the reports.
template <class Body>
std::vector<keel::testing::recorded_reports::report> left_by(leave how, Body&& body) {
  keel::testing::recorded_reports reports;
  const auto leave_now = [how] {
    if (how == leave::exception) throw std::runtime_error("leaving the scope");
  };
  try {
    body(leave_now);
  } catch (const std::runtime_error&) {
  }
  return reports.taken();
}

void check_reports(const std::vector<keel::testing::recorded_reports::report>& got, leave how, const char* api) {
  if (how == leave::exception) {
    CHECK(got.empty());
    return;
  }
  REQUIRE(got.size() == 1);
  INFO(got[0].api << ": " << got[0].message);
  CHECK(got[0].code == keel::errc::invalid_state);
  CHECK(got[0].api == api);
  CHECK(got[0].message.find("left without end() or cancel()") != std::string::npos);
}

}  // namespace

KEEL_BACKEND_TEST("scope unwinding: capture, task-group and update scopes left by an exception cancel quietly",
                  "[runtime][scope]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, u{dev};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  for (leave how : {leave::early_return, leave::exception}) {
    check_reports(left_by(how,
                          [&](auto leave_now) {
                            capture_scope capture{s};
                            TestType::axpy(s, &out, &tmp, &other, 1.0f);
                            leave_now();
                          }),
                  how, "keel::capture_scope");
    CHECK_FALSE(s.is_capturing());
    model m;
    task_group group;
    {
      capture_scope capture{s};
      check_reports(left_by(how,
                            [&](auto leave_now) {
                              task_group_scope mark{s};
                              TestType::axpy(s, &out, &tmp, &other, 1.0f);
                              leave_now();
                            }),
                    how, "keel::task_group_scope");
      task_group_scope mark{s};
      TestType::axpy(s, &out, &tmp, &other, 1.0f);
      group = mark.end();
      m = capture.end();
    }
    check_reports(left_by(how,
                          [&](auto leave_now) {
                            update_scope update{u, group};
                            TestType::axpy(u, &out, &tmp, &other, 5.0f);
                            leave_now();
                          }),
                  how, "keel::update_scope");
    u.synchronize();
    m.execute(s);
    s.synchronize();
    CHECK(out == 2.0f);  // the update was abandoned either way
  }
}

KEEL_BACKEND_TEST("scope unwinding: a body capture scope left by an exception cancels quietly",
                  "[runtime][scope][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev};
  for (leave how : {leave::early_return, leave::exception}) {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1);
    auto body = keel::if_<B>(s, c);
    check_reports(left_by(how,
                          [&](auto leave_now) {
                            keel::basic_body_capture_scope<B> into{side, body};
                            leave_now();
                          }),
                  how, "keel::body_capture_scope");
    CHECK_FALSE(side.is_capturing());
    capture.cancel();
  }
}

KEEL_BACKEND_TEST("scope unwinding: a per-task update scope left by an exception abandons quietly",
                  "[runtime][scope][model_update]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  model m;
  {
    capture_scope capture{s};
    TestType::axpy(s, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  for (leave how : {leave::early_return, leave::exception}) {
    check_reports(left_by(how,
                          [&](auto leave_now) {
                            keel::basic_task_update_scope<B> update{m};
                            update.disable(m.tasks().at(0));
                            leave_now();
                          }),
                  how, "keel::task_update_scope");
    out = 0.0f;
    m.execute(s);
    s.synchronize();
    CHECK(out == 2.0f);  // the disable was abandoned either way
  }
}

KEEL_BACKEND_TEST("scope unwinding: a model builder left by an exception cancels quietly",
                  "[runtime][scope][built_model]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream a = keel::make_persistent_stream<B>(dev);
  for (leave how : {leave::early_return, leave::exception}) {
    check_reports(left_by(how,
                          [&](auto leave_now) {
                            keel::basic_model_builder<B> builder{dev};
                            builder.bind(a, keel::bound_stream::head);
                            leave_now();
                          }),
                  how, "keel::model_builder");
  }
}
