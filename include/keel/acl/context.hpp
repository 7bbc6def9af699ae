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
  static seen& last_seen() noexcept {
    thread_local seen s;
    return s;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
