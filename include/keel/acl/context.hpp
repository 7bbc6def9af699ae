// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native context calls: aclrtCreateContext,
// aclrtDestroyContext, aclrtSetCurrentContext and aclrtGetCurrentContext.
// keel keeps a record per context it made, and one per context made
// elsewhere that it meets as a thread's current one (the default context
// aclrtSetDevice binds, another framework's), so a scope can restore it.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/detail/device.hpp"
#include "keel/runtime/backend/native.hpp"
#include "keel/runtime/checked/context.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct context_box {
  acl::context_handle native = nullptr;
  device* dev = nullptr;
  bool adopted = false;  // made elsewhere: keel never destroys it
  checked::context_books books;
};

struct context_calls : native_types {
  using context_handle = context_box*;

  static checked::context_books& books(context_handle c) noexcept { return c->books; }

  // aclrtCreateContext also makes the new context current on the calling
  // thread (CANN's rule); keel leaves the thread as it was.
  KEEL_DECL static context_handle create_native_context(device_type& dev);

  KEEL_DECL static void destroy_native_context(context_handle c) noexcept;

  static device_type& native_context_device(context_handle c) noexcept { return *c->dev; }

  /** The aclrtContext under keel's record. */
  static acl::context_handle to_native(context_handle c) noexcept { return c->native; }
  /**
   * keel's record of @p native (context_ref(dev, native),
   * context::from_native_handle): the one keel has (a keel context's, one met
   * as a thread's current context, one released), or a new one for a
   * context made elsewhere, which keel keeps for the process unless an owner
   * takes it. An owner takes the ACL context: destroying the owner destroys it.
   */
  KEEL_DECL static context_handle from_native(device_type& dev, acl::context_handle native, adoption how,
                                    handle_tag<context_handle>, const char* api);
  /** The owner gives the ACL context up: keel keeps its record for the process (views keep working). */
  KEEL_DECL static acl::context_handle release_native(context_handle c) noexcept;

  // aclrtGetCurrentContext, as keel's record (one made for a context keel did
  // not make); none when ACL says the thread has no context. The last answer
  // is kept per thread, so a scope pays one map look-up only on a change.
  KEEL_DECL static context_handle native_current_context(device_type& dev);

  KEEL_DECL static void make_context_current(context_handle c);

  // ACL cannot unset a thread's context: keel forgets it set one, and the
  // next call into ACL binds the device's default context (aclrtSetDevice).
  KEEL_DECL static void clear_current_context(device_type&) noexcept;

 private:
  struct books_of_contexts {
    std::mutex m;
    std::unordered_map<acl::context_handle, context_box*> boxes;
    std::vector<std::unique_ptr<context_box>> adopted;  // kept for the process: few, and a scope may restore one late
  };
  KEEL_DECL static books_of_contexts& registry() noexcept;
  struct seen {
    acl::context_handle native = nullptr;
    context_box* box = nullptr;
  };
  // An owner takes a record keel kept (made elsewhere, or released): the
  // registry lock is held. The record's storage becomes the owner's.
  KEEL_DECL static void take_adopted(context_box* box) noexcept;
  KEEL_DECL static seen& last_seen() noexcept;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/context.ipp"
#endif
