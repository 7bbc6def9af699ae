// SPDX-License-Identifier: Apache-2.0
// keel::ops::basic_operator_task on every backend (backends.hpp): an
// operator's task in a captured model takes a new executor of the same
// operator every step, checked for its operator, dtypes and shapes, without
// naming what the backend's launch stores; a task_update_scope commits it
// with other changes. Also what introspection reports of an operator task
// (the call its plan describes, in to_json and to_dot), and kernel_task's
// refusals naming C++ types.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../support/json.hpp"
#include "backends.hpp"
#include "keel/ops/operator_task.hpp"
#include "keel/runtime/model_dump.hpp"
#include "keel/runtime/model_update.hpp"

using keel::testing::matches;
using keel::ops::dtype;
using keel::ops::scalar;
using keel::ops::tensor;

namespace {

struct failure {
  std::error_code code;
  std::string what = "no error";
};
template <class Fn>
failure error_of(Fn&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

// A model of two operator tasks: out = adaptive_avg_pool2d(in, 2x2) (with a
// workspace), then sum = out + alpha * out.
template <class F>
struct pooled {
  typename F::stream s{F::device()};
  std::vector<float> in_a = std::vector<float>(32), in_b = std::vector<float>(32), out = std::vector<float>(8),
                     sum = std::vector<float>(8);
  typename F::device_buffer ws;
  typename F::model m;
  static tensor image(std::vector<float>& v) { return tensor(v.data(), dtype::float32, {1, 2, 4, 4}); }
  static tensor pooled_view(std::vector<float>& v) { return tensor(v.data(), dtype::float32, {1, 2, 2, 2}); }

  pooled() {
    for (std::size_t i = 0; i < 32; ++i) {
      in_a[i] = static_cast<float>(i);
      in_b[i] = 100.0f + static_cast<float>(i % 4);
    }
    auto pool = pool_of(in_a);
    auto add = add_of(1.0f);
    REQUIRE(pool.workspace_size() > 0);
    ws = typename F::device_buffer{s, pool.workspace_size()};
    typename F::capture_scope capture{s};
    keel::ops::run_on(s, pool, ws.span());
    keel::ops::run_on(s, add, keel::memory_span{});
    m = capture.end();
  }
  keel::ops::executor_for_t<std::remove_reference_t<decltype(F::target())>> pool_of(std::vector<float>& in) {
    return keel::ops::prepare_adaptive_avg_pool2d(F::target(), image(in), 2, 2, pooled_view(out));
  }
  keel::ops::executor_for_t<std::remove_reference_t<decltype(F::target())>> add_of(float alpha) {
    return keel::ops::prepare_add(F::target(), pooled_view(out), pooled_view(out), scalar(alpha), pooled_view(sum));
  }
  keel::task_info kernel(std::size_t i) const {
    std::size_t seen = 0;
    for (const keel::task_info& t : m.tasks())
      if (t.type == keel::task_type::kernel && seen++ == i) return t;
    FAIL("the model has no kernel task " << i);
    return {};
  }
  // The 2x2 average of plane 0's top-left block of @p in, then (1 + alpha) times it.
  static float expected(const std::vector<float>& in, float alpha) {
    const float avg = (in[0] + in[1] + in[4] + in[5]) / 4.0f;
    return avg * (1.0f + alpha);
  }
  float run() {
    std::fill(sum.begin(), sum.end(), 0.0f);
    m.execute(s);
    s.synchronize();
    return sum[0];
  }
};

using task_of = keel::ops::basic_operator_task<typename host::backend>;

}  // namespace

KEEL_OPS_BACKEND_TEST("operator task: updated every step while the model executes, each execution runs its step's call",
                      "[ops][operator_task]") {
  using F = TestType;
  pooled<F> c;
  REQUIRE(c.run() == pooled<F>::expected(c.in_a, 1.0f));
  keel::ops::basic_operator_task<typename F::backend> pool{c.m, c.kernel(0)};
  keel::ops::basic_operator_task<typename F::backend> add{c.m, c.kernel(1)};
  CHECK(pool.captured().op == "adaptive_avg_pool2d");
  CHECK(add.captured().op == "add");
  // Steps issued back to back on the model's stream: each update lands
  // between the executions issued before and after it.
  std::vector<float> seen, want;
  for (int step = 0; step < 6; ++step) {
    std::vector<float>& in = step % 2 == 0 ? c.in_b : c.in_a;
    const float alpha = static_cast<float>(step + 2);
    const auto p = c.pool_of(in);
    const auto a = c.add_of(alpha);
    pool.update(c.s, p, c.ws.span());
    add.update(c.s, a);  // no workspace: the stream-ordered form allocates none
    c.m.execute(c.s);
    c.s.launch_host([&] { seen.push_back(c.sum[0]); });
    want.push_back(pooled<F>::expected(in, alpha));
  }
  c.s.synchronize();
  CHECK(seen == want);
  // The executors are gone: the model keeps the plans its tasks run.
  CHECK(c.run() == want.back());
}

TEST_CASE("operator task: the stream-ordered workspace form keeps the workspace the task runs with - host",
          "[ops][operator_task]") {
  pooled<host> c;
  task_of pool{c.m, c.kernel(0)};
  for (int step = 0; step < 4; ++step) {
    std::vector<float>& in = step % 2 == 0 ? c.in_b : c.in_a;
    pool.update(c.s, c.pool_of(in));  // its workspace allocated on the stream, released in its order
    CHECK(c.run() == pooled<host>::expected(in, 1.0f));
  }
}

KEEL_OPS_BACKEND_TEST("operator task: another operator, dtype or shape is refused naming both, the model runs as before",
                      "[ops][operator_task]") {
  using F = TestType;
  pooled<F> c;
  keel::ops::basic_operator_task<typename F::backend> pool{c.m, c.kernel(0)};
  keel::ops::basic_operator_task<typename F::backend> add{c.m, c.kernel(1)};
  std::vector<float> big(64);
  std::vector<std::uint16_t> halves(8);
  // Another operator.
  auto e = error_of([&] { pool.update(c.s, c.add_of(2.0f)); });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("keel::ops::operator_task::update") &&
                         Catch::Contains("runs operator adaptive_avg_pool2d and the executor is add") &&
                         Catch::Contains("the model is unchanged"));
  // Another shape.
  e = error_of([&] {
    pool.update(c.s,
                keel::ops::prepare_adaptive_avg_pool2d(F::target(), tensor(big.data(), dtype::float32, {1, 2, 4, 8}), 2,
                                                       2, pooled<F>::pooled_view(c.out)),
                c.ws.span());
  });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("operator adaptive_avg_pool2d") &&
                         Catch::Contains("tensor 'self' was captured as float32 [1, 2, 4, 4]") &&
                         Catch::Contains("the executor's is float32 [1, 2, 4, 8]"));
  // Another dtype.
  e = error_of([&] {
    add.update(c.s, keel::ops::prepare_add(F::target(), pooled<F>::pooled_view(c.out), pooled<F>::pooled_view(c.out),
                                           scalar(1.0f), tensor(halves.data(), dtype::float16, {1, 2, 2, 2})));
  });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
  CHECK_THAT(e.what, Catch::Contains("operator add") &&
                         Catch::Contains("tensor 'out' was captured as float32 [1, 2, 2, 2]") &&
                         Catch::Contains("the executor's is float16 [1, 2, 2, 2]"));
  // A workspace too small, an empty and a once-only executor.
  e = error_of([&] { pool.update(c.s, c.pool_of(c.in_b), keel::memory_span{}); });
  CHECK(matches(e.code, keel::errc::null_parameter));
  CHECK_THAT(e.what, Catch::Contains("adaptive_avg_pool2d executor needs a workspace of"));
  e = error_of([&] { pool.update(c.s, decltype(c.pool_of(c.in_b)){}); });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
  keel::ops::prepare_options once;
  once.use = keel::ops::executor_use::once;
  e = error_of([&] {
    add.update(c.s, keel::ops::prepare_add(F::target(), pooled<F>::pooled_view(c.out), pooled<F>::pooled_view(c.out),
                                           scalar(3.0f), pooled<F>::pooled_view(c.sum), once));
  });
  CHECK_THAT(e.what, Catch::Contains("add executor was prepared with executor_use::once"));
  // A capturing stream: the commit is refused.
  {
    typename F::stream other{F::device()};
    typename F::capture_scope capture{other};
    e = error_of([&] { add.update(other, c.add_of(5.0f)); });
    INFO(e.what);
    CHECK(matches(e.code, keel::errc::capture_violation));
    capture.cancel();
  }
  CHECK(c.run() == pooled<F>::expected(c.in_a, 1.0f));
  // A task that is not an operator's: the model's copy, and a kernel of a plain launch.
  e = error_of([&] { keel::ops::basic_operator_task<typename F::backend> t{c.m, keel::task_info{}}; });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
}

