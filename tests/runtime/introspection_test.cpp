// SPDX-License-Identifier: Apache-2.0
// A model's identity, lifetime and introspection:
// id, name, destroy callbacks, abort, streams and tasks, and the dumps. Each
// rule is broken once, its error checked, and the model shown to execute as
// before. Every case runs on the host backend and on the ACL backend over
// keel's emulation (" - host" / " - acl").
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "../support/json.hpp"
#include "keel/core/utf8.hpp"
#include "keel/runtime/model_dump.hpp"
#include "test_support.hpp"

using keel::errc;
using keel::task_type;

namespace {

// out = tmp + alpha * other, captured on s; the model and what it reads.
template <class F>
struct captured {
  typename F::stream s{F::device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  std::uint64_t capture_id = 0;
  typename F::model m;
  explicit captured(float alpha = 1.0f) {
    typename F::capture_scope capture{s};
    capture_id = s.capture_status().capture_id;
    F::axpy(s, &out, &tmp, &other, alpha);
    m = capture.end();
  }
  float run() {
    out = 0.0f;
    m.execute(s);
    s.synchronize();
    return out;
  }
};

int destroyed_a = 0, destroyed_b = 0;
void count_a(void* user) {
  ++destroyed_a;
  if (user != nullptr) static_cast<std::vector<int>*>(user)->push_back(1);
}
void count_b(void* user) {
  ++destroyed_b;
  if (user != nullptr) static_cast<std::vector<int>*>(user)->push_back(2);
}

}  // namespace

KEEL_BACKEND_TEST("model: id() is stable, unique per process, and what capture_info reported during the capture",
                  "[runtime][introspection]") {
  captured<TestType> a(1.0f), b(2.0f);
  CHECK(a.capture_id != 0);
  CHECK(a.m.id() == a.capture_id);
  CHECK(b.m.id() == b.capture_id);
  CHECK(a.m.id() != b.m.id());
  CHECK(a.m.id() == a.m.id());
  CHECK(a.m.ref().id() == a.m.id());
  CHECK(a.run() == 3.0f);
  CHECK(a.m.id() == a.capture_id);  // executing does not change it
}

KEEL_BACKEND_TEST("model: set_name and name, a name over 512 bytes or with a NUL is refused and the old name kept",
                  "[runtime][introspection]") {
  captured<TestType> c;
  CHECK(c.m.name().empty());
  c.m.set_name("first");
  c.m.set_name("decoder step");
  CHECK(c.m.name() == "decoder step");
  c.m.set_name(std::string(512, 'n'));
  CHECK(c.m.name() == std::string(512, 'n'));
  c.m.set_name("decoder step");
  KEEL_REQUIRE_ERROR(c.m.set_name(std::string(513, 'n')), errc::invalid_parameter, "at most 512 bytes");
  KEEL_REQUIRE_ERROR(c.m.set_name(std::string("a\0b", 3)), errc::invalid_parameter, "no NUL");
  CHECK(c.m.name() == "decoder step");
  CHECK(c.run() == 3.0f);
  KEEL_REQUIRE_ERROR(typename TestType::model{}.set_name("x"), errc::invalid_handle, "empty");
}

KEEL_BACKEND_TEST("model: destroy callbacks run once when the model goes, a dropped registration does not run",
                  "[runtime][introspection]") {
  destroyed_a = destroyed_b = 0;
  std::vector<int> order;
  {
    captured<TestType> c;
    auto keep = c.m.on_destroy(&count_a, &order);
    {
      auto dropped = c.m.on_destroy(&count_b, &order);
      CHECK(dropped.active());
    }  // unregistered here
    auto again = c.m.on_destroy(&count_b, &order);  // registrable again once dropped
    again.reset();
    CHECK_FALSE(again.active());
    CHECK(c.run() == 3.0f);
    CHECK(destroyed_a == 0);
    CHECK(keep.active());
    c.m.reset();
    CHECK(destroyed_a == 1);
    CHECK_FALSE(keep.active());  // its model went: dropping it unregisters nothing
  }
  CHECK(destroyed_a == 1);
  CHECK(destroyed_b == 0);
  CHECK(order == std::vector<int>{1});
}

int destroy_reports = 0;
std::string destroy_report;
void count_destroy_report(std::error_code code, const char*, const char* message) noexcept {
  if (code == errc::task_failed) {
    ++destroy_reports;
    destroy_report = message;
  }
}
void throw_on_destroy(void*) { throw std::runtime_error("the destroy callback failed"); }

KEEL_BACKEND_TEST("model: a destroy callback that throws is reported through keel's error handler, the others still run",
                  "[runtime][introspection]") {
  destroyed_a = 0;
  destroy_reports = 0;
  std::vector<int> order;
  const keel::error_handler previous = keel::set_error_handler(&count_destroy_report);
  {
    captured<TestType> c;
    auto failing = c.m.on_destroy(&throw_on_destroy);
    auto counting = c.m.on_destroy(&count_a, &order);
    failing.release();
    counting.release();
    c.m.reset();  // used to end the process (std::terminate)
  }
  keel::set_error_handler(previous);
  CHECK(destroy_reports == 1);
  CHECK(destroy_report.find("the destroy callback failed") != std::string::npos);
  CHECK(destroyed_a == 1);
  CHECK(order == std::vector<int>{1});
}

KEEL_BACKEND_TEST("model: set_name refuses a name that is not UTF-8 and keeps its name, to_json stays valid",
                  "[runtime][introspection]") {
  captured<TestType> c;
  c.m.set_name("caf\xC3\xA9 \xF0\x9F\x9A\xA2");  // café and a ship
  for (const std::string& bad : {std::string("caf\xC3"),           // cut in the middle of é
                                std::string("\xC0\xAF"),            // an overlong '/'
                                std::string("\xED\xA0\x80"),        // a surrogate
                                std::string("x\x80y"),              // a stray continuation byte
                                std::string("\xF4\x90\x80\x80")}) {  // past U+10FFFF
    INFO(bad.size());
    KEEL_REQUIRE_ERROR(c.m.set_name(bad), errc::invalid_parameter, "valid UTF-8");
  }
  CHECK(c.m.name() == "caf\xC3\xA9 \xF0\x9F\x9A\xA2");
  const std::string json = keel::to_json(c.m);
  CHECK(json.find("\"name\": \"caf\xC3\xA9 \xF0\x9F\x9A\xA2\"") != std::string::npos);
  CHECK(keel::detail::utf8_invalid_at(json) == std::string_view::npos);
  CHECK(c.run() == 3.0f);
}

TEST_CASE("model: to_json's strings stay valid JSON whatever bytes a native runtime returns (a name, a kernel name)",
          "[runtime][introspection]") {
  // CANN takes any bytes for a name (the emulation applies keel's rule):
  // the dump's escaping itself must keep the document valid.
  const std::string escaped = keel::detail::dump::json_string("caf\xC3 \"q\" \xE2\x82\xAC \xFF\x01");
  CHECK(escaped == "\"caf\\ufffd \\\"q\\\" \xE2\x82\xAC \\ufffd\\u0001\"");
  CHECK(keel::detail::utf8_invalid_at(escaped) == std::string_view::npos);
}

KEEL_BACKEND_TEST("model: a destroy callback is registered once per model and never null, the model still executes",
                  "[runtime][introspection]") {
  destroyed_a = 0;
  captured<TestType> c;
  auto first = c.m.on_destroy(&count_a);
  KEEL_REQUIRE_ERROR((void)c.m.on_destroy(&count_a), errc::invalid_parameter, "registered once per model");
  KEEL_REQUIRE_ERROR((void)c.m.on_destroy(nullptr), errc::null_parameter, "null");
  CHECK(first.active());
  CHECK(c.run() == 3.0f);
  first.release();  // stays registered: runs when the model goes
  c.m.reset();
  CHECK(destroyed_a == 1);
}

KEEL_BACKEND_TEST("model: abort() stops an execution in flight, its stream reports task_failed, and it runs again after",
                  "[runtime][introspection]") {
  KEEL_USING_BACKEND(TestType);
  stream s{TestType::device()}, other_stream{TestType::device()};
  event gate{TestType::device(), keel::event_flags::external};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  model m;
  {
    capture_scope capture{s};
    s.wait(gate);  // the execution holds here until the gate is recorded
    TestType::axpy(s, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  m.execute(s);
  m.abort();
  gate.record(other_stream);
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "");
  CHECK(out == 0.0f);  // the kernel after the gate never ran
  out = 0.0f;
  m.execute(s);  // issued after the abort: runs
  s.synchronize();
  CHECK(out == 3.0f);
  m.abort();  // nothing in flight: nothing happens
  out = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}

KEEL_BACKEND_TEST("model: an aborted execution runs none of its remaining host functions",
                  "[runtime][introspection][abort]") {
  KEEL_USING_BACKEND(TestType);
  stream s{TestType::device()}, other_stream{TestType::device()};
  event gate{TestType::device(), keel::event_flags::external};
  std::atomic<int> ran{0};
  model m;
  {
    capture_scope capture{s};
    s.wait(gate);  // the execution holds here until the gate is recorded
    s.launch_host([&ran] { ++ran; });
    m = capture.end();
  }
  m.execute(s);
  m.abort();
  gate.record(other_stream);
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "");
  CHECK(ran.load() == 0);  // skipped, as reported
  m.execute(s);
  s.synchronize();
  CHECK(ran.load() == 1);
}

KEEL_BACKEND_TEST("model: a model's own host function may destroy its handle while execute() still runs",
                  "[runtime][introspection]") {
  // execute() reads nothing of the handle once the work is issued (ASan
  // saw a read of the destroyed handle after the issue).
  KEEL_USING_BACKEND(TestType);
  stream s{TestType::device()};
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; ++round) {
    auto holder = std::make_unique<model>();
    {
      capture_scope capture{s};
      s.launch_host([&holder, &ran] {
        holder.reset();  // the model destroys its own handle
        ++ran;
      });
      *holder = capture.end();
    }
    model* raw = holder.get();
    raw->execute(s);
    s.synchronize();
    CHECK_FALSE(holder);
  }
  CHECK(ran.load() == 20);
}

