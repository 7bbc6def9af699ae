// SPDX-License-Identifier: Apache-2.0
// Dumps of a model you can look at: to_dot (Graphviz: a cluster per stream,
// a node per task labelled with its kind, kernel name and arguments, edges for
// stream order and for waits on events recorded elsewhere, task groups as
// sub-clusters) and to_json (the fields of CANN's aclmdlRIDebugJsonPrint dump
// — model id, streams, tasks with their ids and types — plus keel's own:
// names, sequence ids, groups, kernel arguments, copy parameters, events).
// Both read only the model's introspection (model.streams(), model.tasks()).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/utf8.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::dump {

inline std::string number(std::uint64_t v) { return std::to_string(v); }
inline std::string number(std::int64_t v) { return std::to_string(v); }
inline std::string real(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s(buf);
  for (char& c : s)
    if (c == ',') c = '.';  // a locale's decimal comma never reaches JSON or DOT
  return s;
}
inline std::string address(const void* p) {
  char buf[2 + 2 * sizeof(void*) + 1];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return buf;
}
inline std::string_view memory_name(memory_kind k) noexcept {
  switch (k) {
    case memory_kind::device: return "device";
    case memory_kind::pinned_host: return "pinned host";
    case memory_kind::pageable_host: return "host";
  }
  return "unknown";
}

// An argument's value as a short text (DOT labels) or a JSON value.
inline std::string argument_value(const kernel_argument& a, bool json) {
  switch (a.cls) {
    case argument_class::signed_integer: return number(a.integer);
    case argument_class::unsigned_integer: return number(a.unsigned_integer);
    case argument_class::floating: return real(a.floating);
    case argument_class::boolean: return a.integer != 0 ? "true" : "false";
    case argument_class::pointer: return json ? "\"" + address(a.address) + "\"" : address(a.address);
    case argument_class::span: {
      const std::string text =
          std::to_string(a.bytes) + " B " + std::string(memory_name(a.where)) + " @" + address(a.address);
      return json ? "\"" + text + "\"" : text;
    }
    case argument_class::object: return json ? "null" : std::to_string(a.size) + " B";
  }
  return json ? "null" : "?";
}

// A JSON string of @p s, whatever its bytes (a name, a kernel name a native
// runtime returned): a byte that begins no whole UTF-8 character becomes
// U+FFFD, so the document is always valid JSON.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else if (u >= 0x80) {
      const std::size_t n = utf8_character_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    } else {
      out += c;
    }
    ++i;
  }
  return out + "\"";
}

inline std::string dot_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The operator call a kernel task launches, when one of its arguments
// describes one (an operator layer's plan): null otherwise.
inline const kernel_argument* operator_argument(const task_info& t) noexcept {
  if (t.type != task_type::kernel) return nullptr;
  for (std::size_t i = 0; i < t.kernel.argument_count; ++i)
    if (t.kernel.arguments[i].is_operator()) return &t.kernel.arguments[i];
  return nullptr;
}
inline std::string dims(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(v[i]);
  }
  return out + "]";
}
inline std::string scalar_value(const operator_scalar& v) {
  return v.is_floating ? real(v.floating) : std::to_string(v.integer);
}
inline std::string operator_json(const operator_call& c) {
  std::string out = "{\"op\": " + json_string(c.op) + ", \"function\": " + json_string(c.function) + ", \"tensors\": [";
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const operator_tensor& t = c.tensors[i];
    out += std::string(i == 0 ? "" : ", ") + "{\"name\": " + json_string(t.name) + ", \"address\": \"" +
           address(t.address) + "\", \"dtype\": " + json_string(t.dtype) + ", \"shape\": " + dims(t.shape) +
           ", \"strides\": " + dims(t.strides) + "}";
  }
  out += "], \"scalars\": [";
  for (std::size_t i = 0; i < c.scalars.size(); ++i) {
    const operator_scalar& v = c.scalars[i];
    out += std::string(i == 0 ? "" : ", ") + "{\"name\": " + json_string(v.name) + ", \"dtype\": " +
           json_string(v.dtype) + ", \"value\": " + scalar_value(v) + "}";
  }
  return out + "]}";
}
inline void operator_label(const operator_call& c, std::string& label) {
  label += '\n';
  label += c.op;
  label += " (";
  label += c.function;
  label += ')';
  for (const operator_tensor& t : c.tensors) {
    label += '\n';
    label += t.name;
    label += ' ';
    label += t.dtype;
    label += ' ';
    label += dims(t.shape);
    label += " strides ";
    label += dims(t.strides);
    label += " @";
    label += address(t.address);
  }
  for (const operator_scalar& v : c.scalars) {
    label += '\n';
    label += v.name;
    label += " = ";
    label += scalar_value(v);
    label += ' ';
    label += v.dtype;
  }
}

