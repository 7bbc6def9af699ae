// SPDX-License-Identifier: Apache-2.0
// What a model says about itself: its streams and, per stream, its tasks in
// stream order, each with its kind, sequence id, task group and (kernels and
// copies) its parameters as keel types. The vocabulary every backend's
// introspection layer reports in (keel/runtime/backend/introspection.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What a recorded task does. `conditional`, `activation` and
 * `switch_` are the control tasks of built models (filled by the backends
 * that record them); `other` is a runtime task keel has no name for
 * (CANN's ACL_MODEL_RI_TASK_DEFAULT).
 */
enum class task_type : std::uint8_t {
  kernel,
  copy,
  memset,
  event_record,
  event_wait,
  event_reset,
  host_function,
  model_execution,
  conditional,
  activation,
  switch_,
  other,
};

/** @brief The name of a task type, for dumps and diagnostics. Throws: nothing. */
constexpr std::string_view to_string(task_type t) noexcept {
  switch (t) {
    case task_type::kernel: return "kernel";
    case task_type::copy: return "copy";
    case task_type::memset: return "memset";
    case task_type::event_record: return "event record";
    case task_type::event_wait: return "event wait";
    case task_type::event_reset: return "event reset";
    case task_type::host_function: return "host function";
    case task_type::model_execution: return "model execution";
    case task_type::conditional: return "conditional";
    case task_type::activation: return "activation";
    case task_type::switch_: return "switch";
    case task_type::other: return "other";
  }
  return "unknown";
}

/** @brief How a kernel argument is held: a number, an address, a memory span, or an opaque object. */
enum class argument_class : std::uint8_t { signed_integer, unsigned_integer, floating, boolean, pointer, span, object };

/**
 * @brief One tensor of an operator call, as a dump and an operator task
 * report it: the name of its parameter ("self", "out", ...), the address of
 * its first element, its dtype and, per dimension, size and stride (in
 * elements).
 *
 * Ownership: a value; `name` and `dtype` view string literals. Thread
 * safety: a value. Exceptions: none.
 */
struct operator_tensor {
  std::string_view name;              ///< the operator's parameter
  const void* address = nullptr;      ///< element (0, 0, ...)
  std::string_view dtype;             ///< "float32", "bfloat16", ...
  std::vector<std::int64_t> shape;    ///< sizes, one per dimension
  std::vector<std::int64_t> strides;  ///< strides in elements, one per dimension
};

/**
 * @brief One scalar (or integer parameter) of an operator call: its
 * parameter name, dtype, and value (`floating` for a floating dtype, else
 * `integer`).
 *
 * Ownership: a value; the views name string literals. Thread safety: a value.
 * Exceptions: none.
 */
struct operator_scalar {
  std::string_view name;    ///< the operator's parameter ("alpha", "out_h", ...)
  std::string_view dtype;   ///< "float32", "int64", "bool", ...
  bool is_floating = false;  ///< which of the values below holds it
  double floating = 0.0;     ///< a floating scalar's value
  std::int64_t integer = 0;  ///< an integral or boolean scalar's value
};

/**
 * @brief What an operator launch computes, as the operator layer that
 * launched it describes its plan argument (argument_traits::describe_operator):
 * the operator's name, its tensors and its scalars in the operator's
 * parameter order.
 *
 * Ownership: a value; the views name string literals. Thread safety: a value.
 * Exceptions: none (filling it may throw std::bad_alloc).
 */
struct operator_call {
  std::string_view op;                   ///< the operator ("add", "baddbmm", ...)
  std::string_view function;             ///< what computes it ("keel.ops.add" on the host, "aclnnAdd" on ACL)
  std::vector<operator_tensor> tensors;  ///< its tensors, in parameter order
  std::vector<operator_scalar> scalars;  ///< its scalars and integer parameters, in parameter order
};

/**
 * @brief What introspection says of a launch argument of class type @p T
 * beyond its size. A layer that launches its own types specialises it
 * beside them (keel's operator layers do for their plan arguments):
 * `static constexpr std::string_view name` names the type in
 * descriptions and refusals (without it: the C++ type's name as the
 * compiler spells it); optionally `static std::shared_ptr<const void>
 * operator_object(const T&)` and `static void describe_operator(const void*
 * object, operator_call& out)` describe the operator call it launches: the
 * description keeps the object alive and fills an operator_call from it
 * when asked (a dump, an operator task). The primary template says nothing.
 */
template <class T, class = void>
struct argument_traits {};

/**
 * @brief One recorded kernel argument, as the launch stored it: its C++ type
 * (a short name for the types keel knows, the name its argument_traits
 * gives or else the compiler's name of the type), its size, and its value
 * where it is a number, an address or a span; for an operator's plan, what
 * describes the call (operator()).
 *
 * Ownership: a value; `type` views a string literal; shares the described
 * object (an operator's plan) with the launch. Thread safety: a value.
 * Exceptions: none, but describe() may throw.
 */
struct kernel_argument {
  std::string_view type = "object";      ///< "float", "int32", "memory_span", "pointer", ... or a class type's name
  argument_class cls = argument_class::object;  ///< which of the value fields below holds its value
  std::size_t size = 0;                  ///< sizeof the stored argument
  std::int64_t integer = 0;              ///< signed_integer, boolean
  std::uint64_t unsigned_integer = 0;    ///< unsigned_integer
  double floating = 0.0;                 ///< floating
  const void* address = nullptr;         ///< pointer, span
  std::size_t bytes = 0;                 ///< span: its length
  memory_kind where = memory_kind::device;  ///< span: where it lies
  /// object: the operator call it launches, when its type's argument_traits describes one (null otherwise).
  std::shared_ptr<const void> object;
  /// Describes the operator call behind `object` (null: the argument launches none).
  void (*describe_operator)(const void* object, operator_call& out) = nullptr;

  /// Whether the argument describes an operator call (describe() answers).
  bool is_operator() const noexcept { return describe_operator != nullptr && object != nullptr; }
  /** @brief The operator call the argument launches. @throws keel::error invalid_state when it launches none. */
  operator_call describe() const {
    if (!is_operator())
      throw_error(errc::invalid_state, "keel::kernel_argument::describe",
                  "the argument launches no operator call (ask is_operator() first)");
    operator_call call;
    describe_operator(object.get(), call);
    return call;
  }
};

/// @cond
namespace detail {
// The compiler's spelling of T, cut from the signature it gives this
// function ("object" where it gives none keel can read).
template <class T>
constexpr std::string_view compiler_type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view signature = __PRETTY_FUNCTION__;
  // GCC: "... [with T = Name; std::string_view = ...]"; Clang: "... [T = Name]".
  constexpr std::size_t at = signature.find("T = ");
  if constexpr (at == std::string_view::npos) {
    return "object";
  } else {
    constexpr std::size_t begin = at + 4;
    constexpr std::size_t end = signature.find_first_of(";]", begin);
    if constexpr (end == std::string_view::npos) {
      return "object";
    } else {
      return signature.substr(begin, end - begin);
    }
  }
#else
  return "object";
#endif
}
template <class T>
using traits_name_t = decltype(argument_traits<T>::name);
template <class T>
using traits_describe_t = decltype(argument_traits<T>::describe_operator(static_cast<const void*>(nullptr),
                                                                           std::declval<operator_call&>()),
                                   argument_traits<T>::operator_object(std::declval<const T&>()));

template <class T>
struct argument_describer {
  // The name introspection gives a stored argument of type T.
  static constexpr std::string_view type_name() noexcept {
    if constexpr (std::is_same_v<T, bool>) {
      return "bool";
    } else if constexpr (std::is_floating_point_v<T>) {
      return sizeof(T) == 4 ? "float" : sizeof(T) == 8 ? "double" : "long double";
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      return sizeof(T) == 1 ? "int8" : sizeof(T) == 2 ? "int16" : sizeof(T) == 4 ? "int32" : "int64";
    } else if constexpr (std::is_integral_v<T>) {
      return sizeof(T) == 1 ? "uint8" : sizeof(T) == 2 ? "uint16" : sizeof(T) == 4 ? "uint32" : "uint64";
    } else if constexpr (std::is_enum_v<T>) {
      return "enum";
    } else if constexpr (std::is_pointer_v<T>) {
      return "pointer";
    } else if constexpr (std::is_same_v<T, memory_span>) {
      return "memory_span";
    } else if constexpr (is_detected_v<traits_name_t, T>) {
      return argument_traits<T>::name;
    } else {
      return compiler_type_name<T>();
    }
  }
  // Writes every field of @p a, one store each, into the storage the
  // description lives in (a capture's list, a staged update's entry, reused
  // from earlier descriptions, so every field is set). A description built
  // aside and copied in stalls: the copy's 16-byte loads span the narrower
  // stores that built it, which the core cannot forward (a cost per
  // argument of every captured ACL launch).
  static void describe_into(kernel_argument& a, const T& value) noexcept {
    a.type = type_name();
    a.cls = argument_class::object;
    a.size = sizeof(T);
    a.integer = 0;
    a.unsigned_integer = 0;
    a.floating = 0.0;
    a.address = nullptr;
    a.bytes = 0;
    a.where = memory_kind::device;
    if constexpr (is_detected_v<traits_describe_t, T>) {
      a.object = argument_traits<T>::operator_object(value);
      a.describe_operator = &argument_traits<T>::describe_operator;
    } else {
      a.object.reset();
      a.describe_operator = nullptr;
    }
    if constexpr (std::is_same_v<T, bool>) {
      a.cls = argument_class::boolean;
      a.integer = value ? 1 : 0;
    } else if constexpr (std::is_floating_point_v<T>) {
      a.cls = argument_class::floating;
      a.floating = static_cast<double>(value);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      a.cls = argument_class::signed_integer;
      a.integer = static_cast<std::int64_t>(value);
    } else if constexpr (std::is_integral_v<T>) {
      a.cls = argument_class::unsigned_integer;
      a.unsigned_integer = static_cast<std::uint64_t>(value);
    } else if constexpr (std::is_enum_v<T>) {
      a.cls = argument_class::signed_integer;
      a.integer = static_cast<std::int64_t>(value);
    } else if constexpr (std::is_pointer_v<T>) {
      a.cls = argument_class::pointer;
      a.address = reinterpret_cast<const void*>(value);
    } else if constexpr (std::is_same_v<T, memory_span>) {
      a.cls = argument_class::span;
      a.address = value.data;
      a.bytes = value.bytes;
      a.where = value.where;
    } else {
      (void)value;
    }
  }
};
}  // namespace detail
/// @endcond

