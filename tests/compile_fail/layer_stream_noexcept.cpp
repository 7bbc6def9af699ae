// SPDX-License-Identifier: Apache-2.0
// A stream over a backend whose destroy_stream may throw: refused, naming the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::throwing_destroy_stream;
#endif

int main() {
  keel::basic_stream<backend> s{keel::host::default_device()};
  s.synchronize();
}
