// SPDX-License-Identifier: Apache-2.0
// The host backend's capture and model records: a capture appends the work
// its streams issue to one list, in issue order (a topological order of the
// recorded dependencies); a model replays that list in one tight loop.
#pragma once

#include <exception>
#include <memory>
#include <vector>

#include "keel/host/detail/group_state.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

struct stream_state;

/// @cond
// Where a capturing stream's work goes: the capture's nodes, or the task
// group one of its streams marks. Used under the device books' lock.
struct capture_target : ref_counted {
  std::vector<replay_task> nodes;
  std::vector<ref_ptr<group_state>> groups;
  ref_ptr<group_state> open_group;
  const stream_state* group_stream = nullptr;
  std::vector<std::shared_ptr<void>> owned;  // what the model owns beyond its tasks (conditions)
};

struct model_state : ref_counted {
  model_state(device_state& d, std::vector<replay_task> n, std::vector<ref_ptr<group_state>> g)
      : dev(&d), nodes(std::move(n)), groups(std::move(g)) {
    d.retain();
  }
  ~model_state() { device_state::drop(dev); }
  model_state(const model_state&) = delete;
  model_state& operator=(const model_state&) = delete;
  device_state* dev;
  std::vector<replay_task> nodes;
  std::vector<ref_ptr<group_state>> groups;
  checked::model_books books;  // the checked layer's: the counts capture kept, the model's life
  std::shared_ptr<void> built;  // a built model's build (keel/host/built_model.hpp); null for a captured one
  std::vector<std::shared_ptr<void>> owned;  // what its capture made beyond tasks (conditions, keel/host/conditional.hpp)
  // A conditional body (keel/host/conditional.hpp): the checked layer's books
  // of its parent capture; null for any other model.
  std::unique_ptr<checked::body_books<stream_state*>> body;

  // The replay loop: the recorded work runs right here, on the executing
  // stream's worker, one indirect call per task. After a task throws (or
  // when the stream is already in its error state: work == false) the rest
  // of the work is skipped but event operations still run, so a stream
  // waiting on an event this model records never hangs; the first failure
  // is rethrown at the end.
  void run(bool work = true) const {
    std::exception_ptr failure;
    for (const replay_task& t : nodes) {
      if (work) {
        try {
          t();
        } catch (...) {
          failure = std::current_exception();
          work = false;
        }
      } else if (t.runs_when_failed()) {
        try {
          t.run_failed();
        } catch (...) {
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
