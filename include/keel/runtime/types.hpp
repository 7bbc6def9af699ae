// SPDX-License-Identifier: Apache-2.0
// Vocabulary shared by every runtime backend: capture modes, event flags,
// kernel identities, copy directions and the capture status report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief Which calls are refused while a capture is in progress (the device
 * runtime's capture modes): `global` refuses unsafe calls from every thread,
 * `thread_local_` only from the thread that began the capture, `relaxed`
 * refuses none.
 */
enum class capture_mode : std::uint8_t { global, thread_local_, relaxed };

/** @brief The name of a capture mode, for diagnostics. Throws: nothing. */
constexpr std::string_view to_string(capture_mode mode) noexcept {
  switch (mode) {
    case capture_mode::global: return "global";
    case capture_mode::thread_local_: return "thread-local";
    case capture_mode::relaxed: return "relaxed";
  }
  return "unknown";
}

/**
 * @brief How an event behaves. `timing` events record a timestamp;
 * `external` events stay signalled once recorded until a stream resets them,
 * and a wait on one blocks until it is signalled (they are scarce on devices:
 * take them from an external-event pool). The flags cannot be combined.
 */
enum class event_flags : std::uint8_t { default_, timing, external };

/**
 * @brief How a record or a wait inside a capture treats a default event
 * (the flag of the operation, not of the event). `default_`: the record is
 * an edge inside the model and a wait must be on an event recorded in the
 * same capture. `external`: the model's record is visible outside it (a
 * stream or another model may wait on it) and the model's wait waits on a
 * record made outside it (a stream's, or another model's external record):
 * CANN's ACL_EVENT_RECORD_EXTERNAL / ACL_EVENT_WAIT_EXTERNAL. Each execution
 * of the model makes its external records and takes what its external waits
 * wait for when it is issued, in the executing stream's order, as a
 * stream's record and wait are. Only on a capturing stream (or a stream
 * bound to a model being built), only on default events, and one capture
 * may not both record and wait on the same event externally.
 */
enum class event_operation : std::uint8_t { default_, external };

/** @brief Direction of a copy; `host_to_host` exists for completeness. */
enum class copy_kind : std::uint8_t { host_to_host, host_to_device, device_to_host, device_to_device };

/** @brief The name of a copy's direction ("host to device"), for diagnostics and dumps. Throws: nothing. */
constexpr std::string_view to_string(copy_kind kind) noexcept {
  switch (kind) {
    case copy_kind::host_to_host: return "host to host";
    case copy_kind::host_to_device: return "host to device";
    case copy_kind::device_to_host: return "device to host";
    case copy_kind::device_to_device: return "device to device";
  }
  return "unknown";
}

/** @brief Where memory lives: device memory, page-locked host memory, or ordinary host memory. */
enum class memory_kind : std::uint8_t { device, pinned_host, pageable_host };

/**
 * @brief A range of memory for a copy, optionally sharing ownership of its
 * allocation so that work which uses it (and every model that captured that
 * work) keeps it alive.
 *
 * Ownership: shares `owner` (may be empty for memory the caller keeps alive).
 * Thread safety: a value; copies are independent. Exceptions: none of its own.
 */
struct memory_span {
  /// The first byte.
  void* data = nullptr;
  /// The length in bytes.
  std::size_t bytes = 0;
  /// Which kind of memory the range lies in.
  memory_kind where = memory_kind::pageable_host;
  /// Shares ownership of the allocation; empty for memory the caller keeps alive.
  std::shared_ptr<void> owner;
};

/** @brief A span over caller-owned host memory (no ownership shared). Throws: nothing. */
inline memory_span host_span(void* data, std::size_t bytes) noexcept {
  return {data, bytes, memory_kind::pageable_host, nullptr};
}
/** @brief A read-only span over caller-owned host memory. Throws: nothing. */
inline memory_span host_span(const void* data, std::size_t bytes) noexcept {
  return {const_cast<void*>(data), bytes, memory_kind::pageable_host, nullptr};
}

/** @brief The copy direction between two kinds of memory. Throws: nothing. */
constexpr copy_kind copy_direction(memory_kind dst, memory_kind src) noexcept {
  const bool d = dst == memory_kind::device;
  const bool s = src == memory_kind::device;
  return d ? (s ? copy_kind::device_to_device : copy_kind::host_to_device)
           : (s ? copy_kind::device_to_host : copy_kind::host_to_host);
}

/**
 * @brief The identity of a kernel: what a task-group update must match.
 *
 * Ownership: a view of a string with static storage (a literal). Thread
 * safety: immutable. Exceptions: every member is noexcept. Two kinds are the
 * same kernel when their names are equal.
 */
class kernel_kind {
 public:
  /// A kind named @p name (the view must outlive the kind: a string literal).
  constexpr explicit kernel_kind(std::string_view name) noexcept : name_(name) {}
  /// The kind's name, as launches and updates compare it.
  constexpr std::string_view name() const noexcept { return name_; }
  friend constexpr bool operator==(kernel_kind a, kernel_kind b) noexcept { return a.name_ == b.name_; }
  friend constexpr bool operator!=(kernel_kind a, kernel_kind b) noexcept { return !(a == b); }

 private:
  std::string_view name_;
};

/** @brief Whether, and how, a stream is capturing. */
enum class capture_state : std::uint8_t { none, active, invalidated };

/**
 * @brief What a capture-status query reports: any code (another library in
 * the same process) can ask, to avoid calls that would break a capture.
 */
struct capture_info {
  /// None, active or invalidated.
  capture_state state = capture_state::none;
  /// The mode of the capture (meaningful while capturing).
  capture_mode mode = capture_mode::global;
  bool group_open = false;       ///< a task group is being marked on this stream
  bool updating = false;         ///< the stream is between update begin and end
  std::uint64_t capture_id = 0;  ///< unique per capture, 0 when not capturing
  /// Whether a capture is active on the stream.
  bool capturing() const noexcept { return state == capture_state::active; }
};

KEEL_END_NAMESPACE  // namespace keel
