// SPDX-License-Identifier: Apache-2.0
// The runtime suites are written once over a backend fixture F and run on
// every backend in KEEL_TEST_BACKENDS: `host` (keel's host backend) and, when
// the build has the ACL emulation, `acl` (keel's ACL backend over
// libascendcl.so from KEEL_ACL_EMULATION_DIR, loaded at run time). A fixture
// names the backend's handle types (KEEL_RUNTIME_HANDLE_ALIASES), a shared
// test device, and how the backend issues the suites' two kernels: axpy
// (out = tmp + alpha * other, one float) and copy (dst = src, one float).
// Test names end in " - host" or " - acl".
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include "keel/runtime.hpp"

#include "../support/conditions.hpp"

#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#endif

namespace keel_test {

// keel's own errors (the host backend, the runtime templates) must carry
// exactly c; a backend's own status must be equivalent to it.
inline bool matches(const std::error_code& code, keel::errc c) {
  return code.category() == keel::keel_category() ? code == keel::make_error_code(c) : is(code, c);
}

// Runs f and returns the keel::error it threw, as text (or "no error").
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return std::string(e.what()) + " [" + e.code().message() + "]";
  }
  return "no error";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

constexpr keel::kernel_kind axpy_kind{"axpy"};
constexpr keel::kernel_kind copy_kind{"copy"};
constexpr keel::kernel_kind store_kind{"store"};

inline void axpy_kernel(keel::host::launch_context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
inline void copy_kernel(keel::host::launch_context&, float* dst, const float* src) { *dst = *src; }
inline void store_kernel(keel::host::launch_context&, std::atomic<int>* slot, int value) {
  slot->store(value, std::memory_order_relaxed);
}

inline keel::host::device& test_device() {
  static keel::host::device dev{keel::host::device_options{2, 16, 8}};
  return dev;
}

}  // namespace keel_test

// ---- the backends ------------------------------------------------------------

struct host {
  using backend = keel::host::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = true;
  // An update_scope left without end() discards the replacement (ACL applies
  // a replacement that matched: it cannot cancel an update).
  static constexpr bool abandon_discards_update = true;
  // Replays of one model may overlap on different streams: the suites'
  // store kernel writes an atomic.
  static constexpr bool replays_may_overlap = true;
  static constexpr int stress_ms = 1000;
  // Updating a task group whose model was destroyed: the host backend keeps
  // the group's record and says the group's state forbids it.
  static constexpr keel::errc dead_group_update = keel::errc::invalid_state;

  static keel::host::device& device() { return keel_test::test_device(); }
  static void synchronize_device() { keel::host::synchronize(device()); }
  static keel::capture_info thread_capture_status() { return keel::host::thread_capture_status(device()); }

  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, out, tmp, other, alpha);
  }
  static void copy(stream_ref s, float* dst, const float* src) {
    s.launch(keel_test::copy_kind, &keel_test::copy_kernel, dst, src);
  }
  using slot = std::atomic<int>;
  static void store(stream_ref s, slot* where, int value) {
    s.launch(keel_test::store_kind, &keel_test::store_kernel, where, value);
  }
  static int load(const slot& where) { return where.load(); }
  // A runtime rule broken by a kernel launch is reported as that rule.
  static bool is_launch_error(const std::error_code& code, keel::errc rule) { return keel_test::matches(code, rule); }
};

#ifdef KEEL_ACL_EMULATION_DIR
struct acl {
  using backend = keel::acl::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = false;
  static constexpr bool abandon_discards_update = false;
  // The kernels are aclnn operators writing plain floats: overlapping replays
  // of one model would race on its output (ThreadSanitizer says so).
  static constexpr bool replays_may_overlap = false;
  static constexpr int stress_ms = 300;
  // Updating a task group whose model was destroyed: an aclrtTaskGrp belongs
  // to its model (aclmdlRICaptureTaskGrpEnd) and goes with it
  // (aclmdlRIDestroy), so the handle is no longer a valid resource handle:
  // ACL_ERROR_RT_INVALID_HANDLE, 107017 "invalid resource handle" (CANN
  // aclError list, hicann/runtime docs/03_api_ref/25-01_aclError.md;
  // https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_1821.html
  // for aclmdlRIDestroy).
  static constexpr keel::errc dead_group_update = keel::errc::invalid_handle;

