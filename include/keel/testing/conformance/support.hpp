// SPDX-License-Identifier: Apache-2.0
// What the conformance suites share: the fixture's defaults, error checks, a
// gate that holds a stream, the handle names per layer, and the registration
// of one suite's tests with Catch2 (2.x) for one fixture.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/testing/conditions.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/**
 * @brief The defaults of a conformance fixture: derive yours from it and
 * hide what differs on your backend.
 *
 * A fixture F names the backend (`using backend = ...;`), the handles of the
 * layers it runs (`KEEL_RUNTIME_STREAM_ALIASES(backend)`, ...), a shared test
 * device (`static device_type& device()`), `static void synchronize_device()`,
 * and how the backend launches the suites' two kernels, each a kernel of its
 * own kind: `static void axpy(stream_ref, float* out, const float* tmp, const
 * float* other, float alpha)` (`*out = *tmp + alpha * *other`) and `static
 * void copy(stream_ref, float* dst, const float* src)`. The capture layer adds
 * `static capture_info thread_capture_status()`; the task-group layer adds
 * `using slot = ...;` with `store(stream_ref, slot*, int)` (a kernel) and
 * `load(const slot&)`.
 *
 * Ownership, thread safety, exceptions: a set of constants.
 */
struct fixture_defaults {
  /// keel's own host backend: its error texts and device counters are checked too.
  static constexpr bool is_host = false;
  /// Work runs after the launch returns; false skips the tests that hold a stream with a gate.
  static constexpr bool asynchronous = true;
  /// Replays of one model may overlap on different streams (the store kernel is atomic).
  static constexpr bool replays_may_overlap = false;
  /// How long the stress test runs.
  static constexpr int stress_ms = 300;
  /// The condition of an update of a group whose model was destroyed.
  static constexpr keel::errc dead_group_update = keel::errc::invalid_state;
  /// The kernel kind names the fixture's axpy and copy launch with (what an update-mismatch error names).
  static constexpr const char* axpy_kind_name = "axpy";
  /// See axpy_kind_name.
  static constexpr const char* copy_kind_name = "copy";
  /// Whether @p code reports the runtime rule @p rule that a kernel launch broke.
  static bool is_launch_error(const std::error_code& code, keel::errc rule) { return matches(code, rule); }
};

/** @brief Runs @p f and returns the keel::error it threw, as text (or "no error"). Throws what f throws otherwise. */
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return std::string(e.what()) + " [" + e.code().message() + "]";
  }
  return "no error";
}

/** @brief Whether @p s contains @p part. Throws: nothing. */
inline bool contains(const std::string& s, const std::string& part) noexcept {
  return s.find(part) != std::string::npos;
}

/**
 * @brief Tasks issued after hold(stream) wait until open().
 *
 * Ownership: must outlive the held task. Thread safety: open() from any
 * thread. Exceptions: hold throws what the stream's launch throws.
 */
class gate {
 public:
  /// Issues the task that holds @p s until open().
  template <class StreamRef>
  void hold(StreamRef s) {
    s.launch_host([this] {
      while (!open_.load(std::memory_order_acquire)) std::this_thread::yield();
    });
  }
  /// Lets the held tasks (and what follows them) run.
  void open() noexcept { open_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> open_{false};
};

/**
 * @brief Records what keel's error handler receives while it lives (it is
 * the handler then), and restores the previous handler when it goes.
 *
 * Ownership: one at a time (it replaces the process's handler). Thread
 * safety: reports may come from any thread; read them on one. Exceptions:
 * taken() may throw std::bad_alloc; the rest nothing.
 */
class recorded_reports {
 public:
  /// One report: what keel's error handler was called with.
  struct report {
    std::error_code code;  ///< the status reported
    std::string api;       ///< the API that reported it
    std::string message;   ///< what happened
  };
  recorded_reports() noexcept : previous_(keel::set_error_handler(&record)) {
    std::lock_guard<std::mutex> lock(state().m);
    state().reports.clear();
  }
  recorded_reports(const recorded_reports&) = delete;
  recorded_reports& operator=(const recorded_reports&) = delete;
  ~recorded_reports() { keel::set_error_handler(previous_); }
  /// The reports received so far; the record is emptied.
  std::vector<report> taken() {
    std::lock_guard<std::mutex> lock(state().m);
    std::vector<report> out;
    out.swap(state().reports);
    return out;
  }

