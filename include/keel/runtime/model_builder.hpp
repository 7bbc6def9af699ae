// SPDX-License-Identifier: Apache-2.0
// basic_model_builder: a model built from persistent streams bound to it
// (CANN's aclmdlRIBuildBegin, BindStream, EndTask, BuildEnd), with tasks that
// activate a bound stream (aclrtActiveStream) or switch to one when two
// device values compare true (aclrtSwitchStream); make_persistent_stream
// makes the streams it binds; unbind releases one from a built model.
#pragma once

#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/built_model.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief A stream that can be bound to a model being built (CANN's
 * aclrtCreateStreamWithConfig with ACL_STREAM_PERSISTENT). Unbound, it runs
 * work like any stream. @throws keel::error as stream creation.
 */
template <class B>
basic_stream<B> make_persistent_stream(typename B::device_type& dev) {
  static_assert(detail::built_model_layer::check<B>::value);  // names the missing call of the layer
  return detail::handle_access::make<basic_stream<B>>(B::create_persistent_stream(dev));
}

/**
 * @brief Builds a model from persistent streams bound to it: the work issued
 * to a bound stream is recorded, not run, into that stream's part of the
 * model; when the model executes, its head streams run, a task of one stream
 * can activate another bound stream or switch to it (the switching stream
 * stops there) when two device values compare true, and an end task ends a
 * stream's part. end() yields a basic_model that executes like a captured one.
 *
 * Rules (each a keel::error naming the rule, leaving the builder as it was):
 * only a persistent stream is bound, to one model at a time, while the model
 * is being built; a bound stream whose end task was issued takes no more
 * work; activation and switch tasks name another stream bound to the same
 * model; end() needs a head stream and at least one end task, and no bound
 * stream destroyed; after end(), bound streams take no work until unbound
 * (unbind(), or the model's destruction).
 *
 * It finishes as every keel scope does: end() yields the model, cancel()
 * drops it; a builder left without either cancels (discards the half-built
 * model and unbinds its streams) and, left by a normal return, reports
 * "left without end() or cancel()" to keel's error handler (left by an
 * exception, nothing: the exception tells).
 *
 * Ownership: owns the model being built; neither copyable nor movable.
 * Thread safety: one thread builds. Exceptions: keel::error (resource_limit
 * for the device's live models); cancel() and the destructor are noexcept.
 *
 * Host backend: a built model runs on the executing stream, its head parts in
 * bind order; an activation runs the activated part at that point, a switch
 * that holds runs its target's part and ends the switching one; a part
 * already running in the execution is not activated again: an activation or
 * a switch back to a part that is still running (one that activated or
 * switched, directly or through others, to the part issuing the task) does
 * nothing, and such a switch still ends the switching part's work. A part
 * that finished earlier in the execution runs again.
 *
 * @code
 * auto head = keel::make_persistent_stream<keel::host::backend>(dev);
 * auto branch = keel::make_persistent_stream<keel::host::backend>(dev);
 * keel::host::model_builder build{dev};
 * build.bind(head, keel::bound_stream::head);
 * build.bind(branch);
 * head.launch(kind, kernel, args...);                  // recorded into head's part
 * build.switch_to(head, flag, keel::compare_condition::equal, one, branch);
 * build.end_task(head);
 * branch.launch(kind, other_kernel, args...);
 * build.end_task(branch);
 * keel::host::model model = build.end();
 * model.execute(s);                                    // runs branch when *flag == *one
 * @endcode
 */
template <KEEL_CAPTURE_BACKEND B>
class [[nodiscard]] basic_model_builder {
  static_assert(detail::built_model_layer::check<B>::value);  // names the missing call of the layer

 public:
  /// Begins building a model on @p dev. @throws keel::error resource_limit when the device's live models are in use.
  explicit basic_model_builder(typename B::device_type& dev) : model_(detail::handle_access::make<basic_model<B>>(B::build_begin(dev))) {}
  basic_model_builder(const basic_model_builder&) = delete;
  basic_model_builder& operator=(const basic_model_builder&) = delete;
  /// Left without end() or cancel() (an early return, an exception): cancels, and reports it, as every scope does.
  ~basic_model_builder() {
    if (!active()) return;
    cancel();
    detail::report_scope_left_unfinished("keel::model_builder",
                                         "the half-built model was discarded and its streams unbound",
                                         std::uncaught_exceptions() > 0);
  }

