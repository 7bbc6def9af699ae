// SPDX-License-Identifier: Apache-2.0
// A stream over a backend without launch_kernel: the stream layer names the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::lacks_launch_kernel;
#endif

int main() {
  keel::basic_stream<backend> s{keel::host::default_device()};
  s.synchronize();
}