KEEL_BACKEND_TEST("model: streams() and tasks() list each stream's tasks in order with kinds, groups and copies",
                  "[runtime][introspection]") {
  KEEL_USING_BACKEND(TestType);
  stream s{TestType::device()}, side{TestType::device()};
  event fork{TestType::device()}, join{TestType::device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f, out2 = 0.0f, copied = 0.0f;
  device_buffer staging{s, sizeof(float)};
  model m;
  task_group g;
  {
    capture_scope capture{s};
    {
      task_group_scope mark{s};
      TestType::axpy(s, &out, &tmp, &other, 1.0f);
      g = mark.end();
    }
    fork.record(s);
    side.wait(fork);
    TestType::axpy(side, &out2, &tmp, &other, 3.0f);
    join.record(side);
    s.wait(join);
    s.copy_async(staging.span(), keel::host_span(&out, sizeof(float)));
    s.copy_async(keel::host_span(&copied, sizeof(float)), staging.span());
    m = capture.end();
  }
  const std::vector<keel::model_stream> streams = m.streams();
  REQUIRE(streams.size() == 2);
  CHECK(streams[0].id != streams[1].id);
  CHECK(streams[0].index == 0);
  CHECK(streams[1].index == 1);
  const std::vector<keel::task_info> tasks = m.tasks();
  std::size_t total = 0;
  for (const auto& st : streams) total += st.task_count;
  CHECK(tasks.size() == total);
  // Each stream's tasks are contiguous and numbered 0, 1, ... in its order.
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0 && tasks[i].stream == tasks[i - 1].stream) CHECK(tasks[i].sequence == tasks[i - 1].sequence + 1);
    if (i > 0 && tasks[i].stream != tasks[i - 1].stream) CHECK(tasks[i].stream == tasks[i - 1].stream + 1);
    if (i == 0 || tasks[i].stream != tasks[i - 1].stream) CHECK(tasks[i].sequence == 0);
  }
  const auto count = [&](task_type t, std::size_t stream) {
    std::size_t n = 0;
    for (const auto& k : tasks) n += k.type == t && k.stream == stream;
    return n;
  };
  CHECK(count(task_type::kernel, 1) >= 1);
  // CANN has no task type for a copy: ACL reports it as ACL_MODEL_RI_TASK_DEFAULT.
  const task_type copy_type = TestType::is_host ? task_type::copy : task_type::other;
  CHECK(count(copy_type, 0) == 2);
  CHECK(count(task_type::event_record, 0) == 1);
  CHECK(count(task_type::event_wait, 0) == 1);
  CHECK(count(task_type::event_record, 1) == 1);
  CHECK(count(task_type::event_wait, 1) == 1);  // the fork's wait, which joined side to the capture
  // The group's kernel carries the group's id; the side stream's kernel none.
  std::size_t grouped = 0;
  for (const auto& t : tasks) {
    if (t.group != 0) {
      ++grouped;
      CHECK(t.stream == 0);
      CHECK(t.type == task_type::kernel);
    }
  }
  CHECK(grouped >= 1);
  if (TestType::is_host) {
    // The copies' parameters, as issued.
    std::vector<keel::task_info> copies;
    for (const auto& t : tasks)
      if (t.type == task_type::copy) copies.push_back(t);
    REQUIRE(copies.size() == 2);
    CHECK(copies[0].copy.dst == staging.span().data);
    CHECK(copies[0].copy.src == &out);
    CHECK(copies[0].copy.bytes == sizeof(float));
    CHECK(copies[0].copy.kind == keel::copy_kind::host_to_device);
    CHECK(copies[1].copy.dst == &copied);
    CHECK(copies[1].copy.kind == keel::copy_kind::device_to_host);
  }
  // A wait pairs with the record of its event on the other stream.
  for (const auto& w : tasks) {
    if (w.type != task_type::event_wait) continue;
    CHECK(w.event != 0);
    std::size_t records = 0;
    for (const auto& r : tasks) records += r.type == task_type::event_record && r.event == w.event && r.stream != w.stream;
    CHECK(records == 1);
  }
  // tasks(stream) is that stream's share.
  CHECK(m.tasks(streams[1]).size() == streams[1].task_count);
  // Introspection changes nothing: the model runs.
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
  CHECK(out2 == 7.0f);
  CHECK(copied == 3.0f);
}