// A dump's ids for events and task groups: 1, 2, ... in the order the dump
// first meets them, whatever the backend's own values (counters on the
// host, runtime handles on ACL), so that dumps of one model read alike on
// every backend.
class dump_ids {
 public:
  std::uint64_t operator()(std::uint64_t raw) {
    if (raw == 0) return 0;
    for (std::size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] == raw) return i + 1;
    seen_.push_back(raw);
    return seen_.size();
  }

 private:
  std::vector<std::uint64_t> seen_;
};

// A task's node: @p prefix ("t" for the model's own tasks, the conditional
// task's node and its body's number for a body's) and its place.
inline std::string node_name(const task_info& t, const std::string& prefix = "t") {
  return prefix + std::to_string(t.stream) + "_" + std::to_string(t.sequence);
}

// Built by appending, not with "literal" + std::string: GCC 12 at -O3 in
// C++20 warns (-Wrestrict, a false positive) on that operator+ inlined here.
inline std::string node_label(const task_info& t, dump_ids& events) {
  std::string label(to_string(t.type));
  if (t.type == task_type::kernel) {
    if (!t.kernel.kind.name().empty()) {
      label += ' ';
      label += t.kernel.kind.name();
    }
    for (std::size_t i = 0; i < t.kernel.argument_count; ++i) {
      const kernel_argument& a = t.kernel.arguments[i];
      label += '\n';
      label += a.type;
      label += ' ';
      label += argument_value(a, false);
    }
    if (t.kernel.argument_count == 0 && t.kernel.argument_block_bytes != 0) {
      label += "\nargs ";
      label += std::to_string(t.kernel.argument_block_bytes);
      label += " B";
    }
    if (const kernel_argument* op = operator_argument(t)) operator_label(op->describe(), label);
  } else if (t.type == task_type::copy) {
    label += '\n';
    label += std::to_string(t.copy.bytes);
    label += " B, ";
    label += to_string(t.copy.kind);
  } else if (t.type == task_type::conditional && !t.conditional.empty()) {
    label += ' ';
    label += t.conditional;
  } else if (t.event != 0) {
    label += "\nevent #";
    label += std::to_string(events(t.event));
    if (t.external_event) label += " (external)";
  }
  return label;
}

// The name of body @p j of a conditional task of kind @p kind, for a dump.
inline std::string body_name(std::string_view kind, std::size_t j, std::size_t count) {
  if (kind == "if") return count == 1 || j == 0 ? "then" : "else";
  if (kind == "switch") return "case " + std::to_string(j);
  return "body";
}

