// SPDX-License-Identifier: Apache-2.0
// A graph runner composed the way xLLM's executor over torch_npu's NPUGraph
// and vllm-ascend's graph wrapper compose theirs: one memory pool per slot
// shared by the slot's bucket graphs (one capture per batch size into it),
// operators with workspaces in every graph (their workspaces taken from the
// capture's pool, no allocator registration), an IF body with a temporary of
// its own, one fence per layer per bucket (fenced_model), and per step an
// operator task updated on the model's own stream (xLLM) and the layers'
// groups updated on an update stream after the execution was issued
// (vllm-ascend). Every step's results are checked, the pool must hold what
// the graphs run on and give none of it out again, and every piece must go
// back when the graphs go. Run under ASan, UBSan and TSan by CI's sanitizer
// builds. Host and ACL (" - host" / " - acl").
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "keel/ops.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operator_task.hpp"
#include "keel/runtime/condition.hpp"
#include "keel/runtime/fenced_update.hpp"
#include "keel/runtime/memory_pool.hpp"
#include "test_support.hpp"
#include "workspace_operator.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/memory_pool.hpp"
#endif

namespace graph_runner_test {

template <class F>
using planner = keel_test::plan_target<F>;
// One layer's operator: a baddbmm with a workspace (keel_test::bmm), as the
// attention operators runners update every step.
using layer_operator = keel_test::bmm;

constexpr int layers = 2;

// One bucket's graph: `layers` fenced operators, an IF body that writes a
// temporary of its own, and an operator outside any group (the head) that
// an operator task updates per step.
template <class F>
struct bucket_graph {
  using B = typename F::backend;
  std::array<layer_operator, layers> layer;
  layer_operator head;
  float body_result = 0.0f;
  float* body_temporary = nullptr;
  keel::basic_fenced_model<B> fenced{F::device()};
  std::unique_ptr<keel::ops::basic_operator_task<B>> head_task;

  bucket_graph(const typename F::stream& s, const typename F::stream& side, keel::basic_memory_pool<B>& pool) {
    static const float one = 1.0f;
    typename F::capture_scope capture{s, pool};
    for (int l = 0; l < layers; ++l) {
      auto ex = layer[l].template prepare<F>(1.0f);
      fenced.fenced_update(s, ex.workspace_size(), [&](typename F::stream_ref c) { keel::ops::run_on(c, ex); });
    }
    auto head_ex = head.template prepare<F>(1.0f);
    keel::ops::run_on(s, head_ex);  // its workspace from the capture's pool
    auto c = keel::make_condition<B>(s, 1, false);
    auto body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body};
      auto temporary = pool.allocate(side, 256);  // dropped while the body is captured: the model's
      body_temporary = temporary.template data_as<float>();
      F::axpy(side, body_temporary, &one, &one, 1.0f);
      F::copy(side, &body_result, body_temporary);
      into.end();
    }
    fenced.adopt(capture.end());
    const std::vector<keel::task_info> tasks = fenced.model().tasks();
    const auto head_info = std::find_if(tasks.begin(), tasks.end(), [](const keel::task_info& t) {
      return t.type == keel::task_type::kernel && t.group == 0 && t.kernel.kind.name() == "aclnnBaddbmm";
    });
    const auto host_head_info = std::find_if(tasks.begin(), tasks.end(), [](const keel::task_info& t) {
      return t.type == keel::task_type::kernel && t.group == 0 && t.kernel.kind.name() == "keel.ops.baddbmm";
    });
    const keel::task_info& found = head_info != tasks.end() ? *head_info : *host_head_info;
    head_task = std::make_unique<keel::ops::basic_operator_task<B>>(fenced.model(), found);
  }

  // One step: the head's new executor on the model's own stream (xLLM), the
  // execution, then each layer's new executor staged and applied on the
  // update stream (vllm-ascend: after the execution was issued, no wait).
  void step(const typename F::stream& s, const typename F::stream& u, float alpha) {
    head_task->update(s, head.template prepare<F>(alpha));  // its workspace released in s's order, kept by the task
    fenced.execute(s);
    for (int l = 0; l < layers; ++l) {
      const float layer_alpha = alpha + static_cast<float>(l);
      auto ex = layer[l].template prepare<F>(layer_alpha);
      layer_operator* op = &layer[l];
      fenced.stage(static_cast<std::size_t>(l), ex.workspace_size(), [op, layer_alpha](typename F::stream_ref us) {
        auto replacement = op->template prepare<F>(layer_alpha);
        keel::ops::run_on(us, replacement);  // a workspace of the update stream's, kept by the group's task
      });
    }
    fenced.apply(u);
  }

  bool ran(float alpha) const {
    if (!head.all(1.0f + 4.0f * alpha)) return false;
    for (int l = 0; l < layers; ++l)
      if (!layer[l].all(1.0f + 4.0f * (alpha + static_cast<float>(l)))) return false;
    return body_result == 2.0f;
  }
};

}  // namespace graph_runner_test