KEEL_BACKEND_TEST("model: kernel_attributes reads a kernel task's launch attributes, other and unknown tasks are refused",
                  "[runtime][introspection]") {
  KEEL_USING_BACKEND(TestType);
  stream s{TestType::device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  device_buffer staging{s, sizeof(float)};
  model m;
  {
    capture_scope capture{s};
    TestType::axpy(s, &out, &tmp, &other, 1.0f);
    s.copy_async(staging.span(), keel::host_span(&out, sizeof(float)));
    m = capture.end();
  }
  keel::task_info kernel, copy;
  for (const keel::task_info& t : m.tasks()) (t.type == task_type::kernel ? kernel : copy) = t;
  REQUIRE(kernel.type == task_type::kernel);
  REQUIRE(copy.type != task_type::kernel);
  // The launches set no attribute: each reads as the runtime's default.
  const keel::kernel_attributes a = m.kernel_attributes(kernel);
  CHECK(a.schedule_mode == 0);
  CHECK(a.dynamic_ub_bytes == 0);
  CHECK_FALSE(a.data_dump);
  CHECK(a.timeout_s == 0);
  CHECK(a.timeout_us == 0);
  KEEL_REQUIRE_ERROR(m.kernel_attributes(copy), errc::invalid_parameter, "only kernel tasks have launch attributes");
  keel::task_info missing = kernel;
  missing.sequence = 1000;
  KEEL_REQUIRE_ERROR(m.kernel_attributes(missing), errc::invalid_parameter, "has no task at stream 0, sequence 1000");
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
}

KEEL_BACKEND_TEST("model: to_dot and to_json show every stream and task of the model",
                  "[runtime][introspection][dump]") {
  captured<TestType> c;
  c.m.set_name("dump \"me\"");
  const std::string dot = keel::to_dot(c.m);
  const std::string json = keel::to_json(c.m);
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.find("cluster_stream_0") != std::string::npos);
  CHECK(dot.find("kernel") != std::string::npos);
  CHECK(dot.find("dump \\\"me\\\"") != std::string::npos);
  CHECK(json.find("\"modelId\": " + std::to_string(c.m.id())) != std::string::npos);
  CHECK(json.find("\"taskType\": \"kernel\"") != std::string::npos);
  CHECK(json.find("\"name\": \"dump \\\"me\\\"\"") != std::string::npos);
  CHECK(c.run() == 3.0f);
}

