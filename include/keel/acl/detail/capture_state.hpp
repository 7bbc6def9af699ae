// SPDX-License-Identifier: Apache-2.0
// The ACL backend's model record: the aclmdlRI and what its captured work
// uses (memory owners, host callables), which live as long as the model.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/acl/detail/group_state.hpp"
#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/types.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/checked/build_books.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;

namespace detail {
struct stream_box;

/// @cond
struct model_box {
  model_handle native = nullptr;
  device* dev = nullptr;
  std::vector<std::shared_ptr<void>> keep;  // what the captured copies use (host callables included)
  bool host_calls = false;  // it replays host callables: its executing stream needs a reporting thread
  std::vector<model_box*> bodies;  // its conditional bodies (owned through keep), which may replay host callables too
  // Its conditional tasks and its streams' untyped task counts, as its
  // capture counted them (stream_box::capture_conditionals): what pairs each
  // conditional task with its bodies (introspection.hpp). Fixed at capture end.
  std::vector<conditional_task> conditionals;
  std::vector<untyped_count> untyped;
  bool untyped_lost = false;

  // Whether @p native is one of its conditional bodies, at any depth.
  bool holds_body(const void* native_body) const noexcept {
    for (const model_box* b : bodies)
      if (b->native == native_body || b->holds_body(native_body)) return true;
    return false;
  }
  // Whether an execution replays host callables, its bodies' (at any depth) included.
  bool replays_host_calls() const noexcept {
    if (host_calls) return true;
    for (const model_box* b : bodies)
      if (b->replays_host_calls()) return true;
    return false;
  }
  // Whether the device owns the record (its keel owner released it): keel
  // never destroys the ACL model then. Changed under the registry's lock.
  std::atomic<bool> adopted{false};
  checked::model_books books;  // the checked layer's
  // A model built from bound streams (keel/acl/built_model.hpp): the checked
  // layer's build books, and the streams bound to it (whose keep lists move
  // into the model at build end). Null / empty for a captured model.
  std::unique_ptr<checked::build_books<stream_box*>> build;
  std::vector<stream_box*> bound;
  // A conditional body (keel/acl/conditional.hpp): its parent's capture, in
  // the checked layer's books; its parent's keep list owns the record, and
  // ACL destroys the body with the parent. Null for any other model.
  std::unique_ptr<checked::body_books<stream_box*>> body;
  // The destroy callbacks registered through keel (the checked layer's lock
  // guards them): ACL calls one trampoline of keel's (registered with the
  // first), which runs them, each reported if it throws (a C++ exception
  // must not cross the runtime's C code), and frees the list. Owned by
  // that registration, not by the record: a model its owner released and
  // destroyed through ACL still runs them.
  struct destroy_callback_list {
    std::vector<std::pair<void (*)(void*), void*>> entries;
  };
  destroy_callback_list* destroy_callbacks = nullptr;
  // Per-task and whole-model updates (keel/acl/model_update.hpp): one
  // updater at a time, and what it staged: a task and the task whose
  // parameters it takes (null: disable it). Claim holder only.
  std::atomic<bool> update_claimed{false};
  std::vector<std::pair<void*, void*>> staged;
  // Typed kernel arguments staged for a task (set_arguments): the task's
  // index in the model's list, its new arguments, and the model of the one
  // kernel task the launch issued again with them (whose parameters the
  // task takes). Claim holder only.
  struct staged_launch {
    std::size_t task = 0;
    std::vector<kernel_argument> arguments;
    std::shared_ptr<void> source;
  };
  std::vector<staged_launch> staged_launches;
  // The task the last task_index call found (a copy of the runtime's
  // parameters: the checked layer reads it through a pointer). Claim holder only.
  task_info located;
  // The kernels stream::launch issued while the model was captured (or
  // built), the aclrtStreams in the order they joined, and per task whose
  // arguments an update set, the model its parameters came from (kept while
  // this model may run them). Guarded by launch_m.
  std::mutex launch_m;
  std::vector<typed_launch> launches;
  std::vector<kernel_argument> launch_arguments;  // each launch's are a range of it (typed_launch::first_argument)
  std::vector<stream_handle> launch_streams;
  std::vector<std::pair<std::size_t, std::shared_ptr<void>>> argument_sources;
  // Per task group (its aclrtTaskGrp as task_info::group names it), the
  // arguments its last committed update gave its tasks, as tasks() last
  // reported them: kept while they may be read (until a later report).
  std::vector<std::pair<std::uint64_t, std::shared_ptr<const group_arguments>>> group_arguments_seen;
  stream_handle scratch = nullptr;  // the aclrtStream set_arguments issues launches again on (destroyed with the model)
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
