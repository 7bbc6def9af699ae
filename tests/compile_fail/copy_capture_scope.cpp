// SPDX-License-Identifier: Apache-2.0
// A capture scope holds the capture: copying one does not compile.
#include "keel/host/host.hpp"

int main() {
  keel::host::stream s{keel::host::default_device()};
  keel::host::capture_scope capture{s};
#ifndef KEEL_COMPILE_FAIL_CONTROL
  keel::host::capture_scope second = capture;
  second.cancel();
#endif
  capture.cancel();
}
