// SPDX-License-Identifier: Apache-2.0
// The checked layer's rules for per-task and whole-model updates: one update
// of a model at a time; a task is named by its stream and sequence id and
// must be the task introspection reported there; a kernel takes new
// arguments of exactly its recorded types, a copy keeps its direction, only
// kernels and copies outside task groups are changed or disabled (a group's
// tasks are its updates'); the commit is issued on a stream that is not
// capturing. A whole-model update needs the same topology (streams, task
// kinds in order, task groups, event pairing) and names the first task that
// differs. A refused call changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/checked/rules.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief The per-task and whole-model update rules over native backend
 * @p Native, beside checked::backend<Native> (a backend with model updates
 * derives from both).
 *
 * What @p Native supplies (`stage_kernel` and `stage_copy` are optional: without
 * them, typed kernel arguments and copy addresses are refused): `try_claim_model(m)` / `end_model_claim(m)`
 * (which drops what was staged); `claimed_task_index(m, info, index)` (a
 * pointer to the task's description, valid while the caller holds the
 * claim, or null) and `task_index(m, info, index, found)` (a copy, for a
 * model the caller has not claimed);
 * `task_has_node(m, index)`; `kernel_signature(m, index)` (the identity of
 * the kernel's argument types, null when it cannot be rebuilt);
 * `stage_kernel`, `stage_copy`, `stage_from`, `stage_disable`, `staged_changes(m)`;
 * `commit_task_update(m, s)` and `commit_model_update(target, source, s)`
 * (both end the claim, also when they throw), and
 * `interleaving_mismatch(target, source)`, `with_task_lists(target, source, fn)`;
 * optionally `same_shape(target, source)` (true only when the two checks
 * above would pass: the common case answered at once) and
 * `update_kernel_in_place(m, index, args, describe, count, s)` (a
 * kernel_task's update written where executions issued from now on read it,
 * when none running can: true; false: nothing written, it is staged and
 * committed).
 *
 * Ownership: the staged changes live in the native model. Thread safety:
 * one updater per model (the claim); staging calls from the claim holder.
 * Exceptions: keel::error naming the API and the rule; a refused call
 * changes nothing.
 */
/// @cond
namespace detail {
// What a native backend offers beyond disabling and taking another task's
// parameters: kernels rebuilt from typed arguments, copies from addresses.
template <class N>
using stage_kernel_call = decltype(N::stage_kernel(std::declval<typename N::model_handle>(), std::size_t{},
                                                   static_cast<const void*>(nullptr),
                                                   ::keel::detail::arguments_describer{}, std::size_t{}));
template <class N>
using stage_copy_call = decltype(N::stage_copy(std::declval<typename N::model_handle>(), std::size_t{}, nullptr,
                                               nullptr, std::size_t{}, copy_kind{}, nullptr, nullptr));
// Optional: a whole-model update's fast check (true: the same topology; false: check it task by task).
template <class N>
using same_shape_call =
    decltype(N::same_shape(std::declval<typename N::model_handle>(), std::declval<typename N::model_handle>()));
// Optional: a prepared kernel task's update written in place (true) when no
// one can see it, instead of staged and committed (false).
template <class N>
using update_kernel_in_place_call = decltype(N::update_kernel_in_place(
    std::declval<typename N::model_handle>(), std::size_t{}, static_cast<const void*>(nullptr),
    ::keel::detail::arguments_describer{}, std::size_t{}, std::declval<typename N::stream_handle>()));
}  // namespace detail
/// @endcond

template <class Native>
struct model_updates {
  /// @cond KEEL_BACKEND_OPERATIONS
  using N = Native;
  using model_t = typename N::model_handle;
  using stream_t = typename N::stream_handle;
  /// Whether kernel tasks take typed arguments here (a kernel_task needs it).
  static constexpr bool typed_kernel_arguments = keel::detail::is_detected_v<detail::stage_kernel_call, N>;
  // Whether the checked layer keeps what the tasks use (checked/task_uses.hpp).
  static constexpr bool keeps_uses = detail::kernel_body_runs_at_issue<N>();

  static void task_update_begin(model_t m) { claim(m, "keel::task_update_scope"); }
  static void task_update_abort(model_t m) noexcept { N::end_model_claim(m); }

  template <class Tuple>
  static void task_update_set_kernel(model_t m, const task_info& task, const Tuple& args,
                                     ::keel::detail::arguments_describer describe_args, std::size_t count) {
    static constexpr const char* api = "keel::task_update_scope::set_arguments";
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    require_typed<Tuple>(m, index, found, &args, describe_args, count, api);
    if constexpr (typed_kernel_arguments) {
      std::shared_ptr<void> held = hold_arguments(m, args);
      N::stage_kernel(m, index, &args, describe_args, count);
      stage_use(m, uses_key{uses_key::kind::task, index, 0}, std::move(held));
    }
  }

  // A prepared kernel task (basic_kernel_task): the task @p task names,
  // located and checked once under the claim (a kernel outside task groups
  // whose arguments can be replaced, launched with the argument types of
  // @p Tuple, which @p describe_types names); its index.
  template <class Tuple>
  static std::size_t kernel_task_prepare(model_t m, const task_info& task,
                                         ::keel::detail::arguments_describer describe_types, std::size_t count) {
    static constexpr const char* api = "keel::kernel_task";
    claim(m, api);
    const claim_guard release{m};
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    require_typed<Tuple>(m, index, found, nullptr, describe_types, count, api);
    return index;
  }

  // A task handle whose argument types are known only at each update (an
  // operator task: they follow the executor's operator layer): the task
  // @p task names, located and checked once under the claim (a kernel
  // outside task groups whose arguments can be replaced); @p inspect sees
  // its description then, while the claim holds it still. Its index.
  template <class Inspect>
  static std::size_t prepared_task_locate(model_t m, const task_info& task, const char* api, Inspect&& inspect) {
    static_assert(typed_kernel_arguments, "keel: this backend's kernel tasks take no typed arguments");
    claim(m, api);
    const claim_guard release{m};
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    require_updatable(m, index, found, task_type::kernel, api);
    if (N::kernel_signature(m, index) == nullptr)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found),
                                      " was not launched through stream::launch with copyable arguments: "
                                      "its arguments cannot be replaced; the task is unchanged"});
    inspect(found);
    return index;
  }

  // A prepared kernel task's update: claims the model, takes @p args and
  // commits in @p s's order, in one call. Its types were checked when it was
  // prepared; a whole-model update or set_from may have retyped the task
  // since, which is checked again (one compare). @p handle names the task
  // handle in refusals (a kernel_task, an operator task: @p api's).
  template <class Tuple>
  static void kernel_task_update(model_t m, std::size_t index, const task_info& named, stream_t s, const Tuple& args,
                                 ::keel::detail::arguments_describer describe_args, std::size_t count,
                                 const char* api = "keel::kernel_task::update", const char* handle = "kernel_task") {
    static_assert(typed_kernel_arguments, "keel::kernel_task: this backend takes no typed kernel arguments");
    claim(m, api);
    claim_guard hold{m};
    if (N::books(s).session) refuse_capturing(s, api, "the model is unchanged");
    if (N::kernel_signature(m, index) != keel::detail::signature_of<Tuple>()) refuse_retyped(m, named, api, handle);
    std::shared_ptr<void> held = hold_arguments(m, args);
    if constexpr (keel::detail::is_detected_v<detail::update_kernel_in_place_call, N>) {
      if (N::update_kernel_in_place(m, index, &args, describe_args, count, s)) {
        stage_use(m, uses_key{uses_key::kind::task, index, 0}, std::move(held));
        hold.armed = false;
        commit(m, s, [&] { N::end_model_claim(m); });  // written already: published, and the claim ends
        return;
      }
    }
    N::stage_kernel(m, index, &args, describe_args, count);
    stage_use(m, uses_key{uses_key::kind::task, index, 0}, std::move(held));
    hold.armed = false;
    commit(m, s, [&] { N::commit_task_update(m, s); });  // ends the claim
  }

  // A prepared kernel task's arguments staged in a task_update_scope of its model.
  template <class Tuple>
  static void task_update_set_prepared(model_t m, std::size_t index, const task_info& named, const Tuple& args,
                                       ::keel::detail::arguments_describer describe_args, std::size_t count,
                                       const char* api = "keel::task_update_scope::set_arguments",
                                       const char* handle = "kernel_task") {
    static_assert(typed_kernel_arguments, "keel::kernel_task: this backend takes no typed kernel arguments");
    if (N::kernel_signature(m, index) != keel::detail::signature_of<Tuple>()) refuse_retyped(m, named, api, handle);
    std::shared_ptr<void> held = hold_arguments(m, args);
    N::stage_kernel(m, index, &args, describe_args, count);
    stage_use(m, uses_key{uses_key::kind::task, index, 0}, std::move(held));
  }

  static void task_update_set_copy(model_t m, const task_info& task, void* dst, const void* src, std::size_t bytes,
                                   copy_kind kind, std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    static constexpr const char* api = "keel::task_update_scope::set_copy";
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    require_updatable(m, index, found, task_type::copy, api);
    if ((dst == nullptr || src == nullptr) && bytes != 0)
      ::keel::detail::throw_composed(errc::null_parameter, api, {"a copy of ", bytes, " bytes needs both addresses"});
    if (kind != found.copy.kind)
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {describe(m, found), " copies ", to_string(found.copy.kind), " and the update asked for ",
           to_string(kind), ": a copy task keeps its direction; the task is unchanged"});
    if constexpr (keel::detail::is_detected_v<detail::stage_copy_call, N>) {
      N::stage_copy(m, index, dst, src, bytes, kind, std::move(keep_dst), std::move(keep_src));
    } else {
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), ": the ", N::name,
                                      " backend's runtime reports no copy parameters to set; the task is unchanged"});
    }
  }

  static void task_update_disable(model_t m, const task_info& task) {
    static constexpr const char* api = "keel::task_update_scope::disable";
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    if (found.type != task_type::kernel && found.type != task_type::copy)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " is a ", to_string(found.type),
                                      " task: only kernels and copies are disabled (an event or host task's partner "
                                      "would wait for it forever); the model is unchanged"});
    require_updatable(m, index, found, found.type, api);
    reserve_use(m);
    N::stage_disable(m, index);
    stage_use(m, uses_key{uses_key::kind::task, index, 0}, nullptr);  // it runs nothing of its own
  }

  // Task @p task takes @p source's task @p from (its kernel or copy, with
  // its parameters): what a runtime's aclmdlRITaskSetParams with another
  // task's aclmdlRITaskGetParams does. Same type, same kernel kind, neither
  // in a task group.
  static void task_update_set_from(model_t m, const task_info& task, model_t source, const task_info& from) {
    static constexpr const char* api = "keel::task_update_scope::set_from";
    std::size_t index = 0;
    const task_info& found = locate_claimed(m, task, api, index);
    task_info given;
    const std::size_t source_index = locate(source, from, api, given);
    if (found.type != task_type::kernel && found.type != task_type::copy)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " is a ", to_string(found.type),
                                      " task: only kernels and copies take another task's parameters; the task is "
                                      "unchanged"});
    require_updatable(m, index, found, found.type, api);
    require_updatable(source, source_index, given, found.type, api);
    if (found.type == task_type::kernel && !(found.kernel.kind == given.kernel.kind))
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {describe(m, found), " cannot take the parameters of kernel '", given.kernel.kind.name(),
           "': a kernel task keeps its kernel; the task is unchanged"});
    if (found.type == task_type::copy && found.copy.kind != given.copy.kind)
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {describe(m, found), " copies ", to_string(found.copy.kind), " and the source task ",
           to_string(given.copy.kind), ": a copy task keeps its direction; the task is unchanged"});
    std::shared_ptr<void> theirs = uses_of(source);  // the source's table: what its task runs with
    reserve_use(m);
    N::stage_from(m, index, source, source_index);
    stage_use(m, uses_key{uses_key::kind::task, index, 0}, std::move(theirs));
  }

  // Commits what was staged now, with no stream (a runtime's synchronous
  // aclmdlRIUpdate), and ends the claim.
  static void task_update_commit_now(model_t m) {
    if (N::staged_changes(m) == 0) return N::end_model_claim(m);
    commit(m, stream_t{}, [&] { N::commit_task_update(m, stream_t{}); });
  }

  static void task_update_end(model_t m, stream_t s) {
    static constexpr const char* api = "keel::task_update_scope::end";
    if (N::books(s).session) {
      N::end_model_claim(m);
      refuse_capturing(s, api, "the update is abandoned, the model is unchanged");
    }
    if (N::staged_changes(m) == 0) return N::end_model_claim(m);  // nothing changed
    commit(m, s, [&] { N::commit_task_update(m, s); });
  }

  static void update_model(model_t target, model_t source, stream_t s) {
    static constexpr const char* api = "keel::update_model";
    if (target == source)
      throw_error(errc::invalid_parameter, api, "a model is updated from another model, not from itself");
    if (N::books(s).session) refuse_capturing(s, api, "the model is unchanged");
    claim(target, api);
    claim_guard hold{target};
    check_topology(target, source, api);
    if constexpr (keeps_uses) {
      // Every kernel outside groups runs the source's parameters: the target
      // keeps the source's table (its captured kernels, its updates).
      reserve_use(target);
      stage_use(target, uses_key{uses_key::kind::whole_model, 0, 0}, uses_of(source));
    }
    hold.armed = false;
    commit(target, s, [&] { N::commit_model_update(target, source, s); });
  }

 private:
  static void claim(model_t m, const char* api) {
    if (!N::try_claim_model(m))
      ::keel::detail::throw_composed(
          errc::update_violation, api,
          {"model #", N::books(m).id,
           " is already being updated: one task update or whole-model update of a model at a time"});
    if constexpr (keeps_uses) {
      model_books& mb = N::books(m);
      mb.staged_uses.clear();  // an abandoned update's
      mb.update_sequence = mb.uses ? mb.uses->next_sequence() : 0;
    }
  }

  // ---- what the tasks use (checked/task_uses.hpp) ----------------------------

  // A copy of a task's new arguments, owning what they hold (null where the
  // native backend keeps them itself). Room for its change is made too.
  template <class Tuple>
  static std::shared_ptr<void> hold_arguments(model_t m, const Tuple& args) {
    if constexpr (keeps_uses && std::is_copy_constructible_v<Tuple>) {
      reserve_use(m);
      // The copy takes ownership of what the arguments borrow from the
      // updating call (ACL's plan argument: the executor's plan and the
      // workspace's owner), which is gone before the model runs the task.
      auto held = std::make_shared<Tuple>(args);
      std::apply([](auto&... a) { (::keel::checked::detail::keep_for_later(a), ...); }, *held);
      return held;
    } else {
      (void)m;
      (void)args;
      return nullptr;
    }
  }
  static void reserve_use(model_t m) {
    if constexpr (keeps_uses) {
      auto& staged = N::books(m).staged_uses;
      staged.reserve(staged.size() + 1);
    } else {
      (void)m;
    }
  }
  // Stages @p owner for @p key (a later change of the same task replaces an
  // earlier one). Room was made: cannot throw.
  static void stage_use(model_t m, const uses_key& key, std::shared_ptr<void> owner) noexcept {
    if constexpr (keeps_uses) {
      auto& staged = N::books(m).staged_uses;
      for (uses_change& c : staged) {
        if (c.key == key) {
          c.owner = std::move(owner);
          return;
        }
      }
      staged.push_back(uses_change{key, std::move(owner)});
    } else {
      (void)m;
      (void)key;
      (void)owner;
    }
  }
  // The table @p m's executions run with now.
  static std::shared_ptr<void> uses_of(model_t m) {
    const std::shared_ptr<model_uses>& uses = N::books(m).uses;
    return uses ? uses->snapshot() : nullptr;
  }
  // Runs the native commit (which ends the claim), then publishes what was
  // staged, prepared before it (the next updater's staging is its own).
  template <class Commit>
  static void commit(model_t m, stream_t s, Commit&& native_commit) {
    if constexpr (keeps_uses) {
      model_books& mb = N::books(m);
      std::vector<uses_change> changes = std::move(mb.staged_uses);
      mb.staged_uses.clear();
      const std::uint64_t sequence = mb.update_sequence;
      std::shared_ptr<model_uses::table> room;
      if (mb.uses && !changes.empty()) {
        try {
          room = mb.uses->room(changes.size());
        } catch (...) {
          N::end_model_claim(m);  // as the native commit would have: nothing was committed
          throw;
        }
      }
      native_commit();
      if (room) backend<N>::commit_uses(*mb.uses, sequence, changes, std::move(room), s);
    } else {
      (void)m;
      (void)s;
      native_commit();
    }
  }

  // Ends the claim of m when it goes, unless disarmed (a commit ends it itself).
  struct claim_guard {
    model_t m;
    bool armed = true;
    ~claim_guard() {
      if (armed) N::end_model_claim(m);
    }
  };
  // A commit on a capturing stream: refused, with what became of the update.
  [[noreturn]] static void refuse_capturing(stream_t s, const char* api, const char* outcome) {
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"updates are committed on a stream that is not capturing; ",
                                    detail::describe_stream(N::id_of(s)), " is capturing (", outcome, ")"});
  }
  // Task @p index (@p found) takes typed arguments of @p Tuple's types: a
  // kernel outside task groups that stream::launch issued with them. @p args
  // (null: only the types are known) and @p describe name what was given.
  template <class Tuple>
  static void require_typed(model_t m, std::size_t index, const task_info& found, const void* args,
                            ::keel::detail::arguments_describer describe_args, std::size_t count, const char* api) {
    require_updatable(m, index, found, task_type::kernel, api);
    if constexpr (typed_kernel_arguments) {
      const void* signature = N::kernel_signature(m, index);
      if (signature == nullptr)
        ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                       {describe(m, found),
                                        " was not launched through stream::launch with copyable arguments: "
                                        "its arguments cannot be replaced; the task is unchanged"});
      if (signature != keel::detail::signature_of<Tuple>()) refuse_arguments(m, found, args, describe_args, count, api);
    } else {
      (void)args;
      (void)describe_args;
      (void)count;
      refuse_untyped(m, found, api);
    }
  }
  [[noreturn]] static void refuse_retyped(model_t m, const task_info& named, const char* api, const char* handle) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"task (stream ", named.stream, ", sequence ", named.sequence, ") of model #",
                                    N::books(m).id, " takes other argument types than when the ", handle,
                                    " was made (a whole-model update or set_from gave it another kernel's); make the ",
                                    handle, " again; the model is unchanged"});
  }
  [[noreturn]] static void refuse_untyped(model_t m, const task_info& found, const char* api) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {describe(m, found), " holds the runtime's argument block, not typed arguments (the ", N::name,
         " backend): give it another task's parameters (update_model) or "
         "disable it; the task is unchanged"});
  }
  static std::string describe(model_t m, const task_info& t) {
    std::string d = "task (stream " + std::to_string(t.stream) + ", sequence " + std::to_string(t.sequence) +
                    ") of model #" + std::to_string(N::books(m).id);
    if (t.type == task_type::kernel) d += ", kernel '" + std::string(t.kernel.kind.name()) + "',";
    return d;
  }

  // The index of the task @p task names; it must be the task introspection reports there.
  static std::size_t locate(model_t m, const task_info& task, const char* api, task_info& found) {
    std::size_t index = 0;
    if (!N::task_index(m, task, index, found)) refuse_missing(m, task, api);
    require_named(m, task, found, api);
    return index;
  }
  // The same in a model whose claim the caller holds: no copy of the description.
  static const task_info& locate_claimed(model_t m, const task_info& task, const char* api, std::size_t& index) {
    const task_info* found = N::claimed_task_index(m, task, index);
    if (found == nullptr) refuse_missing(m, task, api);
    require_named(m, task, *found, api);
    return *found;
  }
  [[noreturn]] static void refuse_missing(model_t m, const task_info& task, const char* api) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"model #", N::books(m).id, " has no task at stream ", task.stream, ", sequence ",
                                    task.sequence, " (name tasks as model.tasks() lists them)"});
  }
  static void require_named(model_t m, const task_info& task, const task_info& found, const char* api) {
    if (found.type != task.type || (found.type == task_type::kernel && !same_kind(found.kernel.kind, task.kernel.kind)))
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " is a ", to_string(found.type), " task, not the ",
                                      to_string(task.type), " task named (a task_info of another model?)"});
  }
  // A task_info copied from tasks() names its kernel with the model's own
  // string: equal pointers settle it without comparing the names.
  static bool same_kind(kernel_kind a, kernel_kind b) noexcept {
    return (a.name().data() == b.name().data() && a.name().size() == b.name().size()) || a == b;
  }

  static void require_updatable(model_t m, std::size_t index, const task_info& found, task_type type,
                                const char* api) {
    if (found.type != type)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " is a ", to_string(found.type), " task, not a ",
                                      to_string(type), " task; the task is unchanged"});
    if (found.group != 0)
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {describe(m, found), " belongs to task group #", found.group,
           ": a group's tasks are replaced by an update_scope of the group; the task is unchanged"});
    if (!N::task_has_node(m, index))
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " cannot be replaced; the task is unchanged"});
  }

  // The first argument whose type differs (or the counts): out of line, so
  // building the message costs the accepted path nothing.
  [[noreturn]] static void refuse_arguments(model_t m, const task_info& found, const void* args,
                                            ::keel::detail::arguments_describer describe_args, std::size_t count,
                                            const char* api) {
    std::vector<kernel_argument> given(count);
    describe_args(args, given.data());
    const std::size_t recorded = found.kernel.argument_count;
    if (count != recorded)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {describe(m, found), " takes ", recorded, " arguments and ",
                                      (args != nullptr ? "the update passed " : "the kernel_task was made for "),
                                      count, "; the task is unchanged"});
    for (std::size_t i = 0; i < count; ++i) {
      const kernel_argument& r = found.kernel.arguments[i];
      if (r.type != given[i].type || r.size != given[i].size)
        ::keel::detail::throw_composed(
            errc::invalid_parameter, api,
            {describe(m, found), " argument ", i, " is ", r.type, " (", r.size, " bytes) and ",
             (args != nullptr ? "the update passed " : "the kernel_task was made for "), given[i].type, " (",
             given[i].size, " bytes); the task is unchanged"});
    }
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {describe(m, found),
                                    " was launched with other argument types than those given (same "
                                    "names and sizes, other C++ types); the task is unchanged"});
  }

  // Same streams, same tasks in each (type, kernel kind, task group or not,
  // the same event pairing), captured in the same interleaving.
  static void check_topology(model_t target, model_t source, const char* api) {
    // A backend that packs its models' shapes answers the common case (the
    // same topology) at once; any other answer is checked and named below.
    if constexpr (keel::detail::is_detected_v<detail::same_shape_call, N>)
      if (N::same_shape(target, source)) return;
    N::with_task_lists(target, source,
                       [&](const std::vector<model_stream>& ts, const std::vector<task_info>& tt,
                           const std::vector<model_stream>& ss, const std::vector<task_info>& st) {
                         check_lists(target, source, api, ts, tt, ss, st);
                       });
    const long differs = N::interleaving_mismatch(target, source);
    if (differs >= 0)
      ::keel::detail::throw_composed(
          errc::update_violation, api,
          {"updating model #", N::books(target).id, " from model #", N::books(source).id,
           ": the streams' tasks match but were captured in another interleaving (task ", differs,
           " in issue order differs); capture the source as the target was; "
           "the model is unchanged"});
  }
  static void check_lists(model_t target, model_t source, const char* api, const std::vector<model_stream>& ts,
                          const std::vector<task_info>& tt, const std::vector<model_stream>& ss,
                          const std::vector<task_info>& st) {
    if (ts.size() != ss.size())
      ::keel::detail::throw_composed(
          errc::update_violation, api,
          {"updating model #", N::books(target).id, " from model #", N::books(source).id, ": the target has ",
           ts.size(), " streams and the source ", ss.size(), "; the model is unchanged"});
    auto kind_of = [](const task_info& t) {
      std::string k(to_string(t.type));
      if (t.type == task_type::kernel) k += " '" + std::string(t.kernel.kind.name()) + "'";
      if (t.group != 0) k += " in a task group";
      return k;
    };
    std::size_t at = 0;
    for (std::size_t k = 0; k < ts.size(); ++k) {
      const std::size_t n = ts[k].task_count < ss[k].task_count ? ts[k].task_count : ss[k].task_count;
      for (std::size_t i = 0; i < n; ++i) {
        const task_info& a = tt[at + i];
        const task_info& b = st[at + i];  // same offsets: every earlier stream had equal counts
        const bool same = a.type == b.type && (a.type != task_type::kernel || a.kernel.kind == b.kernel.kind) &&
                          (a.group != 0) == (b.group != 0) && a.external_event == b.external_event;
        if (!same)
          ::keel::detail::throw_composed(
              errc::update_violation, api,
              {"updating model #", N::books(target).id, " from model #", N::books(source).id,
               ": the first mismatching task is stream ", k, ", sequence ", a.sequence, ": expected ", kind_of(a),
               ", found ", kind_of(b), "; the model is unchanged"});
        if (a.type == task_type::conditional || a.type == task_type::activation || a.type == task_type::switch_ ||
            a.type == task_type::other)
          ::keel::detail::throw_composed(
              errc::update_violation, api,
              {"updating model #", N::books(target).id, " from model #", N::books(source).id, ": stream ", k,
               ", sequence ", a.sequence, " is a ", kind_of(a),
               " task, which a whole-model update does not replace; the model is unchanged"});
      }
      if (ts[k].task_count != ss[k].task_count) {
        const bool target_longer = ts[k].task_count > ss[k].task_count;
        ::keel::detail::throw_composed(
            errc::update_violation, api,
            {"updating model #", N::books(target).id, " from model #", N::books(source).id,
             ": the first mismatching task is stream ", k, ", sequence ", n, ": expected ",
             (target_longer ? kind_of(tt[at + n]) : std::string("no task")), ", found ",
             (target_longer ? std::string("no task") : kind_of(st[at + n])), "; the model is unchanged"});
      }
      at += ts[k].task_count;
    }
    // Cross-stream edges: a wait pairs with the record of the same position.
    for (std::size_t i = 0; i < tt.size(); ++i) {
      if (tt[i].event == 0) continue;
      for (std::size_t j = 0; j < i; ++j) {
        if ((tt[j].event == tt[i].event) != (st[j].event == st[i].event))
          ::keel::detail::throw_composed(
              errc::update_violation, api,
              {"updating model #", N::books(target).id, " from model #", N::books(source).id,
               ": the first mismatching task is stream ", tt[i].stream, ", sequence ", tt[i].sequence, ": its ",
               kind_of(tt[i]),
               " pairs with another task than in the target (a different dependency); the model is unchanged"});
      }
    }
  }
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
