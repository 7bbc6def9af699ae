// SPDX-License-Identifier: Apache-2.0
// Reads the golden cases generate.py writes (format in its docstring): one
// record a line, whitespace-separated tokens, byte strings in hex.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/ops/dtype.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

namespace keel_golden {

using keel::ops::dtype;

/** One tensor argument: its storage and the view over it. */
struct golden_tensor {
  dtype type = dtype::float32;
  std::vector<std::int64_t> sizes, strides;
  std::int64_t offset = 0;
  std::vector<unsigned char> storage;  // the whole storage, before the call

  /** A view of this layout over `bytes` (a copy of storage). */
  keel::ops::tensor view(std::vector<unsigned char>& bytes) const {
    return keel::ops::tensor(bytes.data(), type, sizes.data(), sizes.size(), strides.data(), strides.size(), offset);
  }
};

/** One operator call and PyTorch's answer (or the documented rule's, see `source`). */
struct golden_case {
  std::size_t line = 0;  // where the case starts in the file
  std::string op, source, label;
  std::map<std::string, keel::ops::scalar> scalars;
  std::map<std::string, std::int64_t> ints;
  std::map<std::string, golden_tensor> tensors;
  std::vector<unsigned char> expect;   // out's view, row-major, out's dtype
  std::vector<unsigned char> unfused;  // empty: same as expect
  std::vector<float> tol;              // empty: exact

  const golden_tensor& tensor(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("golden case at line " + std::to_string(line) + " has no tensor " + name);
    return it->second;
  }
};

namespace detail {

inline dtype dtype_named(const std::string& name) {
  for (int i = 0; i < keel::ops::dtype_count; ++i) {
    const auto t = static_cast<dtype>(i);
    if (name == keel::ops::dtype_name(t)) return t;
  }
  throw std::runtime_error("unknown dtype " + name);
}

inline std::vector<unsigned char> hex_bytes(const std::string& hex) {
  std::vector<unsigned char> out;
  if (hex == "-") return out;
  if (hex.size() % 2 != 0) throw std::runtime_error("odd-length hex string");
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<unsigned char>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

}  // namespace detail

/** Every case in `path`; throws std::runtime_error naming the line on a malformed file. */
inline std::vector<golden_case> read_golden(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden data " + path);
  std::vector<golden_case> cases;
  std::string line;
  std::size_t number = 0;
  golden_case current;
  bool open = false;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path + ":" + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++number;
    std::istringstream is(line);
    std::string kind;
    if (!(is >> kind)) continue;
    if (number == 1) {
      std::string version;
      is >> version;
      if (kind != "keel-golden" || version != "1") fail("not a keel-golden 1 file");
      continue;
    }
    if (kind == "case") {
      if (open) fail("case inside a case");
      current = golden_case{};
      current.line = number;
      if (!(is >> current.op >> current.source >> current.label)) fail("case needs op, source and label");
      open = true;
      continue;
    }
    if (!open) fail("record outside a case");
    if (kind == "scalar") {
      std::string name, type, value;
      if (!(is >> name >> type >> value)) fail("scalar needs name, kind and value");
      if (type == "f") {
        current.scalars[name] = keel::ops::scalar(std::strtod(value.c_str(), nullptr));
      } else {
        current.scalars[name] = keel::ops::scalar(static_cast<std::int64_t>(std::stoll(value)));
      }
    } else if (kind == "int") {
      std::string name;
      std::int64_t v = 0;
      if (!(is >> name >> v)) fail("int needs name and value");
      current.ints[name] = v;
    } else if (kind == "tensor") {
      std::string name, type, hex;
      std::size_t nd = 0;
      golden_tensor t;
      if (!(is >> name >> type >> nd)) fail("tensor needs name, dtype and rank");
      t.type = detail::dtype_named(type);
      t.sizes.resize(nd);
      t.strides.resize(nd);
      for (auto& s : t.sizes) is >> s;
      for (auto& s : t.strides) is >> s;
      std::size_t elements = 0;
      if (!(is >> t.offset >> elements >> hex)) fail("tensor needs offset, storage size and bytes");
      t.storage = detail::hex_bytes(hex);
      if (t.storage.size() != elements * keel::ops::element_size(t.type)) fail("tensor storage size mismatch");
      current.tensors[name] = std::move(t);
    } else if (kind == "expect" || kind == "unfused" || kind == "tol") {
      std::string hex;
      if (!(is >> hex)) fail(kind + " needs bytes");
      auto bytes = detail::hex_bytes(hex);
      if (kind == "expect") {
        current.expect = std::move(bytes);
      } else if (kind == "unfused") {
        current.unfused = std::move(bytes);
      } else {
        current.tol.resize(bytes.size() / 4);
        if (!bytes.empty()) std::memcpy(current.tol.data(), bytes.data(), current.tol.size() * 4);
      }
    } else if (kind == "end") {
      cases.push_back(std::move(current));
      open = false;
    } else {
      fail("unknown record " + kind);
    }
  }
  if (open) fail("file ends inside a case");
  return cases;
}

}  // namespace keel_golden
