// SPDX-License-Identifier: Apache-2.0
// keel's error model: one error_category, a system_error that names the API
// and the rule it broke, and the replaceable handler destructors report to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief The conditions keel itself reports. Backends report their own
 * status codes through their own categories; these are keel's.
 *
 * An error condition enum: `ec == keel::errc::timeout` asks the categories
 * whether @c ec is an instance of the condition, so a code keel threw in
 * another shared object (with its own copy of keel's category, see
 * KEEL_USE_RUNTIME_LIBRARY) or a backend status equivalent to it (ACL's)
 * compares equal. make_error_code(errc) makes a code of keel_category().
 *
 * The numbering is stable: it is part of the ABI of programs that log codes,
 * and two shared objects' keel categories agree on it.
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
  // Any shared object's keel category is keel's category: the numbering is
  // stable, and the name is what survives hidden visibility (the address
  // does not, and std::error_category compares addresses).
  static bool is_keel(const std::error_category& category) noexcept {
    return std::strcmp(category.name(), "keel") == 0;
  }
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
  // A keel code is an instance of a keel condition of the same value,
  // whichever shared object's category either of them has.
  bool equivalent(int code, const std::error_condition& condition) const noexcept override {
    if (is_keel(condition.category())) return code == condition.value();
    return default_error_condition(code) == condition;
  }
  bool equivalent(const std::error_code& code, int condition) const noexcept override {
    if (is_keel(code.category())) return code.value() == condition;
    return *this == code.category() && code.value() == condition;
  }
};

#if KEEL_USE_RUNTIME_LIBRARY
// Defined in keel_runtime: the one category of the process.
KEEL_RUNTIME_API const std::error_category& process_keel_category() noexcept;
#endif

}  // namespace detail

/**
 * @brief The category of keel::errc: one per process with keel::runtime,
 * one per shared object otherwise (see KEEL_USE_RUNTIME_LIBRARY; codes
 * compare equal to keel::errc either way). Throws: nothing.
 */
inline const std::error_category& keel_category() noexcept {
#if KEEL_USE_RUNTIME_LIBRARY
  return detail::process_keel_category();
#else
  static const detail::keel_category_impl category;
  return category;
#endif
}

/** @brief @p code as a std::error_code of keel_category(). Throws: nothing. */
inline std::error_code make_error_code(errc code) noexcept {
  return {static_cast<int>(code), keel_category()};
}

/** @brief @p code as a std::error_condition of keel_category(). Throws: nothing. */
inline std::error_condition make_error_condition(errc code) noexcept {
  return {static_cast<int>(code), keel_category()};
}

KEEL_END_NAMESPACE

// The standard library's trait, specialized: nothing of keel's to document.
/// @cond
template <>
struct std::is_error_condition_enum<keel::errc> : std::true_type {};
/// @endcond

KEEL_BEGIN_NAMESPACE

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

/**
 * @name throw_error
 * @brief Throws keel::error(code, api, rule). Cold and never inlined (see
 * KEEL_COLD): a call site pays a call, never the construction of the
 * message, which is built here; with KEEL_SEPARATE_COMPILATION this code is
 * compiled once, in keel_runtime. Pass string literals as they are: the
 * `const char*` forms build no std::string at the call site.
 * @{
 */
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(std::error_code code, const char* api, const char* rule);
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(std::error_code code, const char* api, const std::string& rule);
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(std::error_code code, const std::string& api, const std::string& rule);
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(errc code, const char* api, const char* rule);
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(errc code, const char* api, const std::string& rule);
[[noreturn]] KEEL_COLD KEEL_DECL void throw_error(errc code, const std::string& api, const std::string& rule);
/** @} */

