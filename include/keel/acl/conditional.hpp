// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native conditional calls: aclmdlRICondHandleCreate and
// aclmdlRICondHandleGetCondPtr on the model a stream captures,
// aclmdlRIAddCondTask (whose body models ACL makes), and the capture into a
// body (aclmdlRICaptureToModelRIBegin, in capture_calls). The checked layer
// (keel/runtime/checked/conditional.hpp) checks every rule before ACL is asked.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/runtime/backend/conditional.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
// keel's record of a condition: ACL's handle and its device value. The
// capture's keep list owns it, then the model.
struct condition_box {
  acl::cond_handle native = nullptr;
  std::uint64_t* value = nullptr;
  checked::condition_books books;  // the checked layer's
};

struct conditional_calls : native_types {
  using condition_handle = condition_box*;

  static checked::condition_books& condition_books_of(condition_handle c) noexcept { return c->books; }
  static std::uint64_t* condition_ptr(condition_handle c) noexcept { return c->value; }
  /** The aclmdlRICondHandle under keel's record. */
  static acl::cond_handle to_native(condition_handle c) noexcept { return c->native; }
  static checked::body_books<stream_box*>* body_books_of(model_handle m) noexcept { return m->body.get(); }

  static condition_handle condition_create(stream_handle s, std::uint32_t default_value, bool assign) {
    device& dev = *s->dev;
    const api& a = entered(dev);
    acl::model_handle model = nullptr;
    acl::capture_status st = acl::capture_status::none;
    dev.check(a.aclmdlRICaptureGetInfo(s->native, &st, &model), "aclmdlRICaptureGetInfo");
    auto box = std::make_shared<condition_box>();
    const stream_handle keeper = keeper_of(s);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.reserve(keeper->keep.size() + 1);
    }
    dev.check(a.aclmdlRICondHandleCreate(model, default_value,
                                         assign ? cond_handle_flag::assign_default : cond_handle_flag::none,
                                         &box->native),
              "aclmdlRICondHandleCreate");
    dev.check(a.aclmdlRICondHandleGetCondPtr(box->native, &box->value), "aclmdlRICondHandleGetCondPtr");
    condition_box* raw = box.get();
    std::lock_guard<std::mutex> lock(keeper->m);
    keeper->keep.push_back(std::move(box));  // reserved above
    return raw;
  }

  static void captured_conditional(stream_handle s, condition_handle c, conditional_kind kind, std::size_t n,
                                   model_handle* out) {
    device& dev = *s->dev;
    std::vector<std::shared_ptr<model_box>> bodies;
    bodies.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto body = std::make_shared<model_box>();
      body->dev = &dev;
      body->body = std::make_unique<checked::body_books<stream_box*>>();
      bodies.push_back(std::move(body));
    }
    std::vector<acl::model_handle> natives(n, nullptr);
    const stream_handle keeper = keeper_of(s);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.reserve(keeper->keep.size() + n);
      keeper->capture_bodies.reserve(keeper->capture_bodies.size() + n);
    }
    const cond_task_params params{c->native, static_cast<cond_task_type>(kind), static_cast<std::uint32_t>(n),
                                  natives.data()};
    dev.check(entered(dev).aclmdlRIAddCondTask(params, s->native, 0), "aclmdlRIAddCondTask");
    std::lock_guard<std::mutex> lock(keeper->m);
    for (std::size_t i = 0; i < n; ++i) {
      bodies[i]->native = natives[i];
      out[i] = bodies[i].get();
      keeper->capture_bodies.push_back(bodies[i].get());  // reserved above: the parent asks them about host callables
      keeper->keep.push_back(std::move(bodies[i]));  // the parent owns its bodies (reserved above)
    }
  }

  static void capture_into(stream_handle s, model_handle body) noexcept { s->capture_into = body; }
  static void capture_into_clear(stream_handle s) noexcept { s->capture_into = nullptr; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
