// SPDX-License-Identifier: Apache-2.0
// keel_runtime's second part: the one definition of keel's out-of-line
// functions for the shared objects built with KEEL_SEPARATE_COMPILATION.
// Their headers only declare them then (KEEL_DECL); each is defined here
// once, exported. Built with default visibility (CMakeLists.txt), so the
// explicit instantiation below exports its members too (an instantiation
// over types of hidden visibility would be hidden).
#if !defined(KEEL_SEPARATE_COMPILATION)
#error "keel_runtime is built with KEEL_SEPARATE_COMPILATION (its CMake target defines it)"
#endif

#include "keel/host/backend.hpp"

#include "keel/core/impl/error.ipp"
#include "keel/runtime/impl/stream.ipp"

// The checked host backend's out-of-line calls (keel/host/backend.hpp
// declares this instantiation extern under KEEL_SEPARATE_COMPILATION).
template struct keel::checked::backend<keel::host::detail::native>;