// One model's (or one body's) streams as DOT clusters under @p indent, its
// nodes named from @p prefix; each conditional task's bodies as dotted
// clusters after them, with an edge from the task to each body's first task.
inline void dot_tasks(const std::vector<model_stream>& streams, const std::vector<task_info>& tasks,
                      const std::string& prefix, const std::string& indent, dump_ids& events, dump_ids& groups,
                      std::string& out) {
  const std::string cluster = prefix == "t" ? std::string() : prefix;  // the model's own: cluster_stream_<n>
  std::size_t i = 0;
  for (const model_stream& s : streams) {
    out += indent + "subgraph cluster_" + cluster + "stream_" + std::to_string(s.index) + " {\n" + indent +
           "  label=" + dot_string("stream #" + std::to_string(s.id)) + ";\n" + indent + "  style=rounded;\n";
    const std::size_t first = i;
    std::uint64_t open_group = 0;
    for (; i < tasks.size() && tasks[i].stream == s.index; ++i) {
      const task_info& t = tasks[i];
      if (t.group != open_group) {
        if (open_group != 0) out += indent + "  }\n";
        if (t.group != 0) {
          const std::string group = std::to_string(groups(t.group));
          out += indent + "  subgraph cluster_" + cluster + "group_" + group + " {\n" + indent +
                 "    label=" + dot_string("task group #" + group) + ";\n" + indent + "    style=dashed;\n";
        }
        open_group = t.group;
      }
      out += indent + (open_group != 0 ? "    " : "  ") + node_name(t, prefix) +
             " [label=" + dot_string(node_label(t, events)) +
             (t.type == task_type::kernel ? ", style=filled, fillcolor=\"#dde8f5\"" : "") + "];\n";
    }
    if (open_group != 0) out += indent + "  }\n";
    for (std::size_t k = first + 1; k < i; ++k)
      out += indent + "  " + node_name(tasks[k - 1], prefix) + " -> " + node_name(tasks[k], prefix) + ";\n";
    out += indent + "}\n";
  }
  // A wait depends on the records of its event in other streams.
  for (const task_info& w : tasks) {
    if (w.type != task_type::event_wait || w.event == 0) continue;
    for (const task_info& r : tasks)
      if (r.type == task_type::event_record && r.event == w.event && r.stream != w.stream)
        out += indent + node_name(r, prefix) + " -> " + node_name(w, prefix) + " [style=dashed, color=\"#c0392b\"];\n";
  }
  for (const task_info& t : tasks) {
    for (std::size_t j = 0; j < t.bodies.size(); ++j) {
      const conditional_body& b = t.bodies[j];
      const std::string body_prefix = node_name(t, prefix) + "b" + std::to_string(j) + "_";
      const std::string name = body_name(t.conditional, j, t.bodies.size());
      out += indent + "subgraph cluster_" + body_prefix + "body {\n" + indent + "  label=" +
             dot_string(std::string(t.conditional) + " " + name) + ";\n" + indent + "  style=dotted;\n";
      dot_tasks(b.streams, b.tasks, body_prefix, indent + "  ", events, groups, out);
      out += indent + "}\n";
      if (!b.tasks.empty())
        out += indent + node_name(t, prefix) + " -> " + node_name(b.tasks.front(), body_prefix) +
               " [style=dotted, label=" + dot_string(name) + "];\n";
    }
  }
}

// One model's (or one body's) streams as a JSON array's items, each task
// line under @p indent; a conditional task's bodies nested in it.
inline void json_tasks(const std::vector<model_stream>& streams, const std::vector<task_info>& tasks,
                       const std::string& indent, dump_ids& events, dump_ids& groups, std::string& out) {
  std::size_t i = 0;
  bool first_stream = true;
  for (const model_stream& s : streams) {
    out += std::string(first_stream ? "" : ",") + "\n" + indent + "{\"streamId\": " + std::to_string(s.id) +
           ", \"index\": " + std::to_string(s.index) + ", \"taskCount\": " + std::to_string(s.task_count) +
           ", \"tasks\": [";
    first_stream = false;
    bool first = true;
    for (; i < tasks.size() && tasks[i].stream == s.index; ++i) {
      const task_info& t = tasks[i];
      out += std::string(first ? "" : ",") + "\n" + indent + "  {\"taskId\": " + std::to_string(i) +
             ", \"seqId\": " + std::to_string(t.sequence) + ", \"taskType\": " + json_string(to_string(t.type));
      first = false;
      if (t.group != 0) out += ", \"groupId\": " + std::to_string(groups(t.group));
      if (t.type == task_type::kernel) {
        out += ", \"kernel\": " + json_string(t.kernel.kind.name()) + ", \"arguments\": [";
        for (std::size_t k = 0; k < t.kernel.argument_count; ++k) {
          const kernel_argument& a = t.kernel.arguments[k];
          out += std::string(k == 0 ? "" : ", ") + "{\"type\": " + json_string(a.type) +
                 ", \"size\": " + std::to_string(a.size) + ", \"value\": " + argument_value(a, true) + "}";
        }
        out += "]";
        if (t.kernel.argument_block_bytes != 0)
          out += ", \"argsSize\": " + std::to_string(t.kernel.argument_block_bytes) +
                 ", \"numBlocks\": " + std::to_string(t.kernel.blocks);
        if (const kernel_argument* op = operator_argument(t)) out += ", \"operator\": " + operator_json(op->describe());
      } else if (t.type == task_type::copy) {
        out += ", \"copy\": {\"dst\": \"" + address(t.copy.dst) + "\", \"src\": \"" + address(t.copy.src) +
               "\", \"bytes\": " + std::to_string(t.copy.bytes) + ", \"kind\": " + json_string(to_string(t.copy.kind)) + "}";
      } else if (t.type == task_type::conditional) {
        out += ", \"conditional\": " + json_string(t.conditional) + ", \"bodies\": [";
        for (std::size_t j = 0; j < t.bodies.size(); ++j) {
          out += std::string(j == 0 ? "" : ",") + "\n" + indent + "    {\"body\": " + std::to_string(j) +
                 ", \"name\": " + json_string(body_name(t.conditional, j, t.bodies.size())) + ", \"streams\": [";
          json_tasks(t.bodies[j].streams, t.bodies[j].tasks, indent + "      ", events, groups, out);
          out += "]}";
        }
        out += "]";
      }
      if (t.event != 0)
        out += ", \"eventId\": " + std::to_string(events(t.event)) + ", \"externalEvent\": " + (t.external_event ? "true" : "false");
      out += "}";
    }
    out += std::string(first ? "" : "\n" + indent) + "]}";
  }
}

}  // namespace detail::dump
/// @endcond