 private:
  struct shared {
    std::mutex m;
    std::vector<report> reports;
  };
  static shared& state() noexcept {
    static shared instance;
    return instance;
  }
  static void record(std::error_code code, const char* api, const char* message) noexcept {
    try {
      std::lock_guard<std::mutex> lock(state().m);
      state().reports.push_back(report{code, api, message});
    } catch (...) {  // out of memory: the report is lost, the test that expected it fails
    }
  }
  keel::error_handler previous_;
};

/// @cond
namespace detail {
enum class needs { nothing_more, asynchrony };

// Registers one test, "<name> - <suffix>", unless the fixture cannot run it.
template <class F>
void add_test(void (*body)(), const char* name, const char* tags, const std::string& suffix, const char* file,
              std::size_t line, needs what = needs::nothing_more) {
  if (what == needs::asynchrony && !F::asynchronous) return;
  const std::string full = std::string(name) + " - " + suffix;
  Catch::AutoReg(Catch::makeTestInvoker(body), Catch::SourceLineInfo(file, line), Catch::StringRef(),
                 Catch::NameAndTags{full, tags});
}
}  // namespace detail
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::testing

/// @cond
#define KEEL_TESTING_ADD(F, body, name, tags) \
  ::keel::testing::detail::add_test<F>(&body<F>, name, tags, suffix, __FILE__, __LINE__)
// A test that holds a stream with a gate, or waits before a record: it needs
// work to run after its launch returns.
#define KEEL_TESTING_ADD_ASYNC(F, body, name, tags)                                \
  ::keel::testing::detail::add_test<F>(&body<F>, name, tags, suffix, __FILE__, __LINE__, \
                                       ::keel::testing::detail::needs::asynchrony)
/// @endcond

/**
 * @brief expr must throw keel::error matching @p expected (keel::testing::matches);
 * the text must contain @p fragment when the error is keel's own (a
 * backend's status carries the runtime's text instead).
 */
#define KEEL_TESTING_REQUIRE_ERROR(expr, expected, fragment)                            \
  do {                                                                                  \
    bool keel_thrown_ = false;                                                          \
    try {                                                                               \
      expr;                                                                             \
    } catch (const keel::error& keel_e_) {                                              \
      keel_thrown_ = true;                                                              \
      INFO(keel_e_.what());                                                             \
      CHECK(::keel::testing::matches(keel_e_.code(), (expected)));                      \
      if (keel_e_.code().category() == keel::keel_category())                           \
        CHECK(std::string(keel_e_.what()).find(fragment) != std::string::npos);         \
    }                                                                                   \
    CHECK(keel_thrown_);                                                                \
  } while (false)

/** @brief The stream layer's handle names of fixture F, and `dev` (F::device()), inside a test. */
#define KEEL_TESTING_USING_STREAMS(F)                        \
  using stream [[maybe_unused]] = typename F::stream;        \
  using stream_ref [[maybe_unused]] = typename F::stream_ref; \
  auto& dev = F::device();                                   \
  (void)dev
/** @brief The event layer's handle names of fixture F inside a test. */
#define KEEL_TESTING_USING_EVENTS(F)                                            \
  using event [[maybe_unused]] = typename F::event;                             \
  using event_ref [[maybe_unused]] = typename F::event_ref;                     \
  using external_event_pool [[maybe_unused]] = typename F::external_event_pool
/** @brief The memory layer's handle names of fixture F inside a test. */
#define KEEL_TESTING_USING_MEMORY(F)                                \
  using device_buffer [[maybe_unused]] = typename F::device_buffer; \
  using pinned_buffer [[maybe_unused]] = typename F::pinned_buffer
/** @brief The capture layer's handle names of fixture F inside a test. */
#define KEEL_TESTING_USING_CAPTURE(F)                   \
  using model [[maybe_unused]] = typename F::model;     \
  using model_ref [[maybe_unused]] = typename F::model_ref; \
  using capture_scope [[maybe_unused]] = typename F::capture_scope
/** @brief The task-group layer's handle names of fixture F inside a test. */
#define KEEL_TESTING_USING_TASK_GROUPS(F)                                 \
  using task_group [[maybe_unused]] = typename F::task_group;             \
  using task_group_ref [[maybe_unused]] = typename F::task_group_ref;     \
  using task_group_scope [[maybe_unused]] = typename F::task_group_scope; \
  using update_scope [[maybe_unused]] = typename F::update_scope;         \
  using concurrent_update [[maybe_unused]] = typename F::concurrent_update
/** @brief Every layer's handle names of fixture F inside a test. */
#define KEEL_TESTING_USING_ALL(F) \
  KEEL_TESTING_USING_STREAMS(F);  \
  KEEL_TESTING_USING_EVENTS(F);   \
  KEEL_TESTING_USING_MEMORY(F);   \
  KEEL_TESTING_USING_CAPTURE(F);  \
  KEEL_TESTING_USING_TASK_GROUPS(F)
