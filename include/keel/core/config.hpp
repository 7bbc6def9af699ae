// SPDX-License-Identifier: Apache-2.0
// keel's build configuration: the inline ABI namespace every keel name lives
// in, and whether keel's process-wide state comes from the compiled
// keel_runtime library (CMake target keel::runtime) or from this shared
// object's own copy of the headers.
#pragma once

#include "keel/version.hpp"

/**
 * @def KEEL_ABI_NAMESPACE
 * @brief The inline namespace keel's names live in (`keel::v0::error`,
 * spelled `keel::error`). It enters every mangled name, so a host and a
 * plugin built against keel versions of different ABIs do not share one
 * definition of a type by accident: what they pass each other fails to link
 * or to load (RTLD_NOW: "undefined symbol") instead of misbehaving.
 * Bumped with every release that breaks the ABI (every minor release while
 * keel is 0.x is allowed to). A build may define it to keep its own keel
 * apart from any other in the process; the tests use that to build a
 * plugin of a "different version".
 */
#ifndef KEEL_ABI_NAMESPACE
#define KEEL_ABI_NAMESPACE v0
#endif

/**
 * @def KEEL_BEGIN_NAMESPACE
 * @brief Opens `namespace keel { inline namespace KEEL_ABI_NAMESPACE {`.
 * Every keel header declares its names between KEEL_BEGIN_NAMESPACE and
 * KEEL_END_NAMESPACE, forward declarations included: a declaration of
 * `keel::x` outside them declares a different entity than keel's own.
 * Specialise keel's templates as `keel::name<...>` from anywhere, as usual.
 */
#define KEEL_BEGIN_NAMESPACE \
  namespace keel {           \
  inline namespace KEEL_ABI_NAMESPACE {
/// @brief Closes what KEEL_BEGIN_NAMESPACE opened.
#define KEEL_END_NAMESPACE \
  }                        \
  }

/// @cond detail
// Declared before any keel header opens keel::detail: a header that still
// opens `namespace keel::detail` without the macros then extends this one
// (a namespace of an inline namespace is reopened through its enclosing
// one) instead of declaring a second keel::detail beside it.
KEEL_BEGIN_NAMESPACE
namespace detail {}
KEEL_END_NAMESPACE
/// @endcond

/**
 * @def KEEL_USE_RUNTIME_LIBRARY
 * @brief 1 when this shared object takes keel's process-wide state (the
 * error category, the error handler, library_loader::global(),
 * host::default_device(), the host fence's registration) from the compiled
 * keel_runtime library: linking the CMake target keel::runtime defines it.
 * Every shared object of a process that links keel::runtime then sees one
 * instance of each, whatever visibility it is built with and however it was
 * loaded (RTLD_LOCAL included).
 *
 * 0 (the header-only default): each of those lives in a function-local
 * static of an inline function, one per shared object that hides its
 * symbols (-fvisibility=hidden, as keel recommends for plugins). keel::errc
 * values still compare equal across shared objects (they are compared as
 * error conditions, by category name and value), but a plugin then has its
 * own error handler, library loader and default device. Define it for all
 * translation units of a shared object or none.
 */
#ifndef KEEL_USE_RUNTIME_LIBRARY
#define KEEL_USE_RUNTIME_LIBRARY 0
#endif

/// @cond detail
// The functions keel_runtime exports. Default visibility on the
// declarations too, so a hidden-visibility includer references the
// library's definition rather than expecting one of its own.
#if defined(KEEL_BUILDING_RUNTIME_LIBRARY) || KEEL_USE_RUNTIME_LIBRARY
#define KEEL_RUNTIME_API __attribute__((visibility("default")))
#endif
/// @endcond

// KEEL_SEPARATE_COMPILATION, which the user defines (so the API documentation
// has no entry for it; README, "Header-only or separate compilation"):
// Define it (as Asio's ASIO_SEPARATE_COMPILATION) to take keel's
// heavy non-template functions, the error and throw paths first, from the
// compiled keel_runtime library (CMake target keel::runtime, which must then
// be linked) instead of compiling them inline in every translation unit
// that includes keel: their headers then only declare them. A translation
// unit that includes the ACL backend (keel/acl/) links keel_acl_runtime
// (keel::acl_runtime) too, for the ACL backend's share. Undefined (the
// default) keel is header-only. Define it for all translation units of a
// shared object or none; the functions behave the same either way.

/**
 * @def KEEL_DECL
 * @brief How keel declares a function that KEEL_SEPARATE_COMPILATION moves
 * into keel_runtime: `inline` header-only (the definition follows in the
 * header's `impl/<name>.ipp`), exported from keel_runtime otherwise.
 */
#if defined(KEEL_SEPARATE_COMPILATION)
#define KEEL_DECL __attribute__((visibility("default")))
#else
#define KEEL_DECL inline
#endif

/**
 * @def KEEL_COLD
 * @brief Marks a function that runs only when something went wrong (a
 * throw, a report): the compiler lays it out away from hot code and treats
 * a call to it as unlikely. Its definition (in an impl/<name>.ipp) is also
 * KEEL_NOINLINE, so a call site costs a call and never builds the message.
 */
#define KEEL_COLD __attribute__((cold))

/// @cond detail
#define KEEL_NOINLINE __attribute__((noinline))
// For the few helpers of a hot path the compiler would otherwise call (a
// per-task commit is a few hundred instructions: each call's prologue counts).
#define KEEL_ALWAYS_INLINE inline __attribute__((always_inline))
// Branch hints for the few hot paths laid out for one case (a lock's owner).
#define KEEL_LIKELY(x) __builtin_expect(!!(x), 1)
#define KEEL_UNLIKELY(x) __builtin_expect(!!(x), 0)
// Around the definitions of KEEL_COLD functions: header-only they are
// `inline` (one definition per program) and `noinline` (never expanded at a
// call site), which is what keel means; GCC warns that a noinline
// definition follows an inline declaration (-Wattributes), Clang does not.
#if defined(__GNUC__) && !defined(__clang__)
#define KEEL_BEGIN_COLD_DEFINITIONS _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wattributes\"")
#define KEEL_END_COLD_DEFINITIONS _Pragma("GCC diagnostic pop")
#else
#define KEEL_BEGIN_COLD_DEFINITIONS
#define KEEL_END_COLD_DEFINITIONS
#endif
/// @endcond
