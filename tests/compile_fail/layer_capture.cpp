// SPDX-License-Identifier: Apache-2.0
// A capture scope over a backend without capture_end: the capture layer names the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::lacks_capture_end;
#endif

int main() {
  keel::basic_stream<backend> s{keel::host::default_device()};
  keel::basic_capture_scope<backend> capture{s};
  capture.cancel();
}