KEEL_BACKEND_TEST("model: tasks() and the dumps nest each conditional task's bodies under it, at any depth",
                  "[runtime][introspection][dump][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{TestType::device()}, side{TestType::device()}, inner_side{TestType::device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f, then_out = 0.0f, else_out = 0.0f, loop_out = 0.0f;
  device_buffer staging{s, sizeof(float)};
  model m;
  {
    capture_scope capture{s};
    s.copy_async(staging.span(), keel::host_span(&out, sizeof(float)));  // a task ACL lists untyped, before the IF
    auto c = keel::make_condition<B>(s, 1);
    auto bodies = keel::if_else<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, bodies.first};
      TestType::axpy(side, &then_out, &tmp, &other, 1.0f);
      auto loop = keel::make_condition<B>(side, 0);  // 0 at each run of the body: the loop runs no iteration
      auto body = keel::while_<B>(side, loop);
      {
        keel::basic_body_capture_scope<B> inner{inner_side, body};
        TestType::axpy(inner_side, &loop_out, &tmp, &other, 3.0f);
        inner.end();
      }
      into.end();
    }
    {
      keel::basic_body_capture_scope<B> into{side, bodies.second};
      TestType::axpy(side, &else_out, &tmp, &other, 2.0f);
      into.end();
    }
    TestType::axpy(s, &out, &tmp, &other, 1.0f);
    m = capture.end();
  }
  const std::vector<keel::task_info> tasks = m.tasks();
  REQUIRE(tasks.size() == 3);
  CHECK(tasks[0].type == (TestType::is_host ? task_type::copy : task_type::other));  // CANN has no copy type
  CHECK(tasks[2].type == task_type::kernel);
  const keel::task_info& branch = tasks[1];
  REQUIRE(branch.type == task_type::conditional);
  CHECK(branch.conditional == "if");
  REQUIRE(branch.bodies.size() == 2);
  const keel::conditional_body& then_body = branch.bodies[0];
  REQUIRE(then_body.streams.size() == 1);
  REQUIRE(then_body.tasks.size() == 2);
  CHECK(then_body.tasks[0].type == task_type::kernel);
  const keel::task_info& loop = then_body.tasks[1];
  REQUIRE(loop.type == task_type::conditional);
  CHECK(loop.conditional == "while");
  REQUIRE(loop.bodies.size() == 1);
  REQUIRE(loop.bodies[0].tasks.size() == 1);
  CHECK(loop.bodies[0].tasks[0].type == task_type::kernel);
  CHECK(loop.bodies[0].tasks[0].bodies.empty());
  REQUIRE(branch.bodies[1].tasks.size() == 1);
  CHECK(branch.bodies[1].tasks[0].type == task_type::kernel);

  const keel_test::json::value doc = keel_test::json::parse(keel::to_json(m));
  const keel_test::json::value& listed = doc["streams"][0]["tasks"];
  REQUIRE(listed.items.size() == 3);
  const keel_test::json::value& if_task = listed[1];
  CHECK(if_task["taskType"].text == "conditional");
  CHECK(if_task["conditional"].text == "if");
  REQUIRE(if_task["bodies"].items.size() == 2);
  CHECK(if_task["bodies"][0]["name"].text == "then");
  CHECK(if_task["bodies"][1]["name"].text == "else");
  const keel_test::json::value& then_tasks = if_task["bodies"][0]["streams"][0]["tasks"];
  REQUIRE(then_tasks.items.size() == 2);
  CHECK(then_tasks[0]["taskType"].text == "kernel");
  CHECK(then_tasks[1]["conditional"].text == "while");
  CHECK(then_tasks[1]["bodies"][0]["name"].text == "body");
  CHECK(then_tasks[1]["bodies"][0]["streams"][0]["tasks"][0]["taskType"].text == "kernel");
  CHECK(if_task["bodies"][1]["streams"][0]["tasks"][0]["taskType"].text == "kernel");

  const std::string dot = keel::to_dot(m);
  CHECK_THAT(dot, Catch::Contains("conditional if") && Catch::Contains("\"if then\"") &&
                      Catch::Contains("\"if else\"") && Catch::Contains("conditional while") &&
                      Catch::Contains("\"while body\"") && Catch::Contains("-> t0_1b0_0_0 [style=dotted, label=\"then\"]"));
  m.execute(s);
  s.synchronize();
  CHECK(then_out == 3.0f);
  CHECK(else_out == 0.0f);
  CHECK(loop_out == 0.0f);
}

