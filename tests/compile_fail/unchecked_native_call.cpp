// SPDX-License-Identifier: Apache-2.0
// The host backend's native layer is not public: a captured launch runs
// without the checked layer's rules (on a stream that is not capturing it
// has no capture to record into), so user code cannot name it through
// keel::host::backend. The checked launch_host, which applies the rules, compiles.
#include "keel/host/backend.hpp"

int main() {
  keel::host::device dev;
  const keel::host::backend::stream_handle s = keel::host::backend::create_stream(dev);
  keel::host::backend::launch_host(s, [] {});
#ifndef KEEL_COMPILE_FAIL_CONTROL
  keel::host::backend::captured_launch_host(s, [] {});
#endif
  keel::host::backend::synchronize(s);
  keel::host::backend::destroy_stream(s);
}
