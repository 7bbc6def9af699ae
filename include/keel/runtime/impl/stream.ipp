// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/runtime/stream.hpp: included by the header
// (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled once
// into keel_runtime (src/keel_runtime.cpp) for the builds that define it.
#pragma once

#include <cstdio>
#include <string>

#include "keel/runtime/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
KEEL_BEGIN_COLD_DEFINITIONS
namespace detail {

KEEL_NOINLINE KEEL_DECL void throw_empty(const char* api) {
  throw_error(errc::invalid_handle, api, "the handle is empty: it was moved from, released, closed or never made");
}

KEEL_NOINLINE KEEL_DECL void throw_null_native(const char* api, const char* what) {
  throw_error(errc::null_parameter, api, std::string("null ") + what);
}

KEEL_NOINLINE KEEL_DECL void throw_of_other_device(const char* api, const char* what) {
  throw_error(errc::invalid_parameter, api, std::string("the ") + what + " belongs to another device");
}

KEEL_NOINLINE KEEL_DECL void report_scope_left_unfinished(const char* api, const char* outcome, bool by_exception) noexcept {
  if (by_exception) return;  // the exception tells; the scope cancelled all the same
  // A fixed buffer: the report is made from a destructor, which must not throw.
  char message[256];
  std::snprintf(message, sizeof message, "left without end() or cancel(): %s; call end() to finish it or cancel() to drop it",
                outcome);
  report_error(errc::invalid_state, api, message);
}

}  // namespace detail
KEEL_END_COLD_DEFINITIONS
KEEL_END_NAMESPACE
