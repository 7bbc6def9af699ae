// SPDX-License-Identifier: Apache-2.0
// The tracing decorator at work: capture out = tmp + alpha * other, run it,
// update alpha, run it again, on keel's host backend seen through
// tracing::backend; every native call keel makes is printed as it happens.
#include <cstdio>
#include <string>

#include "keel/host/host.hpp"
#include "tracing_backend.hpp"

namespace traced {
using backend = tracing::backend<keel::host::backend>;
KEEL_RUNTIME_HANDLE_ALIASES(backend)
}  // namespace traced

namespace {
void add_kernel(keel::host::launch_context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
void print(const std::string& line) noexcept { std::printf("  %s\n", line.c_str()); }
}  // namespace

int main() {
  keel::host::device dev{keel::host::device_options{1, 8, 4}};
  tracing::set_sink(&print);
  float out = 0, tmp = 1.1f, other = 1.0f;
  constexpr keel::kernel_kind add{"add"};
  {
    traced::stream s{dev}, u{dev};
    traced::model model;
    traced::task_group alpha_group;
    std::puts("capture:");
    {
      traced::capture_scope capture{s};
      traced::task_group_scope mark{s};
      s.launch(add, &add_kernel, &out, &tmp, &other, 1.1f);
      alpha_group = mark.end();
      model = capture.end();
    }
    std::puts("run:");
    model.execute(s);
    s.synchronize();
    std::printf("alpha 1.1: %.1f\n", static_cast<double>(out));
    std::puts("update:");
    {
      traced::update_scope update{u, alpha_group};
      u.launch(add, &add_kernel, &out, &tmp, &other, 5.5f);
      update.end();
    }
    std::puts("run:");
    model.execute(s);
    s.synchronize();
    std::printf("alpha 5.5: %.1f\n", static_cast<double>(out));
    std::puts("release:");
  }
  tracing::set_sink(nullptr);
}
