// SPDX-License-Identifier: Apache-2.0
// Error checks for backend-generic tests, without a test framework: whether an
// error code is an instance of one of keel's conditions.
#pragma once

#include <system_error>

#include "keel/core/error.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace testing {

/**
 * @brief Whether @p code is an instance of keel's condition @p c, whatever the
 * backend's category (ACL reports ACL statuses equivalent to keel's conditions).
 * Throws: nothing.
 */
inline bool is(const std::error_code& code, keel::errc c) noexcept {
  return code == std::error_condition(static_cast<int>(c), keel::keel_category());
}

/**
 * @brief keel's own errors (the templates, keel's backends) must carry
 * exactly @p c; a backend's own status must be equivalent to it. Throws: nothing.
 */
inline bool matches(const std::error_code& code, keel::errc c) noexcept {
  return code.category() == keel::keel_category() ? code == keel::make_error_code(c) : is(code, c);
}

} KEEL_END_NAMESPACE  // namespace keel::testing