KEEL_BACKEND_TEST("model: dumps number events and task groups alike on every backend and mark external events",
                  "[runtime][introspection][dump]") {
  using B = typename TestType::backend;
  auto& dev = TestType::device();
  keel::basic_stream<B> s{dev}, t{dev};
  keel::basic_event<B> fork{dev, keel::event_flags::default_}, join{dev, keel::event_flags::default_},
      outside{dev, keel::event_flags::default_};
  float tmp = 1.0f, other = 2.0f, out = 0.0f, out2 = 0.0f;
  keel::basic_model<B> m;
  keel::basic_task_group<B> g;
  {
    keel::basic_capture_scope<B> capture{s};
    s.wait(outside, keel::event_operation::external);  // waits on a record made outside the model
    {
      keel::basic_task_group_scope<B> mark{s};
      TestType::axpy(s, &out, &tmp, &other, 1.0f);
      g = mark.end();
    }
    fork.record(s);
    t.wait(fork);
    TestType::axpy(t, &out2, &tmp, &other, 2.0f);
    join.record(t);
    s.wait(join);
    m = capture.end();
  }
  const keel_test::json::value doc = keel_test::json::parse(keel::to_json(m));
  std::vector<keel_test::json::value> events, grouped;
  for (const auto& st : doc["streams"].items)
    for (const auto& task : st["tasks"].items) {
      if (task.has("eventId")) events.push_back(task);
      if (task.has("groupId")) grouped.push_back(task);
    }
  // Stream 0: the external wait, the fork's record, the join's wait; stream 1: the fork's wait, the join's record.
  REQUIRE(events.size() == 5);
  CHECK(events[0]["taskType"].text == "event wait");
  CHECK(events[0]["eventId"].number == 1.0);
  CHECK(events[0]["externalEvent"].flag);
  CHECK(events[1]["eventId"].number == 2.0);  // fork
  CHECK(events[2]["eventId"].number == 3.0);  // join
  CHECK(events[3]["eventId"].number == 2.0);
  CHECK(events[4]["eventId"].number == 3.0);
  for (std::size_t i = 1; i < events.size(); ++i) CHECK_FALSE(events[i]["externalEvent"].flag);
  REQUIRE(grouped.size() == 1);
  CHECK(grouped[0]["groupId"].number == 1.0);
  const std::string dot = keel::to_dot(m);
  CHECK_THAT(dot, Catch::Contains("task group #1") && Catch::Contains("event #1 (external)") &&
                      Catch::Contains("event #3"));
  // The task list itself marks the external wait on both backends.
  bool external = false;
  for (const keel::task_info& task : m.tasks())
    if (task.type == task_type::event_wait && task.external_event) external = true;
  CHECK(external);
}

