// SPDX-License-Identifier: Apache-2.0
// Models that choose their work when they run, on keel's host backend:
//
// 1. A built model (keel::basic_model_builder, CANN's aclmdlRIBuildBegin ...
//    aclmdlRIBuildEnd): a head stream bumps a step counter and switches to a
//    "warm-up" stream on the first step (aclrtSwitchStream); otherwise it
//    goes on and activates a "steady" stream (aclrtActiveStream).
// 2. A captured model with conditional tasks (CANN's aclmdlRIAddCondTask):
//    a WHILE loop halves a value until it is at most 1, and an IF / else
//    says whether the number of halvings was even.
//
// Each execution prints what ran; the CTest case checks the lines.
#include <cstdint>
#include <cstdio>

#include "keel/host/host.hpp"

namespace {
using B = keel::host::backend;
constexpr keel::kernel_kind step_kind{"step"};
void step(keel::host::launch_context&, std::int32_t* counter) { ++*counter; }
}  // namespace

int main() {
  keel::host::device dev;
  keel::host::stream run{dev};

  // ---- 1. a built model that switches on a device value --------------------
  auto head = keel::make_persistent_stream<B>(dev);
  auto warm_up = keel::make_persistent_stream<B>(dev);
  auto steady = keel::make_persistent_stream<B>(dev);
  std::int32_t steps = 0;
  const std::int32_t first = 1;
  int warm_ups = 0, steadies = 0;
  keel::host::model built;
  {
    keel::host::model_builder build{dev};
    build.bind(head, keel::bound_stream::head);
    build.bind(warm_up);
    build.bind(steady);
    head.launch(step_kind, &step, &steps);  // recorded, not run
    build.switch_to(head, &steps, keel::compare_condition::equal, &first, warm_up);
    build.activate(head, steady);
    build.end_task(head);
    warm_up.launch_host([&] { ++warm_ups; });
    build.end_task(warm_up);
    steady.launch_host([&] { ++steadies; });
    build.end_task(steady);
    built = build.end();
  }
  for (int i = 0; i < 3; ++i) {
    built.execute(run);
    run.synchronize();
    std::printf("built model, step %d: warm-up %d, steady %d\n", steps, warm_ups, steadies);
  }

  // ---- 2. conditional tasks: WHILE, then IF / else -------------------------
  keel::host::stream side{dev}, inner{dev};
  std::uint64_t input = 0;
  int halvings = 0;
  const char* parity = "";
  keel::host::model conditional;
  {
    keel::host::capture_scope capture{run};
    auto more = keel::make_condition<B>(run, 0, false);  // the program sets it from the input
    std::uint64_t* more_value = more.value();
    run.launch_host([&, more_value] {
      halvings = 0;
      *more_value = input > 1 ? 1 : 0;
    });
    auto loop = keel::while_<B>(run, more);
    {
      keel::host::body_capture_scope body{side, loop};
      side.launch_host([&, more_value] {
        input /= 2;
        ++halvings;
        *more_value = input > 1 ? 1 : 0;  // the body keeps the loop going
      });
      body.end();
    }
    auto even = keel::make_condition<B>(run, 0, false);
    std::uint64_t* even_value = even.value();
    run.launch_host([&, even_value] { *even_value = halvings % 2 == 0 ? 1 : 0; });
    auto branches = keel::if_else<B>(run, even);
    {
      keel::host::body_capture_scope then_body{side, branches.first};
      side.launch_host([&] { parity = "even"; });
      then_body.end();
    }
    {
      keel::host::body_capture_scope else_body{inner, branches.second};
      inner.launch_host([&] { parity = "odd"; });
      else_body.end();
    }
    conditional = capture.end();
  }
  for (std::uint64_t value : {40u, 1u, 1000u}) {
    input = value;
    conditional.execute(run);
    run.synchronize();
    std::printf("conditional model, input %llu: %d halvings (%s)\n", static_cast<unsigned long long>(value), halvings,
                parity);
  }
  std::printf("tasks: built %zu, conditional %zu\n", built.task_count(), conditional.task_count());
  return 0;
}
