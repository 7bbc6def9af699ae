// SPDX-License-Identifier: Apache-2.0
// UTF-8 validation: where a string stops being well-formed UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF), for the rules
// that take text (a model's name) and the dumps that must stay valid JSON.
#pragma once

#include <cstddef>
#include <string_view>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

// The length of the well-formed UTF-8 character at @p s[i] (1 to 4), or 0
// when the bytes there begin none (a stray continuation byte, an overlong or
// surrogate form, a character cut by the string's end). Throws: nothing.
constexpr std::size_t utf8_character_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) low = 0xA0;   // no overlong form
    if (b0 == 0xED) high = 0x9F;  // no surrogate
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) low = 0x90;   // no overlong form
    if (b0 == 0xF4) high = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

// The offset of the first byte of @p s that is not part of well-formed
// UTF-8, or std::string_view::npos when all of it is. Throws: nothing.
constexpr std::size_t utf8_invalid_at(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_character_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