/// @cond
namespace detail {
// One address per type: what a kernel task records as the identity of its
// argument types, so a per-task update can tell that new arguments match.
template <class T>
struct signature_tag {
  static constexpr char id = 0;
};
template <class T>
constexpr const void* signature_of() noexcept {
  return &signature_tag<T>::id;
}
}  // namespace detail
/// @endcond

/**
 * @brief How a launch stores an argument its caller gives as @p T. A backend
 * whose launch wraps a caller's value specializes it (ACL's operator launch
 * stores a borrowing plan_argument for the executor's shared plan), so that
 * task_update_scope::set_arguments takes the caller's type and stores what
 * the launch stored. Default: the decayed type itself.
 */
template <class T>
struct launch_argument {
  using type = T;  ///< what the launch stores
  /** @brief The stored form of @p value. */
  template <class A>
  static type store(A&& value) {
    return type(std::forward<A>(value));
  }
};

/** @brief Describes @p value as a recorded kernel argument. Throws: nothing. */
template <class T>
kernel_argument describe_argument(const T& value) noexcept {
  kernel_argument a;
  detail::argument_describer<T>::describe_into(a, value);
  return a;
}

/// @cond
namespace detail {
// Writes one description per value of @p values to out[0 .. sizeof...(Ts)):
// what a capture records of a launch's arguments, and what a per-task
// update stages.
template <class... Ts>
void describe_values(const std::tuple<Ts...>& values, kernel_argument* out) noexcept {
  std::apply([out](const auto&... a) {
    std::size_t i = 0;
    (argument_describer<std::decay_t<decltype(a)>>::describe_into(out[i++], a), ...);
  }, values);
}
// The same for the std::tuple behind @p values: what a per-task update hands
// a backend, which describes the new arguments straight into the storage it
// keeps them in.
using arguments_describer = void (*)(const void* values, kernel_argument* out) noexcept;
template <class Tuple>
void describe_tuple(const void* values, kernel_argument* out) noexcept {
  describe_values(*static_cast<const Tuple*>(values), out);
}
// The types alone (name and size; no values): what a kernel_task made for
// other types than its task's reports. Same signature; @p values is unused.
template <class Tuple>
struct type_describer;
template <class... Ts>
struct type_describer<std::tuple<Ts...>> {
  static void describe(const void*, kernel_argument* out) noexcept {
    std::size_t i = 0;
    ((out[i].type = argument_describer<Ts>::type_name(), out[i].size = sizeof(Ts), ++i), ...);
    (void)out;
    (void)i;
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief A kernel task's parameters: its kernel kind, the arguments keel
 * recorded (the host backend: every argument of the launch), and the
 * runtime's own argument block (ACL: aclmdlRIKernelTaskParams' args and
 * argsSize, and numBlocks).
 *
 * Ownership: `arguments` points into the model's records and is valid while
 * the model lives and its task is not updated. Thread safety: a value.
 */
struct kernel_params {
  kernel_kind kind{""};                      ///< empty when the runtime cannot name it
  const kernel_argument* arguments = nullptr;  ///< the recorded arguments (null: none recorded)
  std::size_t argument_count = 0;             ///< how many
  const void* argument_block = nullptr;      ///< the runtime's argument block, if it has one
  std::size_t argument_block_bytes = 0;       ///< its size in bytes
  std::uint32_t blocks = 0;                  ///< numBlocks on ACL, 0 where there is none
};

/** @brief A copy task's parameters. */
struct copy_params {
  const void* dst = nullptr;                  ///< where the copy writes
  const void* src = nullptr;                  ///< what it reads
  std::size_t bytes = 0;                      ///< how many bytes
  copy_kind kind = copy_kind::host_to_host;   ///< its direction
};

/**
 * @brief A kernel task's launch attributes, as CANN's
 * aclmdlRIKernelTaskGetAttribute reports those it lets be queried
 * (aclrtLaunchKernelAttrValue; the engine type, the block offset and the
 * prefetch flag cannot be queried). A field the launch did not set reads as
 * the runtime's default, 0; the host backend launches no kernel with
 * attributes, so every field is 0 there.
 *
 * Ownership: a value. Thread safety: a value.
 */
struct kernel_attributes {
  std::uint8_t schedule_mode = 0;      ///< 0: starts when one of its cores is free; 1 (batch): when all are
  std::uint32_t dynamic_ub_bytes = 0;  ///< the vector cores' UB buffer a SIMT kernel needs (dynUBufSize)
  bool data_dump = false;              ///< its data is dumped (isDataDump)
  std::uint16_t timeout_s = 0;         ///< its timeout in seconds (timeout; 0: the runtime's)
  std::uint64_t timeout_us = 0;        ///< its timeout in microseconds (timeoutUs; set instead of timeout_s)
};

struct conditional_body;

/**
 * @brief One task of a model, as introspection reports it: its type, its
 * stream (an index into the model's streams()), its sequence id (its
 * position in that stream's order), its task group (0: none) and, by type,
 * its parameters; `event` names the event a record, wait or reset uses
 * (0 where the runtime does not say), which pairs a wait with its record.
 *
 * Ownership: a value (kernel arguments: see kernel_params). Thread safety: a value.
 */
struct task_info {
  task_type type = task_type::other;  ///< what the task does
  std::size_t stream = 0;             ///< its stream: an index into streams()
  std::uint32_t sequence = 0;         ///< its position in its stream (aclmdlRITaskGetSeqId)
  std::uint64_t group = 0;            ///< its task group, 0 for none
  std::uint64_t event = 0;            ///< the event of a record, wait or reset (0: not said)
  bool external_event = false;  ///< the event is an external one (its wait crosses models)
  bool disabled = false;        ///< a per-task update disabled it (it no longer runs)
  kernel_params kernel;  ///< a kernel's parameters
  copy_params copy;      ///< a copy's parameters
  /// A conditional task's kind: "if", "while" or "switch" (empty for any other task).
  std::string_view conditional;
  /// A conditional task's bodies, in the order its kind numbers them (IF:
  /// then, else; WHILE: the body; SWITCH: case 0, 1, ...), each with its own
  /// streams and tasks (a nested conditional's bodies too).
  std::vector<conditional_body> bodies;
};

/** @brief One stream of a model: keel's id of the stream that captured it, its index, how many tasks it has. */
struct model_stream {
  std::uint64_t id = 0;        ///< host: the capturing stream's id; ACL: the model's stream number (1, 2, ...)
  std::size_t index = 0;       ///< its position in streams(), what task_info::stream names
  std::size_t task_count = 0;  ///< its tasks
};

/**
 * @brief One body of a conditional task, as introspection reports it: the
 * body's streams and its tasks, as a model's streams() and tasks() report
 * them (task_info::stream indexes these streams).
 *
 * Ownership: a value (kernel arguments point into the body's records, valid
 * while the model that owns the body lives and the task is not updated).
 * Thread safety: a value.
 */
struct conditional_body {
  std::vector<model_stream> streams;  ///< the body's streams
  std::vector<task_info> tasks;       ///< the body's tasks, stream by stream
};

KEEL_END_NAMESPACE  // namespace keel
