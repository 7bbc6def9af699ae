// SPDX-License-Identifier: Apache-2.0
// A buffer over a backend without keep_alive: the memory layer names the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::lacks_keep_alive;
#endif

int main() {
  keel::basic_stream<backend> s{keel::host::default_device()};
  keel::basic_device_buffer<backend> b{s, 64};
  (void)b.size();
}