KEEL_BACKEND_TEST("model: a task group's kernel reports the arguments it runs now, the capture's and then each update's",
                  "[runtime][introspection][dump]") {
  using B = typename TestType::backend;
  auto& dev = TestType::device();
  keel::basic_stream<B> s{dev}, u{dev};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  keel::basic_model<B> m;
  keel::basic_task_group<B> g;
  {
    keel::basic_capture_scope<B> capture{s};
    keel::basic_task_group_scope<B> mark{s};
    TestType::axpy(s, &out, &tmp, &other, 3.0f);
    g = mark.end();
    m = capture.end();
  }
  // The alpha a dump shows for the group's one kernel: the host records the
  // kernel's own arguments, ACL the operator run_on launched.
  auto alpha = [&] {
    const keel_test::json::value doc = keel_test::json::parse(keel::to_json(m));
    const keel_test::json::value& task = doc["streams"][0]["tasks"][0];
    REQUIRE(task["taskType"].text == "kernel");
    REQUIRE(task.has("groupId"));
    REQUIRE(task["arguments"].size() > 0);
    return TestType::is_host ? task["arguments"][3]["value"].number : task["operator"]["scalars"][0]["value"].number;
  };
  CHECK(alpha() == 3.0);
  for (float a : {7.0f, 9.5f}) {
    keel::basic_update_scope<B> update{u, g};
    TestType::axpy(u, &out, &tmp, &other, a);
    update.end();
    u.synchronize();
    CHECK(alpha() == a);
  }
  m.execute(s);
  s.synchronize();
  CHECK(out == 1.0f + 9.5f * 2.0f);
  // A refused or abandoned update leaves the report as it was.
  {
    keel::basic_update_scope<B> update{u, g};
    TestType::axpy(u, &out, &tmp, &other, 4.0f);
    update.cancel();
  }
  CHECK(alpha() == 9.5);
}

