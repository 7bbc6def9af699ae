// SPDX-License-Identifier: Apache-2.0
// out = tmp + alpha * other, captured once into a model and executed twice;
// between the executions a task-group update changes alpha from 1.1 to 5.5.
// Prints 2.2 for every element, then 6.6. (The vendor's sample: ~200 lines of
// C with manual frees and no checks.)
#include <cstdio>
#include <vector>

#include "keel/runtime.hpp"

namespace {

// A kernel: arguments arrive by value, as the launch stored them.
void add_kernel(keel::host::launch_context& ctx, keel::memory_span out, keel::memory_span tmp,
                keel::memory_span other, float alpha) {
  auto* o = static_cast<float*>(out.data);
  auto* t = static_cast<const float*>(tmp.data);
  auto* x = static_cast<const float*>(other.data);
  ctx.parallel_for(out.bytes / sizeof(float), 1024, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) o[i] = t[i] + alpha * x[i];
  });
}
constexpr keel::kernel_kind add{"add"};

void print(const char* label, const std::vector<float>& v) {
  std::printf("%s:", label);
  for (float f : v) std::printf(" %.1f", static_cast<double>(f));
  std::printf("\n");
}

}  // namespace

int main() try {
  constexpr std::size_t n = 8, bytes = n * sizeof(float);
  auto& dev = keel::host::default_device();
  keel::host::stream main_stream{dev}, update_stream{dev};
  std::vector<float> tmp_host(n, 1.1f), other_host(n, 1.0f), out_host(n, 0.0f);

  keel::host::device_buffer tmp{main_stream, bytes}, other{main_stream, bytes}, out{main_stream, bytes};
  main_stream.copy_async(tmp.span(), keel::host_span(tmp_host.data(), bytes));
  main_stream.copy_async(other.span(), keel::host_span(other_host.data(), bytes));

  keel::host::model model;
  keel::host::task_group alpha_group;
  {
    keel::host::capture_scope capture{main_stream};
    keel::host::task_group_scope mark{main_stream};
    main_stream.launch(add, &add_kernel, out.span(), tmp.span(), other.span(), 1.1f);
    alpha_group = mark.end();
    main_stream.copy_async(keel::host_span(out_host.data(), bytes), out.span());
    model = capture.end();  // an exception before this line discards the capture
  }

  model.execute(main_stream);
  main_stream.synchronize();
  print("alpha 1.1", out_host);

  {
    keel::host::update_scope update{update_stream, alpha_group};  // checked: count and kind must match
    update_stream.launch(add, &add_kernel, out.span(), tmp.span(), other.span(), 5.5f);
    update.end();
  }
  update_stream.synchronize();
  model.execute(main_stream);
  main_stream.synchronize();
  print("alpha 5.5", out_host);
  return 0;
} catch (const keel::error& e) {
  std::fprintf(stderr, "keel error: %s\n", e.what());
  return 1;
}