KEEL_OPS_BACKEND_TEST("operator task: staged in a task_update_scope, committed with other changes at end()",
                      "[ops][operator_task]") {
  using F = TestType;
  pooled<F> c, d;
  keel::ops::basic_operator_task<typename F::backend> pool{c.m, c.kernel(0)};
  keel::ops::basic_operator_task<typename F::backend> add{c.m, c.kernel(1)};
  const auto p = c.pool_of(c.in_b);
  const auto a = c.add_of(4.0f);
  {
    keel::basic_task_update_scope<typename F::backend> update{c.m};
    pool.stage(update, p, c.ws.span());
    add.stage(update, a);
    CHECK(c.run() == pooled<F>::expected(c.in_a, 1.0f));  // staged only
    update.end(c.s);
  }
  CHECK(c.run() == pooled<F>::expected(c.in_b, 4.0f));
  {
    keel::basic_task_update_scope<typename F::backend> other{d.m};
    auto e = error_of([&] { add.stage(other, a); });
    CHECK(matches(e.code, keel::errc::invalid_parameter));
    CHECK_THAT(e.what, Catch::Contains("keel::ops::operator_task::stage") && Catch::Contains("another model"));
    other.end(d.s);
    e = error_of([&] { add.stage(other, a); });
    CHECK(matches(e.code, keel::errc::invalid_state));
  }
  CHECK(d.run() == pooled<F>::expected(d.in_a, 1.0f));
}

