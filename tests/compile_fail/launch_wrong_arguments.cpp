// SPDX-License-Identifier: Apache-2.0
// A kernel launch whose kernel cannot take the stored arguments: the launch
// names the rule (fn(launch_context&, const Args&...)).
#include "keel/host/host.hpp"

int main() {
  keel::host::stream s{keel::host::default_device()};
  int out = 0;
#ifdef KEEL_COMPILE_FAIL_CONTROL
  s.launch(keel::kernel_kind{"store"}, [](keel::host::launch_context&, int* p, int v) { *p = v; }, &out, 7);
#else
  s.launch(keel::kernel_kind{"store"}, [](keel::host::launch_context&, int* p, int v) { *p = v; }, &out, "seven");
#endif
  s.synchronize();
  return out == 7 ? 0 : 1;
}
