// SPDX-License-Identifier: Apache-2.0
// How a stream is made: its flags (CANN's aclrtCreateStreamWithConfig flags,
// ACL_STREAM_PERSISTENT among them) and its priority. A small header of its
// own: model builders need the persistent flag without the stream templates.
#pragma once

#include <cstdint>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief A stream's creation flags, one bit each, with CANN's values
 * (hicann/runtime docs/zh/api_ref/06_stream_management.md,
 * aclrtCreateStreamWithConfig): `fast_launch`
 * pre-allocates launch resources, `fast_sync` polls in synchronize,
 * `persistent` keeps its tasks for a model built on the stream (bound with
 * aclmdlRIBindStream), `huge` holds more tasks, `cpu_schedule` carries AI CPU
 * scheduling tasks, `device_use_only` is used from the device only. Combine
 * with `|`; a stream reports the flags it was made with.
 */
enum class stream_flags : std::uint32_t {
  none = 0,
  fast_launch = 0x1,
  fast_sync = 0x2,
  persistent = 0x4,
  huge = 0x8,
  cpu_schedule = 0x10,
  device_use_only = 0x20,
};

/** @brief Every flag keel knows (a stream_options with other bits is refused). */
inline constexpr std::uint32_t known_stream_flag_bits = 0x3F;

/** @brief Both sets of flags. Throws: nothing. */
constexpr stream_flags operator|(stream_flags a, stream_flags b) noexcept {
  return static_cast<stream_flags>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
/** @brief The flags in both. Throws: nothing. */
constexpr stream_flags operator&(stream_flags a, stream_flags b) noexcept {
  return static_cast<stream_flags>(static_cast<std::uint32_t>(a) & static_cast<std::uint32_t>(b));
}
/** @brief Whether @p flags holds every bit of @p which. Throws: nothing. */
constexpr bool has_flags(stream_flags flags, stream_flags which) noexcept { return (flags & which) == which; }

/**
 * @brief A device's stream priorities (aclrtDeviceGetStreamPriorityRange):
 * lower numbers run first; `greatest` is the highest priority (0 on CANN's
 * devices and keel's host device), `least` the lowest (7).
 */
struct stream_priority_range {
  /// The lowest priority, the largest number.
  std::int32_t least = 7;
  /// The highest priority, the smallest number.
  std::int32_t greatest = 0;
};

/**
 * @brief How to make a stream: `basic_stream{device, stream_options{...}}`.
 * The default is what a plain stream is: no flags, priority 0 (the highest,
 * as aclrtCreateStream's streams). A value type.
 */
struct stream_options {
  /// The creation flags.
  stream_flags flags = stream_flags::none;
  /// The priority, within the device's stream_priority_range.
  std::uint32_t priority = 0;
};

KEEL_END_NAMESPACE  // namespace keel
