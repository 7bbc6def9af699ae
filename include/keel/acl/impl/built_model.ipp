// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/built_model.hpp (built_model_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/built_model.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto built_model_calls::persistent_stream(device_type& dev) -> stream_handle {
  return stream_config_calls::create_configured_stream(dev, keel::stream_options{keel::stream_flags::persistent, 0});
}

KEEL_DECL auto built_model_calls::build_open(device_type& dev) -> model_handle {
  auto box = std::make_unique<model_box>();
  box->build = std::make_unique<checked::build_books<stream_box*>>();
  box->dev = &dev;
  dev.check(entered(dev).aclmdlRIBuildBegin(&box->native, 0), "aclmdlRIBuildBegin");
  return box.release();
}

KEEL_DECL void built_model_calls::build_bind(model_handle m, stream_handle s, bool head) {
  m->bound.reserve(m->bound.size() + 1);
  s->dev->check(entered(*s->dev).aclmdlRIBindStream(m->native, s->native, head ? model_stream_head : model_stream_activated),
                "aclmdlRIBindStream");
  m->bound.push_back(s);
  std::lock_guard<std::mutex> lock(s->m);
  s->keeper = s;  // what its recorded work uses is kept until build end, then by the model
  s->capture_records.restart();
  s->capture_untyped.clear();  // a built model pairs no conditional task: nothing is moved into it
  s->capture_conditionals.clear();
}

KEEL_DECL void built_model_calls::build_end_task(model_handle m, stream_handle s) {
  s->dev->check(entered(*s->dev).aclmdlRIEndTask(m->native, s->native), "aclmdlRIEndTask");
}

KEEL_DECL void built_model_calls::build_activate(stream_handle s, stream_handle target) {
  s->dev->check(entered(*s->dev).aclrtActiveStream(target->native, s->native), "aclrtActiveStream");
}

KEEL_DECL void built_model_calls::build_switch(stream_handle s, const void* left, compare_condition c, const void* right, compare_type t,
                           stream_handle target) {
  // CANN takes the device values through void*; it only reads them.
  s->dev->check(entered(*s->dev).aclrtSwitchStream(const_cast<void*>(left), c, const_cast<void*>(right), t,
                                                   target->native, nullptr, s->native),
                "aclrtSwitchStream");
}

KEEL_DECL void built_model_calls::build_finish(model_handle m) {
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

KEEL_DECL void built_model_calls::build_unbind(model_handle m, stream_handle s) {
  s->dev->check(entered(*s->dev).aclmdlRIUnbindStream(m->native, s->native), "aclmdlRIUnbindStream");
  m->bound.erase(std::remove(m->bound.begin(), m->bound.end(), s), m->bound.end());
  std::lock_guard<std::mutex> lock(s->m);
  s->keeper = nullptr;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
