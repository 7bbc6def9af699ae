// SPDX-License-Identifier: Apache-2.0
// keel's error model: one error_category, a system_error that names the API
// and the rule it broke, and the replaceable handler destructors report to.
#pragma once

#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace keel {

/**
 * @brief The conditions keel itself reports. Backends report their own
 * status codes through their own categories; these are keel's.
 *
 * The numbering is stable: it is part of the ABI of programs that log codes.
 */
enum class errc : int {
  success = 0,
  null_parameter = 1,      ///< a required pointer, handle or tensor was null
  invalid_parameter = 2,   ///< a value, shape, dtype, stride or flag is out of its domain
  capture_violation = 3,   ///< a rule of stream capture was broken (unsafe call, foreign work)
  update_violation = 4,    ///< a rule of task-group update was broken (count, kind, concurrency)
  resource_limit = 5,      ///< a configured limit (live models, external events...) is reached
  library_load_failed = 6, ///< a shared library could not be loaded or initialised
  symbol_not_found = 7,    ///< a required entry point is missing from a library
  not_supported = 8,       ///< the runtime or backend does not offer this call
  invalid_handle = 9,      ///< a handle was used after it was moved from, released or destroyed
  task_failed = 10,        ///< work on a stream failed; the stream is in its error state
  out_of_memory = 11,      ///< an allocation failed
  would_deadlock = 12,     ///< a thread tried to lock a mutex it already holds
  invalid_state = 13,      ///< the call is valid, but not in the object's current state
  timeout = 14,            ///< a bounded wait expired before its condition held
};

namespace detail {

class keel_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "keel"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::success: return "success";
      case errc::null_parameter: return "null parameter";
      case errc::invalid_parameter: return "invalid parameter";
      case errc::capture_violation: return "stream capture rule violated";
      case errc::update_violation: return "task group update rule violated";
      case errc::resource_limit: return "resource limit reached";
      case errc::library_load_failed: return "library load failed";
      case errc::symbol_not_found: return "symbol not found";
      case errc::not_supported: return "not supported by this runtime";
      case errc::invalid_handle: return "invalid handle";
      case errc::task_failed: return "task failed";
      case errc::out_of_memory: return "out of memory";
      case errc::would_deadlock: return "operation would deadlock";
      case errc::invalid_state: return "invalid state";
      case errc::timeout: return "timed out";
    }
    return "unknown keel error " + std::to_string(code);
  }
  std::error_condition default_error_condition(int code) const noexcept override {
    // Map onto the portable conditions where one exists, so callers that
    // test against std::errc keep working.
    switch (static_cast<errc>(code)) {
      case errc::null_parameter:
      case errc::invalid_parameter: return std::errc::invalid_argument;
      case errc::not_supported: return std::errc::function_not_supported;
      case errc::out_of_memory: return std::errc::not_enough_memory;
      case errc::would_deadlock: return std::errc::resource_deadlock_would_occur;
      case errc::timeout: return std::errc::timed_out;
      default: return {code, *this};
    }
  }
};

}  // namespace detail

/** @brief The category of keel::errc. Throws: nothing. */
inline const std::error_category& keel_category() noexcept {
  static const detail::keel_category_impl category;
  return category;
}

inline std::error_code make_error_code(errc code) noexcept {
  return {static_cast<int>(code), keel_category()};
}

}  // namespace keel

// The standard library's trait, specialized: nothing of keel's to document.
/// @cond
template <>
struct std::is_error_code_enum<keel::errc> : std::true_type {};
/// @endcond

namespace keel {

/**
 * @brief The exception every keel call throws: a std::system_error whose
 * code() is the backend's status (or a keel::errc) and that also names the
 * API that failed and the rule it broke.
 *
 * Ownership: holds its strings by shared pointer, so copying never throws.
 * Thread safety: immutable after construction. Exceptions: copy is noexcept.
 *
 * @code
 * try { stream.synchronize(); }
 * catch (const keel::error& e) {
 *   if (e.code() == keel::errc::task_failed) log(e.api(), e.rule());
 * }
 * @endcode
 */
class error : public std::system_error {
 public:
  /** @param code the status; @param api the function that failed;
   *  @param rule what was wrong, in words a user can act on. */
  error(std::error_code code, std::string api, std::string rule)
      : std::system_error(code, api + ": " + rule),
        details_(std::make_shared<const details>(details{std::move(api), std::move(rule)})) {}

  /// An error of @p code raised by @p api for breaking @p rule.
  error(errc code, std::string api, std::string rule)
      : error(make_error_code(code), std::move(api), std::move(rule)) {}

  /** @brief The API (function or method) that reported the error. */
  const char* api() const noexcept { return details_->api.c_str(); }
  /** @brief The rule that was broken, without the API name or category. */
  const char* rule() const noexcept { return details_->rule.c_str(); }

 private:
  struct details {
    std::string api;
    std::string rule;
  };
  std::shared_ptr<const details> details_;
};

/** @brief Throws keel::error; kept out of line of callers' hot paths. */
[[noreturn]] inline void throw_error(std::error_code code, std::string api, std::string rule) {
  throw error(code, std::move(api), std::move(rule));
}
[[noreturn]] inline void throw_error(errc code, std::string api, std::string rule) {
  throw error(code, std::move(api), std::move(rule));
}

/**
 * @brief Called when a destructor (which must not throw) meets a failure:
 * a native close that reported an error, a plugin finalizer that failed.
 *
 * @param code the status; @param api the call that failed; @param message
 * what happened. The handler must not throw.
 */
using error_handler = void (*)(std::error_code code, const char* api, const char* message) noexcept;

namespace detail {

inline void default_error_handler(std::error_code code, const char* api, const char* message) noexcept {
  std::fprintf(stderr, "keel: %s failed in a destructor: %s (%s:%d)\n", api, message,
               code.category().name(), code.value());
}

inline std::atomic<error_handler>& error_handler_slot() noexcept {
  static std::atomic<error_handler> slot{&default_error_handler};
  return slot;
}

}  // namespace detail

/**
 * @brief Replaces the process-wide handler that destructors report to and
 * returns the previous one. A null handler restores the default, which
 * prints one line to stderr. Thread-safe.
 */
inline error_handler set_error_handler(error_handler handler) noexcept {
  if (handler == nullptr) handler = &detail::default_error_handler;
  return detail::error_handler_slot().exchange(handler, std::memory_order_acq_rel);
}

/** @brief The handler in force. Thread-safe. */
inline error_handler get_error_handler() noexcept {
  return detail::error_handler_slot().load(std::memory_order_acquire);
}

/** @brief Reports a failure from a noexcept context to the handler in force. */
inline void report_error(std::error_code code, const char* api, const char* message) noexcept {
  get_error_handler()(code, api, message);
}

/** @brief Reports the exception in flight (call from a catch block) to the handler. */
inline void report_current_exception(const char* api) noexcept {
  try {
    throw;
  } catch (const std::system_error& e) {
    report_error(e.code(), api, e.what());
  } catch (const std::exception& e) {
    report_error(make_error_code(errc::task_failed), api, e.what());
  } catch (...) {
    report_error(make_error_code(errc::task_failed), api, "unknown exception");
  }
}

}  // namespace keel