KEEL_OPS_BACKEND_TEST("kernel_task: a refusal names an operator task's arguments by their C++ types",
                      "[ops][operator_task][kernel_task]") {
  using F = TestType;
  pooled<F> c;
  auto e = error_of([&] { keel::basic_kernel_task<typename F::backend, float, void*> t{c.m, c.kernel(1)}; });
  CHECK(matches(e.code, keel::errc::invalid_parameter));
  CHECK_THAT(e.what, !Catch::Contains("object (") && Catch::Contains("argument 0 is ") &&
                         Catch::Contains(F::is_host ? "std::shared_ptr<const keel::ops::host_operators::plan_type>"
                                                    : "keel::acl::aclnn_operators plan argument"));
}

namespace {
std::string hex(const void* p) {
  char buf[2 + 2 * sizeof(void*) + 1];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return buf;
}
std::vector<double> numbers(const keel_test::json::value& v) {
  std::vector<double> out;
  for (const auto& x : v.items) out.push_back(x.number);
  return out;
}
// The dump's kernel tasks of stream 0, in stream order.
std::vector<keel_test::json::value> kernels_of(const std::string& dump) {
  const keel_test::json::value doc = keel_test::json::parse(dump);
  std::vector<keel_test::json::value> out;
  for (const auto& t : doc["streams"][0]["tasks"].items)
    if (t["taskType"].text == "kernel") out.push_back(t);
  return out;
}
}  // namespace

KEEL_OPS_BACKEND_TEST("dump: an operator task shows its operator, tensors (address, dtype, shape, strides) and scalars",
                      "[ops][operator_task][dump]") {
  using F = TestType;
  pooled<F> c;
  std::vector<keel_test::json::value> k = kernels_of(keel::to_json(c.m));
  REQUIRE(k.size() == 2);
  REQUIRE(k[0].has("operator"));
  const auto& pool = k[0]["operator"];
  CHECK(pool["op"].text == "adaptive_avg_pool2d");
  CHECK(pool["function"].text == (F::is_host ? "keel.ops.adaptive_avg_pool2d" : "aclnnAdaptiveAvgPool2d"));
  REQUIRE(pool["tensors"].size() == 2);
  CHECK(pool["tensors"][0]["name"].text == "self");
  CHECK(pool["tensors"][0]["address"].text == hex(c.in_a.data()));
  CHECK(pool["tensors"][0]["dtype"].text == "float32");
  CHECK(numbers(pool["tensors"][0]["shape"]) == std::vector<double>{1, 2, 4, 4});
  CHECK(numbers(pool["tensors"][0]["strides"]) == std::vector<double>{32, 16, 4, 1});
  CHECK(pool["tensors"][1]["name"].text == "out");
  CHECK(pool["tensors"][1]["address"].text == hex(c.out.data()));
  CHECK(numbers(pool["tensors"][1]["shape"]) == std::vector<double>{1, 2, 2, 2});
  REQUIRE(pool["scalars"].size() == 2);
  CHECK(pool["scalars"][0]["name"].text == "out_h");
  CHECK(pool["scalars"][0]["dtype"].text == "int64");
  CHECK(pool["scalars"][0]["value"].number == 2.0);
  const auto& add = k[1]["operator"];
  CHECK(add["op"].text == "add");
  CHECK(add["scalars"][0]["name"].text == "alpha");
  CHECK(add["scalars"][0]["value"].number == 1.0);
  CHECK(add["tensors"][2]["name"].text == "out");
  CHECK(add["tensors"][2]["address"].text == hex(c.sum.data()));
  // After an update the dump shows the call the task runs now.
  keel::ops::basic_operator_task<typename F::backend> pool_task{c.m, c.kernel(0)};
  keel::ops::basic_operator_task<typename F::backend> add_task{c.m, c.kernel(1)};
  pool_task.update(c.s, c.pool_of(c.in_b), c.ws.span());
  add_task.update(c.s, c.add_of(5.5f));
  c.s.synchronize();
  k = kernels_of(keel::to_json(c.m));
  CHECK(k[0]["operator"]["tensors"][0]["address"].text == hex(c.in_b.data()));
  CHECK(k[1]["operator"]["scalars"][0]["value"].number == 5.5);
  const std::string dot = keel::to_dot(c.m);
  CHECK_THAT(dot, Catch::Contains("adaptive_avg_pool2d (") && Catch::Contains("self float32 [1, 2, 4, 4]") &&
                      Catch::Contains("alpha = 5.5 float32"));
}