/// @cond
namespace detail {
// One piece of a rule's text that a cold throw helper assembles: a C string,
// a std::string's characters, or an integer. A template's throw site passes
// its pieces (a pointer and a size each, or a number) and builds nothing;
// the message is built in throw_composed, out of line.
class message_piece {
 public:
  message_piece(const char* text) noexcept : text_(text), size_(npos) {}
  message_piece(const std::string& text) noexcept : text_(text.data()), size_(text.size()) {}
  message_piece(std::string_view text) noexcept : text_(text.data()), size_(text.size()) {}
  template <
      class Int,
      std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, char>, int> = 0>
  message_piece(Int n) noexcept
      : size_(std::is_signed_v<Int> ? signed_number : unsigned_number), number_(static_cast<unsigned long long>(n)) {}

  // Appends the piece to @p out (may throw std::bad_alloc).
  KEEL_DECL void append_to(std::string& out) const;

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);  // text_ is NUL-terminated
  static constexpr std::size_t unsigned_number = npos - 1;           // number_ holds the value
  static constexpr std::size_t signed_number = npos - 2;             // number_ holds a long long's bits
  const char* text_ = nullptr;
  std::size_t size_;
  unsigned long long number_ = 0;
};

// Throws keel::error(code, api, the pieces joined). Cold, never inlined.
[[noreturn]] KEEL_COLD KEEL_DECL void throw_composed(errc code, const char* api,
                                                     std::initializer_list<message_piece> pieces);
}  // namespace detail
/// @endcond

/**
 * @brief Called when a destructor (which must not throw) meets a failure:
 * a native close that reported an error, a plugin finalizer that failed.
 *
 * @param code the status; @param api the call that failed; @param message
 * what happened. The handler must not throw.
 */
using error_handler = void (*)(std::error_code code, const char* api, const char* message) noexcept;

namespace detail {

// Prints one line to stderr: the handler in force when none was set.
KEEL_COLD KEEL_DECL void default_error_handler(std::error_code code, const char* api, const char* message) noexcept;

// The slot holds the handler set, or null for the default: each shared
// object then uses its own default_error_handler, so a slot shared across
// shared objects never points into one that may be unloaded because
// set_error_handler(nullptr) was called there.
#if KEEL_USE_RUNTIME_LIBRARY
// Defined in keel_runtime: the one handler slot of the process.
KEEL_RUNTIME_API std::atomic<error_handler>& process_error_handler_slot() noexcept;
#endif

inline std::atomic<error_handler>& error_handler_slot() noexcept {
#if KEEL_USE_RUNTIME_LIBRARY
  return process_error_handler_slot();
#else
  static std::atomic<error_handler> slot{nullptr};
  return slot;
#endif
}

inline error_handler handler_or_default(error_handler handler) noexcept {
  return handler != nullptr ? handler : &default_error_handler;
}

}  // namespace detail

/**
 * @brief Replaces the process-wide handler that destructors report to and
 * returns the previous one. A null handler restores the default, which
 * prints one line to stderr. Thread-safe. Reaches plugins built with hidden
 * visibility only when every shared object links keel::runtime
 * (KEEL_USE_RUNTIME_LIBRARY); otherwise each has its own handler. A handler
 * must stay loaded while it is in force: a plugin that sets one restores
 * the previous one before it is unloaded.
 */
inline error_handler set_error_handler(error_handler handler) noexcept {
  if (handler == &detail::default_error_handler) handler = nullptr;
  return detail::handler_or_default(detail::error_handler_slot().exchange(handler, std::memory_order_acq_rel));
}

/** @brief The handler in force (never null). Thread-safe. */
inline error_handler get_error_handler() noexcept {
  return detail::handler_or_default(detail::error_handler_slot().load(std::memory_order_acquire));
}

/** @brief Reports a failure from a noexcept context to the handler in force. */
inline void report_error(std::error_code code, const char* api, const char* message) noexcept {
  get_error_handler()(code, api, message);
}

/** @brief Reports a keel::errc failure from a noexcept context to the handler in force. */
inline void report_error(errc code, const char* api, const char* message) noexcept {
  report_error(make_error_code(code), api, message);
}

/** @brief Reports the exception in flight (call from a catch block) to the handler. Cold, out of line. */
KEEL_COLD KEEL_DECL void report_current_exception(const char* api) noexcept;

KEEL_END_NAMESPACE  // namespace keel

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/core/impl/error.ipp"
#endif
