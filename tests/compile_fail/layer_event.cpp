// SPDX-License-Identifier: Apache-2.0
// An event over a backend without elapsed_ms: the event layer names the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::lacks_elapsed_ms;
#endif

int main() {
  keel::basic_event<backend> e{keel::host::default_device()};
  (void)e.query();
}
