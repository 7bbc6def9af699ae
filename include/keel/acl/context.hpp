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
#include "keel/acl/device.hpp"
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
  static context_handle create_native_context(device_type& dev) {
    const api& a = entered(dev);
    acl::context_handle before = nullptr;
    const bool had = a.aclrtGetCurrentContext(&before) == 0 && before != nullptr;
    auto box = std::make_unique<context_box>();
    box->dev = &dev;
    dev.check(a.aclrtCreateContext(&box->native, dev.id()), "aclrtCreateContext");
    if (had) {
      const status st = a.aclrtSetCurrentContext(before);
      if (st != 0) {
        (void)a.aclrtDestroyContext(box->native);
        dev.check(st, "aclrtSetCurrentContext");
      }
    } else {
      dev.current_on_this_thread() = 0;  // the next call binds the device again (aclrtSetDevice)
    }
    std::lock_guard<std::mutex> lock(registry().m);
    registry().boxes[box->native] = box.get();
    return box.release();
  }

  static void destroy_native_context(context_handle c) noexcept {
    {
      std::lock_guard<std::mutex> lock(registry().m);
      registry().boxes.erase(c->native);
    }
    if (last_seen().native == c->native) last_seen() = {};
    const auto destroy = entered(*c->dev).aclrtDestroyContext.get();
    const status st = destroy != nullptr ? destroy(c->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyContext", "the context could not be destroyed");
    delete c;
  }

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
  static context_handle from_native(device_type& dev, acl::context_handle native, adoption how,
                                    handle_tag<context_handle>, const char* api) {
    // ACL destroys the default context itself (aclrtResetDevice) and refuses
    // aclrtDestroyContext on it: an owner could only fail when it ends.
    if (how == adoption::own && native != nullptr && native == dev.default_context())
      ::keel::detail::throw_composed(::keel::errc::invalid_parameter, api,
                                     {"the ACL context is device ", dev.id(),
                                      "'s default context (aclrtSetDevice binds it, aclrtResetDevice ends it): "
                                      "keel cannot own it; view it with context_ref(dev, native)"});
    std::lock_guard<std::mutex> lock(registry().m);
    auto& r = registry();
    auto it = r.boxes.find(native);
    if (it != r.boxes.end()) {
      context_box* box = it->second;
      if (box->dev != &dev) return box;  // the caller refuses a context of another device
      if (how == adoption::own) {
        if (!box->adopted)
          throw_error(::keel::errc::invalid_parameter, api,
                      "a keel context owns this ACL handle already (release() it first)");
        take_adopted(box);
      }
      return box;
    }
    auto box = std::make_unique<context_box>();
    box->native = native;
    box->dev = &dev;
    box->adopted = how == adoption::view;
    if (box->adopted) r.adopted.reserve(r.adopted.size() + 1);  // may throw: nothing taken yet
    r.boxes.emplace(native, box.get());                         // may throw: nothing taken yet
    if (!box->adopted) return box.release();
    r.adopted.push_back(std::move(box));
    return r.adopted.back().get();
  }
  /** The owner gives the ACL context up: keel keeps its record for the process (views keep working). */
  static acl::context_handle release_native(context_handle c) noexcept {
    std::lock_guard<std::mutex> lock(registry().m);
    try {
      registry().adopted.emplace_back(c);
      c->adopted = true;
    } catch (...) {
      // Out of memory: the record is kept by nobody but stays valid (it is never destroyed).
      c->adopted = true;
    }
    return c->native;
  }

  // aclrtGetCurrentContext, as keel's record (one made for a context keel did
  // not make); none when ACL says the thread has no context. The last answer
  // is kept per thread, so a scope pays one map look-up only on a change.
  static context_handle native_current_context(device_type& dev) {
    const api& a = entered(dev);
    acl::context_handle native = nullptr;
    if (a.aclrtGetCurrentContext(&native) != 0 || native == nullptr) return nullptr;
    seen& last = last_seen();
    if (last.native == native && last.box != nullptr) return last.box;
    std::lock_guard<std::mutex> lock(registry().m);
    context_box*& slot = registry().boxes[native];
    if (slot == nullptr) {
      auto box = std::make_unique<context_box>();
      box->native = native;
      box->dev = &dev;
      box->adopted = true;
      registry().adopted.push_back(std::move(box));
      slot = registry().adopted.back().get();
    }
    last = seen{native, slot};
    return slot;
  }

  static void make_context_current(context_handle c) {
    device& dev = *c->dev;
    dev.check(entered(dev).aclrtSetCurrentContext(c->native), "aclrtSetCurrentContext");
    dev.current_on_this_thread() = dev.serial_;  // a context of the device is current: no aclrtSetDevice needed
    last_seen() = seen{c->native, c};
  }

  // ACL cannot unset a thread's context: keel forgets it set one, and the
  // next call into ACL binds the device's default context (aclrtSetDevice).
  static void clear_current_context(device_type&) noexcept {
    device::current_on_this_thread() = 0;
    last_seen() = {};
  }

 private:
  struct books_of_contexts {
    std::mutex m;
    std::unordered_map<acl::context_handle, context_box*> boxes;
    std::vector<std::unique_ptr<context_box>> adopted;  // kept for the process: few, and a scope may restore one late
  };
  static books_of_contexts& registry() noexcept {
    static books_of_contexts* const r = new books_of_contexts;  // outlives every static that may use it at exit
    return *r;
  }
  struct seen {
    acl::context_handle native = nullptr;
    context_box* box = nullptr;
  };
  // An owner takes a record keel kept (made elsewhere, or released): the
  // registry lock is held. The record's storage becomes the owner's.
  static void take_adopted(context_box* box) noexcept {
    auto& kept = registry().adopted;
    for (auto& p : kept)
      if (p.get() == box) {
        (void)p.release();
        p = std::move(kept.back());
        kept.pop_back();
        break;
      }
    box->adopted = false;
  }
  static seen& last_seen() noexcept {
    thread_local seen s;
    return s;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
