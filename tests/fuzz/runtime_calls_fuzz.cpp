// SPDX-License-Identifier: Apache-2.0
// Fuzz target: runtime call sequences. The bytes decode to calls (4 bytes
// each, 5 for the built-model, conditional, context and update calls; a
// memset_async is 4) for the differential harness of tests/reliability; calls whose
// outcome the documentation leaves to timing are dropped, the rest run on
// the host backend from 1-3 threads and must match the reference model.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../reliability/runtime_model.hpp"
#include "fuzz_input.hpp"

namespace kr = keel_reliability;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  keel_fuzz::input in(data, size);
  const int threads = 1 + static_cast<int>(in.below(3));
  std::vector<kr::op> ops;
  kr::reference ref;
  while (!in.empty() && ops.size() < 200) {
    kr::op o;
    o.kind = static_cast<kr::op_kind>(in.below(static_cast<unsigned>(kr::op_kind::count_)));
    o.thread = static_cast<std::uint8_t>(in.below(static_cast<unsigned>(threads)));
    o.a = static_cast<std::uint8_t>(in.byte());
    o.b = static_cast<std::uint8_t>(in.byte());
    o.token = static_cast<std::uint32_t>(ops.size() + 1);
    // The model-family calls (build onward) take a third operand byte; memset, among them, keeps 4 bytes.
    if (o.kind >= kr::op_kind::build && o.kind != kr::op_kind::memset) o.c = static_cast<std::uint8_t>(in.byte());
    // Operands index slots: fold them into range for the call's kind.
    switch (o.kind) {
      case kr::op_kind::drop_event: o.a %= kr::n_events; o.b = 0; break;
      // b: external event; query instead of synchronize; slow host callable.
      case kr::op_kind::new_event: case kr::op_kind::event_sync: o.a %= kr::n_events; o.b %= 2; break;
      case kr::op_kind::launch_host: o.a %= kr::n_streams; o.b %= 2; break;
      case kr::op_kind::record: case kr::op_kind::record_ext: o.a %= kr::n_events; o.b %= kr::n_streams; break;
      case kr::op_kind::wait_ext: o.a %= kr::n_streams; o.b %= kr::n_events; break;
      case kr::op_kind::wait: o.a %= kr::n_streams; o.b %= kr::n_events; break;
      case kr::op_kind::cap_begin: o.a %= kr::n_streams; o.b %= 3; break;
      case kr::op_kind::cap_end: o.a %= kr::n_streams; o.b %= kr::n_models; break;
      case kr::op_kind::group_end: o.a %= kr::n_streams; o.b %= kr::n_groups; break;
      case kr::op_kind::exec: o.a %= kr::n_models; o.b %= kr::n_streams; break;
      case kr::op_kind::drop_model: o.a %= kr::n_models; break;
      case kr::op_kind::drop_group: o.a %= kr::n_groups; break;
      case kr::op_kind::upd_begin: o.a %= kr::n_streams; o.b %= kr::n_groups; break;
      case kr::op_kind::launch_kernel: o.a %= kr::n_streams; o.b %= 2; break;
      // b and c carry bit fields (shape, fault, kind, default value): every value decodes.
      case kr::op_kind::build: o.a %= kr::n_models; o.b &= 63; break;
      case kr::op_kind::cond: o.a %= kr::n_models; o.c = static_cast<std::uint8_t>((o.c & 3) | (o.c & 28)); break;
      case kr::op_kind::set_value: o.a %= kr::n_models; o.b %= 4; break;
      case kr::op_kind::ctx_new: o.a %= kr::n_contexts; o.b = 0; break;
      case kr::op_kind::ctx_close: o.a %= kr::n_contexts; o.b %= 2; break;
      case kr::op_kind::ctx_stream: o.a %= kr::n_streams; o.b %= kr::n_contexts; o.c %= 2; break;
      case kr::op_kind::upd_model: o.a %= kr::n_models; o.b %= kr::n_models; o.c %= kr::n_streams; break;
      case kr::op_kind::task_disable: case kr::op_kind::task_args: case kr::op_kind::task_handle:
        o.a %= kr::n_models;
        o.c %= kr::n_streams;
        break;
      case kr::op_kind::fence_new: o.a %= kr::n_streams; o.b &= 15; break;
      case kr::op_kind::fence_exec: o.a %= kr::n_streams; o.b = 0; o.c %= kr::n_streams; break;
      case kr::op_kind::fence_apply: o.a %= kr::n_streams; o.b %= 8; o.c %= kr::n_streams; break;
      case kr::op_kind::memset: o.a %= kr::n_streams; o.b = 0; break;
      case kr::op_kind::pool_share: o.a %= 3; o.b = 0; break;
      case kr::op_kind::abort_nested: o.a %= 2; o.b = 0; break;
      default: o.a %= kr::n_streams; o.b = 0; break;
    }
    kr::reference trial = ref;
    if (!trial.apply(o, ops.size()).supported) continue;
    ref = std::move(trial);
    ops.push_back(o);
  }
  // KEEL_FUZZ_PRINT=1: print the decoded calls (to see what a corpus input exercises).
  if (std::getenv("KEEL_FUZZ_PRINT") != nullptr)
    for (std::size_t i = 0; i < ops.size(); ++i) std::fprintf(stderr, "  %3zu %s\n", i, kr::describe(ops[i]).c_str());
  const std::string diff = kr::check(ops, threads);
  if (!diff.empty()) {
    for (std::size_t i = 0; i < ops.size(); ++i) std::fprintf(stderr, "  %3zu %s\n", i, kr::describe(ops[i]).c_str());
    KEEL_FUZZ_REQUIRE(diff.empty(), "%s", diff.c_str());
  }
  return 0;
}
