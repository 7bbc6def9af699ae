// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/status.hpp: included by the header
// (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled once
// into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that define it.
#pragma once

#include <string>
#include <utility>

#include "keel/acl/status.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {
namespace detail {

KEEL_DECL std::string acl_category_impl::message(int code) const {
  const char* text = status_text(code);
  if (text == nullptr) return "unknown ACL status " + std::to_string(code);
  return std::string(text) + " (" + status_name(code) + ")";
}

KEEL_DECL std::error_condition acl_category_impl::default_error_condition(int code) const noexcept {
  const int condition = keel_condition(code);
  if (condition < 0) return {code, *this};
  return {condition, keel::keel_category()};
}

KEEL_DECL bool acl_category_impl::equivalent(int code, const std::error_condition& condition) const noexcept {
  const std::error_condition own = default_error_condition(code);
  if (own == condition) return true;
  return own.category() == keel::keel_category() && own.value() != 0 &&
         keel::keel_category().default_error_condition(own.value()) == condition;
}

KEEL_BEGIN_COLD_DEFINITIONS
KEEL_NOINLINE KEEL_DECL void throw_status(status code, const char* function, const std::string& recent) {
  std::string rule = "status " + std::to_string(code);
  if (!recent.empty()) rule += "; runtime says: " + recent;
  throw keel::error(make_status_code(code), function == nullptr ? "ACL" : function, std::move(rule));
}
KEEL_END_COLD_DEFINITIONS

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
