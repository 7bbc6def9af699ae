// SPDX-License-Identifier: Apache-2.0
// What the backend layers are built from: a detection idiom (is a call
// well-formed for a backend B?) and the probe arguments the layers call with.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"

/// @cond
KEEL_BEGIN_NAMESPACE namespace detail {

// is_detected_v<Op, B>: Op<B> is well-formed. One alias template per required
// call lets each missing call fail its own static_assert, in C++17 and C++20.
template <class Void, template <class> class Op, class B>
struct detector : std::false_type {};
template <template <class> class Op, class B>
struct detector<std::void_t<Op<B>>, Op, B> : std::true_type {};
template <template <class> class Op, class B>
inline constexpr bool is_detected_v = detector<void, Op, B>::value;

// Op<B> is well-formed and has exactly type R.
template <class Void, class R, template <class> class Op, class B>
struct exact_detector : std::false_type {};
template <class R, template <class> class Op, class B>
struct exact_detector<std::void_t<Op<B>>, R, Op, B> : std::is_same<R, Op<B>> {};
template <class R, template <class> class Op, class B>
inline constexpr bool is_detected_exact_v = exact_detector<void, R, Op, B>::value;

// The named member type of B, or a type that names no handle.
struct no_such_type {};
template <class Void, template <class> class Op, class B>
struct detected_or_none {
  using type = no_such_type;
};
template <template <class> class Op, class B>
struct detected_or_none<std::void_t<Op<B>>, Op, B> {
  using type = Op<B>;
};
template <template <class> class Op, class B>
using detected_or_none_t = typename detected_or_none<void, Op, B>::type;

// Native handles are values: trivially copyable, and value-initialised to "no handle".
template <class H>
inline constexpr bool is_native_handle_v = std::is_trivially_copyable_v<H> && !std::is_same_v<H, no_such_type>;

// Calls whose argument is a callable are probed with these.
struct probe_kernel {
  template <class Context>
  void operator()(Context&) const {}
};
struct probe_host {
  void operator()() const {}
};

} KEEL_END_NAMESPACE  // namespace keel::detail
/// @endcond
