// SPDX-License-Identifier: Apache-2.0
// The inline example backend has streams and events only: a capture scope
// over it is refused, naming the capture layer. Its streams compile.
#include "inline_backend.hpp"

int main() {
  inline_rt::device dev;
  inline_rt::stream s{dev};
#ifndef KEEL_COMPILE_FAIL_CONTROL
  keel::basic_capture_scope<inline_rt::backend> capture{s};
  capture.cancel();
#endif
  s.synchronize();
}
