// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native built-model calls: aclrtCreateStreamWithConfig
// with ACL_STREAM_PERSISTENT, aclmdlRIBuildBegin, aclmdlRIBindStream,
// aclmdlRIEndTask, aclrtActiveStream, aclrtSwitchStream, aclmdlRIBuildEnd and
// aclmdlRIUnbindStream (hicann/runtime docs/zh/api_ref/15 and 06). The
// checked layer (keel/runtime/checked/built_model.hpp) checks every rule
// before ACL is asked; the work a bound stream takes in between is issued to
// ACL as it comes, which records it into the model.
#pragma once

#include <algorithm>
#include <iterator>
#include <memory>
#include <mutex>
#include <utility>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/stream.hpp"
#include "keel/acl/stream_config.hpp"
#include "keel/runtime/backend/built_model.hpp"
#include "keel/runtime/checked/build_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct built_model_calls : native_types {
  static constexpr std::uint32_t model_stream_head = 0x00000000U;       // ACL_MODEL_STREAM_FLAG_HEAD
  static constexpr std::uint32_t model_stream_activated = 0x7FFFFFFFU;  // ACL_MODEL_STREAM_FLAG_DEFAULT

  KEEL_DECL static stream_handle persistent_stream(device_type& dev);
  static bool is_persistent(stream_handle s) noexcept { return s->persistent; }
  static device_type& device_of(model_handle m) noexcept { return *m->dev; }
  static checked::build_books<stream_box*>* build_books(model_handle m) noexcept { return m->build.get(); }

  KEEL_DECL static model_handle build_open(device_type& dev);

  KEEL_DECL static void build_bind(model_handle m, stream_handle s, bool head);
  KEEL_DECL static void build_end_task(model_handle m, stream_handle s);
  KEEL_DECL static void build_activate(stream_handle s, stream_handle target);
  KEEL_DECL static void build_switch(stream_handle s, const void* left, compare_condition c, const void* right, compare_type t,
                           stream_handle target);
  KEEL_DECL static void build_finish(model_handle m);
  KEEL_DECL static void build_unbind(model_handle m, stream_handle s);
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/built_model.ipp"
#endif
