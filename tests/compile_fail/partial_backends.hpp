// SPDX-License-Identifier: Apache-2.0
// Backends that lack one call of one layer: keel's host backend with that
// call hidden (a derived backend's deleted declaration hides the base's
// overloads, so the layer's detection finds no call with its arguments).
#pragma once

#include "keel/host/host.hpp"

namespace compile_fail {
struct lacks_launch_kernel : keel::host::backend {
  static void launch_kernel() = delete;
};
struct throwing_destroy_stream : keel::host::backend {
  static void destroy_stream(stream_handle) {}  // not noexcept: handles call it from destructors
};
struct lacks_elapsed_ms : keel::host::backend {
  static void elapsed_ms() = delete;
};
struct lacks_keep_alive : keel::host::backend {
  static void keep_alive() = delete;
};
struct lacks_capture_end : keel::host::backend {
  static void capture_end() = delete;
};
struct lacks_update_abort : keel::host::backend {
  static void update_abort() = delete;
};
}  // namespace compile_fail
