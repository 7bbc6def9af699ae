// SPDX-License-Identifier: Apache-2.0
// keel::ops on the host backend: two clients of one stream that share no
// hidden state (the first of the bugs the README's introduction names).
//  - Client A calls operators through exec() and an executor cache it owns.
//  - Client B makes raw two-phase calls: phase one validates and sizes the
//    workspace, phase two runs on the stream.
//  - A's call is captured once into a model and replayed on new data.
//  - A call that breaks a rule gets an error naming the API and the rule,
//    and nothing is written.
// Prints "A: x + 2y: 2 3 4 5 6 7 8 9", then B's result, then two replays.

// This program's one dispatch unit: every kernel, once per SIMD target,
// chosen at run time (see keel/ops/kernels/dynamic_dispatch.hpp).
#define KEEL_OPS_DISPATCH_IMPLEMENTATION
#include "keel/ops/kernels/dynamic_dispatch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "keel/host/host.hpp"
#include "keel/ops/executor_cache.hpp"
#include "keel/ops/launch.hpp"

namespace {

namespace ops = keel::ops;

void print(const char* label, const std::vector<float>& v) {
  std::printf("%s:", label);
  for (float f : v) std::printf(" %g", static_cast<double>(f));
  std::printf("\n");
}

ops::tensor view(std::vector<float>& v) {
  return ops::tensor(v.data(), ops::dtype::float32, {static_cast<std::int64_t>(v.size())});
}

}  // namespace

int main() {
  const ops::kernel_table& kernels = ops::dynamic_kernels();
  std::printf("SIMD target: %s\n", kernels.target);
  // On the host backend, host memory is device memory: tensors view vectors.
  keel::host::stream stream{keel::host::default_device()};
  std::vector<float> x(8), y(8, 0.5f), sum(8), scaled(8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);

  // Client A: the adaptor. A miss prepares and keeps the executor; a hit
  // runs it on this call's pointers and values, never an earlier call's.
  ops::executor_cache<> cache_a(kernels, 64);
  ops::exec(cache_a, stream, ops::add_op{}, view(x), view(y), 2.0f, view(sum));

  // Client B: raw two-phase, on the same stream, with its own workspace
  // (released in stream order, so never reused under a pending task).
  ops::executor ex = ops::prepare_addcmul(kernels, view(sum), view(sum), view(y), 0.5f, view(scaled),
                                          {1, ops::executor_use::once});
  keel::host::device_buffer workspace{stream, std::max<std::size_t>(ex.workspace_size(), 1)};
  ops::run_on(stream, ex, workspace.span());
  stream.synchronize();
  print("A: x + 2y", sum);
  print("B: sum + 0.5 sum y", scaled);

  // A's add captured once; every replay reads x as it is at run time.
  keel::host::model model;
  {
    keel::host::capture_scope capture{stream};
    ops::exec(cache_a, stream, ops::add_op{}, view(x), view(y), 2.0f, view(sum));
    model = capture.end();
  }
  for (float base : {10.0f, 100.0f}) {
    std::fill(x.begin(), x.end(), base);
    model.execute(stream);
    stream.synchronize();
    print(base == 10.0f ? "replay, x = 10" : "replay, x = 100", sum);
  }
  std::printf("cache A: %zu executor(s), %zu hit(s), %zu miss(es)\n", cache_a.size(), cache_a.hits(),
              cache_a.misses());

  // out may be exactly an input (in place), never part of one.
  const ops::tensor head(x.data(), ops::dtype::float32, {7}), shifted(x.data() + 1, ops::dtype::float32, {7});
  try {
    ops::exec(cache_a, stream, ops::add_op{}, head, head, 1.0f, shifted);
  } catch (const keel::error& e) {
    std::printf("refused (a deliberate partial overlap): %s\n", e.what());
  }
  print("x untouched", x);
  return 0;
}