KEEL_BACKEND_TEST("graph runner: bucket graphs sharing a slot's pool update operators with workspaces every step",
                  "[runtime][graph_runner][memory_pool][fenced_update][conditional]") {
  using F = TestType;
  using B = typename F::backend;
  using graph = graph_runner_test::bucket_graph<F>;
  typename F::stream s{F::device()}, side{F::device()}, u{F::device()};
  keel::basic_memory_pool<B> slot_pool{F::device(), {"slot 0"}};
  {
    std::vector<std::unique_ptr<graph>> buckets;
    for (int b = 0; b < 2; ++b) buckets.push_back(std::make_unique<graph>(s, side, slot_pool));
    const std::size_t held = slot_pool.statistics().used;
    CHECK(held > 0);  // the captures' workspaces and the bodies' temporaries are the graphs'

    for (int i = 0; i < 8; ++i) {
      graph& g = *buckets[static_cast<std::size_t>(i % 2)];
      const float alpha = 1.0f + static_cast<float>(i);
      g.step(s, u, alpha);
      s.synchronize();
      u.synchronize();
      INFO("step " << i);
      CHECK(g.ran(alpha));
      // Nothing a graph runs on is handed out again: fresh blocks of the
      // body's size never alias a body's temporary.
      auto fresh = slot_pool.allocate(s, 256);
      for (const auto& other : buckets) CHECK(fresh.template data_as<float>() != other->body_temporary);
    }
    CHECK(slot_pool.statistics().used >= held);
    s.synchronize();
  }
  s.synchronize();
  u.synchronize();
  // The graphs went: everything they held is back in the pool.
  CHECK(slot_pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("graph runner: a step that breaks a rule is refused by name and the runner goes on",
                  "[runtime][graph_runner][fenced_update]") {
  using F = TestType;
  using B = typename F::backend;
  using graph = graph_runner_test::bucket_graph<F>;
  typename F::stream s{F::device()}, side{F::device()}, u{F::device()};
  keel::basic_memory_pool<B> slot_pool{F::device(), {"slot 0"}};
  graph g{s, side, slot_pool};
  // An apply() with no execution issued to take its signals (the order
  // that hangs a hand-written runner) is refused, nothing issued.
  KEEL_REQUIRE_ERROR(g.fenced.apply(u), keel::errc::invalid_state, "every issued execution has its signal");
  // Another operator than the task's: refused with both names.
  std::vector<float> a(4, 1.0f), o(4, 0.0f);
  using keel::ops::dtype;
  using keel::ops::tensor;
  auto add = keel::ops::prepare_add(graph_runner_test::planner<F>::get(), tensor(a.data(), dtype::float32, {4}),
                                    tensor(a.data(), dtype::float32, {4}), keel::ops::scalar(1.0f),
                                    tensor(o.data(), dtype::float32, {4}));
  KEEL_REQUIRE_ERROR(g.head_task->update(s, add), keel::errc::invalid_parameter, "add");
  // The runner goes on as if nothing had been asked.
  g.step(s, u, 3.0f);
  s.synchronize();
  u.synchronize();
  CHECK(g.ran(3.0f));
}