  static keel::acl::device& device() {
    static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
    return dev;
  }
  static void synchronize_device() { backend::synchronize_device(device()); }
  static keel::capture_info thread_capture_status() { return backend::thread_capture_status(device()); }

  static keel::ops::tensor one(const float* p) {
    return keel::ops::tensor(const_cast<float*>(p), keel::ops::dtype::float32, {1});
  }
  // aclnnAdd: out = tmp + alpha * other.
  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    keel::acl::run_on(s, keel::acl::prepare_add(device(), one(tmp), one(other), keel::ops::scalar(alpha), one(out)));
  }
  // aclnnCast float32 -> float32: another kind of kernel than axpy.
  static void copy(stream_ref s, float* dst, const float* src) {
    keel::acl::run_on(s, keel::acl::prepare_cast(device(), one(src), one(dst)));
  }
  using slot = float;
  static void store(stream_ref s, slot* where, int value) {
    static const float zero = 0.0f, unit = 1.0f;
    axpy(s, where, &zero, &unit, static_cast<float>(value));
  }
  static int load(const slot& where) { return static_cast<int>(where); }
  // aclnnXxx reports a runtime rule its launch broke as ACLNN_ERR_RUNTIME_ERROR
  // (361001); keel::acl::run_on reports the runtime's own status under it
  // (aclrtGetLastError), so the rule's condition holds here as on the host.
  static bool is_launch_error(const std::error_code& code, keel::errc rule) { return keel_test::matches(code, rule); }
};
#define KEEL_TEST_BACKENDS host, acl
#else
#define KEEL_TEST_BACKENDS host
#endif

// A test written once, run on each backend (TestType is the fixture).
#define KEEL_BACKEND_TEST(name, tags) TEMPLATE_TEST_CASE(name, tags, KEEL_TEST_BACKENDS)

// The fixture's handle types as plain names inside a test.
#define KEEL_USING_BACKEND(F)                                       \
  using stream [[maybe_unused]] = typename F::stream;                                \
  using stream_ref [[maybe_unused]] = typename F::stream_ref;                        \
  using event [[maybe_unused]] = typename F::event;                                  \
  using event_ref [[maybe_unused]] = typename F::event_ref;                          \
  using external_event_pool [[maybe_unused]] = typename F::external_event_pool;      \
  using model [[maybe_unused]] = typename F::model;                                  \
  using model_ref [[maybe_unused]] = typename F::model_ref;                          \
  using capture_scope [[maybe_unused]] = typename F::capture_scope;                  \
  using task_group [[maybe_unused]] = typename F::task_group;                        \
  using task_group_ref [[maybe_unused]] = typename F::task_group_ref;                \
  using task_group_scope [[maybe_unused]] = typename F::task_group_scope;            \
  using update_scope [[maybe_unused]] = typename F::update_scope;                    \
  using concurrent_update [[maybe_unused]] = typename F::concurrent_update;          \
  using device_buffer [[maybe_unused]] = typename F::device_buffer;                  \
  using pinned_buffer [[maybe_unused]] = typename F::pinned_buffer;                  \
  auto& dev = F::device();                                          \
  (void)dev

// A gate: tasks issued after gate.hold(stream) wait until gate.open().
namespace keel_test {
class gate {
 public:
  template <class StreamRef>
  void hold(StreamRef s) {
    s.launch_host([this] {
      while (!open_.load(std::memory_order_acquire)) std::this_thread::yield();
    });
  }
  void open() { open_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> open_{false};
};
}  // namespace keel_test

// expr must throw keel::error matching condition (keel_test::matches); the
// text must contain fragment when the error is keel's own (an ACL status
// carries ACL's text instead).
#define KEEL_REQUIRE_ERROR(expr, expected, fragment)                                    \
  do {                                                                                  \
    bool keel_thrown_ = false;                                                          \
    try {                                                                               \
      expr;                                                                             \
    } catch (const keel::error& keel_e_) {                                              \
      keel_thrown_ = true;                                                              \
      INFO(keel_e_.what());                                                             \
      CHECK(::keel_test::matches(keel_e_.code(), (expected)));                          \
      if (keel_e_.code().category() == keel::keel_category())                           \
        CHECK(std::string(keel_e_.what()).find(fragment) != std::string::npos);         \
    }                                                                                   \
    CHECK(keel_thrown_);                                                                \
  } while (false)
