// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/core/error.hpp: the throw and report paths.
// Included by the header (inline) unless KEEL_SEPARATE_COMPILATION is
// defined, and compiled once into keel_runtime (src/keel_runtime.cpp).
#pragma once

#include <cstdio>
#include <string>
#include <system_error>

#include "keel/core/error.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
KEEL_BEGIN_COLD_DEFINITIONS

KEEL_NOINLINE KEEL_DECL void throw_error(std::error_code code, const char* api, const char* rule) {
  throw error(code, api, rule);
}
KEEL_NOINLINE KEEL_DECL void throw_error(std::error_code code, const char* api, const std::string& rule) {
  throw error(code, api, rule);
}
KEEL_NOINLINE KEEL_DECL void throw_error(std::error_code code, const std::string& api, const std::string& rule) {
  throw error(code, api, rule);
}
KEEL_NOINLINE KEEL_DECL void throw_error(errc code, const char* api, const char* rule) { throw error(code, api, rule); }
KEEL_NOINLINE KEEL_DECL void throw_error(errc code, const char* api, const std::string& rule) { throw error(code, api, rule); }
KEEL_NOINLINE KEEL_DECL void throw_error(errc code, const std::string& api, const std::string& rule) {
  throw error(code, api, rule);
}

namespace detail {
KEEL_DECL void message_piece::append_to(std::string& out) const {
  if (size_ == unsigned_number) {
    out += std::to_string(number_);
  } else if (size_ == signed_number) {
    out += std::to_string(static_cast<long long>(number_));
  } else if (size_ == npos) {
    if (text_ != nullptr) out += text_;
  } else {
    out.append(text_, size_);  // an empty string_view may have no data: append(nullptr, 0) is fine
  }
}

KEEL_NOINLINE KEEL_DECL void throw_composed(errc code, const char* api, std::initializer_list<message_piece> pieces) {
  std::string rule;
  for (const message_piece& piece : pieces) piece.append_to(rule);
  throw error(code, api, rule);
}

KEEL_NOINLINE KEEL_DECL void default_error_handler(std::error_code code, const char* api, const char* message) noexcept {
  std::fprintf(stderr, "keel: %s failed in a destructor: %s (%s:%d)\n", api, message, code.category().name(),
               code.value());
}
}  // namespace detail

KEEL_NOINLINE KEEL_DECL void report_current_exception(const char* api) noexcept {
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

KEEL_END_COLD_DEFINITIONS
KEEL_END_NAMESPACE
