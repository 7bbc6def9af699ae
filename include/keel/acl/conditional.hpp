// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native conditional calls: aclmdlRICondHandleCreate and
// aclmdlRICondHandleGetCondPtr on the model a stream captures,
// aclmdlRIAddCondTask (whose body models ACL makes), and the capture into a
// body (aclmdlRICaptureToModelRIBegin, in capture_calls). The checked layer
// (keel/runtime/checked/conditional.hpp) checks every rule before ACL is asked.
#pragma once

#include <algorithm>
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

  KEEL_DECL static condition_handle condition_create(stream_handle s, std::uint32_t default_value, bool assign);

  KEEL_DECL static void captured_conditional(stream_handle s, condition_handle c, conditional_kind kind, std::size_t n,
                                   model_handle* out);

  static void capture_into(stream_handle s, model_handle body) noexcept { s->capture_into = body; }
  static void capture_into_clear(stream_handle s) noexcept { s->capture_into = nullptr; }

 private:
  // Room for @p n more in @p v, grown geometrically: a reserve of size + n
  // per call would copy the whole list at every conditional of a capture.
  template <class V>
  static void room_for(V& v, std::size_t n) {
    if (v.capacity() - v.size() < n) v.reserve(std::max(v.size() + n, 2 * v.size()));
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/conditional.ipp"
#endif