TEST_CASE("model: the host records every kernel argument with its type and value - host only",
          "[runtime][introspection][host]") {
  using F = host;
  KEEL_USING_BACKEND(F);
  stream s{F::device()};
  float tmp = 1.0f, other = 2.0f, out = 0.0f;
  model m;
  {
    capture_scope capture{s};
    F::axpy(s, &out, &tmp, &other, 1.5f);
    m = capture.end();
  }
  const auto tasks = m.tasks();
  REQUIRE(tasks.size() == 1);
  const keel::task_info& t = tasks[0];
  CHECK(t.type == task_type::kernel);
  CHECK(t.kernel.kind == keel_test::axpy_kind);
  REQUIRE(t.kernel.argument_count == 4);
  CHECK(t.kernel.arguments[0].type == "pointer");
  CHECK(t.kernel.arguments[0].address == &out);
  CHECK(t.kernel.arguments[2].address == &other);
  CHECK(t.kernel.arguments[3].type == "float");
  CHECK(t.kernel.arguments[3].floating == 1.5);
  const std::string json = keel::to_json(m);
  CHECK(json.find("{\"type\": \"float\", \"size\": 4, \"value\": 1.5}") != std::string::npos);
}

#ifdef KEEL_ACL_EMULATION_DIR
#include <cstdio>
#include <fstream>
#include <sstream>

#include "keel/acl/model_debug.hpp"

TEST_CASE("model: the runtime's own dumps (aclmdlRIDebugPrint, aclmdlRIDebugJsonPrint) - acl only",
          "[runtime][introspection][acl]") {
  captured<acl> c;
  c.m.set_name("debug");
  keel::acl::debug_print(c.m);
  const std::string path = "keel_introspection_debug.json";
  keel::acl::debug_json_print(c.m, path, true);
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(path.c_str());
  CHECK(text.str().find("\"modelId\": " + std::to_string(c.m.id())) != std::string::npos);
  CHECK(text.str().find("\"name\": \"debug\"") != std::string::npos);
  CHECK(text.str().find("\"taskType\": \"kernel\"") != std::string::npos);
  // A path that cannot be written: the runtime refuses, the model still runs.
  KEEL_REQUIRE_ERROR(keel::acl::debug_json_print(c.m, "/nonexistent-dir/x.json"), errc::invalid_parameter, "cannot write");
  CHECK(c.run() == 3.0f);
  KEEL_REQUIRE_ERROR(keel::acl::debug_print(keel::acl::model_ref{}), errc::invalid_handle, "empty");
}
#endif