  /** @brief Binds @p s (persistent, unbound, not capturing) as a head stream or one a task activates. */
  void bind(basic_stream_ref<B> s, bound_stream role = bound_stream::activated) {
    B::bind_stream(building("keel::model_builder::bind"), detail::checked_handle(s, "keel::model_builder::bind"), role);
  }
  /** @brief Marks the end of bound stream @p s's work (CANN's aclmdlRIEndTask): it takes no more. */
  void end_task(basic_stream_ref<B> s) {
    B::end_task(building("keel::model_builder::end_task"), detail::checked_handle(s, "keel::model_builder::end_task"));
  }
  /** @brief A task on bound stream @p s that starts bound stream @p target (CANN's aclrtActiveStream). */
  void activate(basic_stream_ref<B> s, basic_stream_ref<B> target) {
    static constexpr const char* api = "keel::model_builder::activate";
    (void)building(api);
    B::activate_stream(detail::checked_handle(s, api), detail::checked_handle(target, api));
  }
  /**
   * @brief A task on bound stream @p s that compares `*left` with `*right`
   * (device values of type @p type, read when the task runs) and, when
   * @p condition holds, runs @p target instead of the rest of @p s (CANN's
   * aclrtSwitchStream; its false stream is reserved).
   */
  void switch_to(basic_stream_ref<B> s, const void* left, compare_condition condition, const void* right,
                 compare_type type, basic_stream_ref<B> target) {
    static constexpr const char* api = "keel::model_builder::switch_to";
    (void)building(api);
    B::switch_stream(detail::checked_handle(s, api), left, condition, right, type, detail::checked_handle(target, api));
  }
  /** @brief switch_to for 32- or 64-bit signed values, the type deduced. */
  template <class T, class = std::enable_if_t<std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>>>
  void switch_to(basic_stream_ref<B> s, const T* left, compare_condition condition, const T* right,
                 basic_stream_ref<B> target) {
    switch_to(s, left, condition, right, std::is_same_v<T, std::int64_t> ? compare_type::int64 : compare_type::int32,
              target);
  }

  /**
   * @brief Ends the build (CANN's aclmdlRIBuildEnd) and returns the model; the
   * builder is inactive afterwards. @throws keel::error invalid_state (ended
   * or cancelled already, or a rule of the end: the builder stays active and
   * may still be cancelled).
   */
  [[nodiscard]] basic_model<B> end() {
    B::build_end(building("keel::model_builder::end"));
    return std::move(model_);
  }
  /** @brief Drops the build: the half-built model is discarded, its streams unbound. Throws: nothing. */
  void cancel() noexcept { model_.reset(); }

  /// Whether the build is in progress (neither ended nor cancelled).
  bool active() const noexcept { return static_cast<bool>(model_); }
  /**
   * The model being built (empty after end()): it has its id and takes a
   * name and destroy callbacks; abort() finds nothing to stop, and tasks()
   * and streams() list nothing until the build ends. Not executed before end().
   */
  basic_model_ref<B> model() const noexcept { return model_.ref(); }

 private:
  typename B::model_handle building(const char* api) const {
    if (!model_) throw_error(errc::invalid_state, api, "the build already ended or was cancelled");
    return detail::handle_of(model_);
  }
  basic_model<B> model_;
};

/**
 * @brief Unbinds @p s from built model @p model (CANN's aclmdlRIUnbindStream):
 * the stream runs work again. Destroying the model unbinds what is still
 * bound. @throws keel::error invalid_parameter (not bound to it),
 * invalid_state (the build has not ended).
 */
template <class B>
void unbind(basic_model_ref<B> model, basic_stream_ref<B> s) {
  static_assert(detail::built_model_layer::check<B>::value);
  B::unbind_stream(detail::checked_handle(model, "keel::unbind"), detail::checked_handle(s, "keel::unbind"));
}

/** @brief The built-model layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_BUILT_MODEL_ALIASES(Backend) using model_builder = ::keel::basic_model_builder<Backend>;

KEEL_END_NAMESPACE  // namespace keel
