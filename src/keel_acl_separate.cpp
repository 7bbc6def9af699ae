// SPDX-License-Identifier: Apache-2.0
// keel_acl_runtime: the ACL backend's checked layer, native calls and status
// category compiled once, for the shared objects built with
// KEEL_SEPARATE_COMPILATION (keel/acl/backend.hpp declares the checked
// instantiations extern then, and the native-call headers only declare their
// out-of-line members, defined in keel/acl/impl/<concept>.ipp, included
// here). It is keel_runtime's keel_separate.cpp for the ACL backend, a
// library of its own so that a host-only program never links the ACL
// backend. Built with default visibility (CMakeLists.txt): an explicit
// instantiation exports its members then, and the inline functions they
// still reach (the natives' one-line accessors) are the program's one copy,
// not a hidden second one.
#if !defined(KEEL_SEPARATE_COMPILATION)
#error "keel_acl_runtime is built with KEEL_SEPARATE_COMPILATION (its CMake target defines it)"
#endif

#include "keel/acl/backend.hpp"

#include "keel/acl/impl/status.ipp"
#include "keel/acl/impl/memory.ipp"
#include "keel/acl/impl/stream.ipp"
#include "keel/acl/impl/event.ipp"
#include "keel/acl/impl/capture.ipp"
#include "keel/acl/impl/task_group.ipp"
#include "keel/acl/impl/built_model.ipp"
#include "keel/acl/impl/conditional.ipp"
#include "keel/acl/impl/introspection.ipp"
#include "keel/acl/impl/stream_config.ipp"
#include "keel/acl/impl/context.ipp"
#include "keel/acl/impl/model_update.ipp"

template struct keel::checked::backend<keel::acl::detail::native>;
template struct keel::checked::built_models<keel::acl::detail::native>;
template struct keel::checked::conditionals<keel::acl::detail::native>;
template struct keel::checked::stream_config<keel::acl::detail::native>;
template struct keel::checked::contexts<keel::acl::detail::native>;
template struct keel::checked::model_updates<keel::acl::detail::native>;
