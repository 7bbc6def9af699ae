// SPDX-License-Identifier: Apache-2.0
// A scope guard runs its action once: copying one does not compile.
#include "keel/core/scope_guard.hpp"

int main() {
  int runs = 0;
  keel::scope_exit guard{[&runs]() noexcept { ++runs; }};
#ifndef KEEL_COMPILE_FAIL_CONTROL
  keel::scope_exit twice = guard;
  twice.dismiss();
#endif
  return runs;
}
