// SPDX-License-Identifier: Apache-2.0
// The conformance kit as a backend author uses it from an installed keel
// (keel::testing, their own Catch2): the stream and event suites run on
// keel's host backend, here standing in for the author's backend.
#include <catch2/catch.hpp>

#include <keel/host/host.hpp>
#include <keel/testing/backend_conformance.hpp>

namespace {
void axpy_kernel(keel::host::launch_context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
void copy_kernel(keel::host::launch_context&, float* dst, const float* src) { *dst = *src; }

struct fixture : keel::testing::fixture_defaults {
  using backend = keel::host::backend;
  KEEL_RUNTIME_STREAM_ALIASES(backend)
  KEEL_RUNTIME_EVENT_ALIASES(backend)
  static keel::host::device& device() {
    static keel::host::device dev{keel::host::device_options{2, 16, 8}};
    return dev;
  }
  static void synchronize_device() { keel::host::synchronize(device()); }
  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    s.launch(keel::kernel_kind{"axpy"}, &axpy_kernel, out, tmp, other, alpha);
  }
  static void copy(stream_ref s, float* dst, const float* src) {
    s.launch(keel::kernel_kind{"copy"}, &copy_kernel, dst, src);
  }
};
}  // namespace

KEEL_BACKEND_CONFORMANCE(fixture, "installed kit", keel::testing::stream_layer, keel::testing::event_layer);
