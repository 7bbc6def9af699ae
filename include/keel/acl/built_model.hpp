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

  static stream_handle persistent_stream(device_type& dev) {
    return stream_config_calls::create_configured_stream(dev, keel::stream_options{keel::stream_flags::persistent, 0});
  }
  static bool is_persistent(stream_handle s) noexcept { return s->persistent; }
  static device_type& device_of(model_handle m) noexcept { return *m->dev; }
  static checked::build_books<stream_box*>* build_books(model_handle m) noexcept { return m->build.get(); }

  static model_handle build_open(device_type& dev) {
    auto box = std::make_unique<model_box>();
    box->build = std::make_unique<checked::build_books<stream_box*>>();
    box->dev = &dev;
    dev.check(entered(dev).aclmdlRIBuildBegin(&box->native, 0), "aclmdlRIBuildBegin");
    return box.release();
  }

  static void build_bind(model_handle m, stream_handle s, bool head) {
    m->bound.reserve(m->bound.size() + 1);
    s->dev->check(entered(*s->dev).aclmdlRIBindStream(m->native, s->native, head ? model_stream_head : model_stream_activated),
                  "aclmdlRIBindStream");
    m->bound.push_back(s);
    std::lock_guard<std::mutex> lock(s->m);
    s->keeper = s;  // what its recorded work uses is kept until build end, then by the model
    s->capture_records.restart();
  }
  static void build_end_task(model_handle m, stream_handle s) {
    s->dev->check(entered(*s->dev).aclmdlRIEndTask(m->native, s->native), "aclmdlRIEndTask");
  }
  static void build_activate(stream_handle s, stream_handle target) {
    s->dev->check(entered(*s->dev).aclrtActiveStream(target->native, s->native), "aclrtActiveStream");
  }
  static void build_switch(stream_handle s, const void* left, compare_condition c, const void* right, compare_type t,
                           stream_handle target) {
    // CANN takes the device values through void*; it only reads them.
    s->dev->check(entered(*s->dev).aclrtSwitchStream(const_cast<void*>(left), c, const_cast<void*>(right), t,
                                                     target->native, nullptr, s->native),
                  "aclrtSwitchStream");
  }
  static void build_finish(model_handle m) {
    m->dev->check(entered(*m->dev).aclmdlRIBuildEnd(m->native, nullptr), "aclmdlRIBuildEnd");
    for (stream_handle s : m->bound) {
      std::lock_guard<std::mutex> lock(s->m);
      m->keep.insert(m->keep.end(), std::make_move_iterator(s->keep.begin()), std::make_move_iterator(s->keep.end()));
      s->keep.clear();
      m->host_calls = m->host_calls || std::exchange(s->capture_host_calls, false);
      std::lock_guard<std::mutex> launches(m->launch_m);
      s->capture_records.append_to(m->launches, m->launch_arguments);
      m->launch_streams.push_back(s->native);
    }
  }
  static void build_unbind(model_handle m, stream_handle s) {
    s->dev->check(entered(*s->dev).aclmdlRIUnbindStream(m->native, s->native), "aclmdlRIUnbindStream");
    m->bound.erase(std::remove(m->bound.begin(), m->bound.end(), s), m->bound.end());
    std::lock_guard<std::mutex> lock(s->m);
    s->keeper = nullptr;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