/**
 * @brief The model as a Graphviz graph: one cluster per stream, its tasks in
 * stream order joined by solid edges, a dashed edge from each event record
 * to the waits on that event in other streams, and each task group a dashed
 * sub-cluster; each conditional task's bodies as dotted clusters of their
 * own streams, joined to the task by a dotted edge named after the body
 * ("then", "else", "case <n>", "body"). Render with `dot -Tpng`.
 * @throws keel::error as model.tasks() / streams(); std::bad_alloc.
 */
template <class Model>
std::string to_dot(const Model& model) {
  namespace d = detail::dump;
  const std::vector<model_stream> streams = model.streams();
  const std::vector<task_info> tasks = model.tasks();
  const std::string name = model.name();
  d::dump_ids events, groups;
  std::string out = "digraph " + d::dot_string("model " + std::to_string(model.id())) + " {\n";
  out += "  label=" + d::dot_string("model #" + std::to_string(model.id()) + (name.empty() ? "" : " '" + name + "'")) +
         ";\n  labelloc=t;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n";
  d::dot_tasks(streams, tasks, "t", "  ", events, groups, out);
  out += "}\n";
  return out;
}

/**
 * @brief The model as JSON: `modelId`, `name`, `streams` (each `streamId`,
 * `index`, `taskCount` and `tasks`: `taskId`, `seqId`, `taskType`, and by
 * type `kernel`, `arguments`, `copy`, `eventId`; `groupId` for a group's
 * tasks). `taskId` numbers the model's tasks in this order, as CANN's dump
 * does; `eventId` and `groupId` number the model's events and task groups 1,
 * 2, ... in the order the dump first meets them, the same on every backend
 * (not the backend's own values: counters on the host, runtime handles on
 * ACL). A kernel task that runs an operator (ops::run_on) also has
 * `operator`: `op`, `function` (what computes it), `tensors` (each `name`,
 * `address` of its first element, `dtype`, `shape`, `strides` in elements)
 * and `scalars` (each `name`, `dtype`, `value`), in the operator's parameter
 * order. A conditional task has `conditional` ("if", "while", "switch")
 * and `bodies` (each `body`, its number, `name`: "then", "else", "case <n>"
 * or "body", and `streams` as the model's, nested conditionals included).
 * @throws keel::error as model.tasks() / streams(); std::bad_alloc.
 */
template <class Model>
std::string to_json(const Model& model) {
  namespace d = detail::dump;
  const std::vector<model_stream> streams = model.streams();
  const std::vector<task_info> tasks = model.tasks();
  d::dump_ids events, groups;
  std::string out = "{\n  \"modelId\": " + std::to_string(model.id()) + ",\n  \"name\": " + d::json_string(model.name()) +
                    ",\n  \"streams\": [";
  d::json_tasks(streams, tasks, "    ", events, groups, out);
  out += "\n  ]\n}\n";
  return out;
}

KEEL_END_NAMESPACE  // namespace keel
