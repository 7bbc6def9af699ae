// SPDX-License-Identifier: Apache-2.0
// The checked layer's stream-configuration rules: a stream's options are
// checked once, here, before the native backend makes the stream; a forced
// destruction keeps the capture and update books as a plain one does.
#pragma once

#include <string>

#include "keel/core/error.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/stream_options.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief The stream-configuration layer over native backend @p Native, mixed
 * into a backend beside checked::backend<Native>.
 *
 * What @p Native supplies: `create_configured_stream(device&, const
 * stream_options&)`, `configured_options(h)`, `runtime_stream_id(h)`,
 * `stream_priorities(device&)` and `discard_stream_work(h) noexcept` (the
 * stream's work not yet started is dropped; its next destroy_stream does not
 * wait for it).
 *
 * Ownership: none (static calls). Thread safety: every call is thread-safe.
 * Exceptions: keel::error invalid_parameter naming the option; nothing is made.
 */
template <class Native>
struct stream_config {
  /// @cond KEEL_BACKEND_OPERATIONS
  using N = Native;

  static typename N::stream_handle create_stream_with(typename N::device_type& dev, const stream_options& options) {
    static constexpr const char* api = "keel::stream (stream_options)";
    const auto bits = static_cast<std::uint32_t>(options.flags);
    if ((bits & ~known_stream_flag_bits) != 0)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"stream_options::flags holds bits no stream flag has (",
                                      bits & ~known_stream_flag_bits, "): combine keel::stream_flags values only"});
    const stream_priority_range range = N::stream_priorities(dev);
    if (static_cast<std::int64_t>(options.priority) < range.greatest ||
        static_cast<std::int64_t>(options.priority) > range.least)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"stream_options::priority ", options.priority, " is outside the device's range [",
                                      range.greatest, " (highest), ", range.least, " (lowest)]"});
    return N::create_configured_stream(dev, options);
  }

  static stream_options options_of(typename N::stream_handle s) { return N::configured_options(s); }
  static std::int32_t runtime_id_of(typename N::stream_handle s) { return N::runtime_stream_id(s); }
  static stream_priority_range priority_range(typename N::device_type& dev) { return N::stream_priorities(dev); }

  // The books go as for destroy_stream (a capture the stream began is
  // discarded, one it joined invalidated, an update abandoned); the native
  // destruction then finds nothing left to wait for.
  static void destroy_stream_force(typename N::stream_handle s) noexcept {
    N::discard_stream_work(s);
    backend<N>::destroy_stream(s);
  }
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
