// SPDX-License-Identifier: Apache-2.0
// Where the ACL libraries are: the three CANN shared libraries keel's ACL
// backend resolves functions from, and the ordered list of paths to try for
// each, following CANN's environment conventions.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/**
 * @brief The CANN shared libraries the ACL subset comes from.
 *
 * In a CANN toolkit all three sit in `${ASCEND_HOME_PATH}/lib64`; CANN's own
 * samples link exactly these (`ascendcl`, `nnopbase`, `opapi`).
 */
enum class library {
  ascendcl,  ///< libascendcl.so: aclInit, aclrt*, aclmdlRI*, aclGetRecentErrMsg
  nnopbase,  ///< libnnopbase.so: aclCreateTensor/Scalar/IntArray, aclDestroy*, executors
  opapi,     ///< libopapi.so: the aclnn* operators
};

/** @brief The library's file name, as the dynamic loader looks it up. Throws: nothing. */
constexpr const char* soname(library lib) noexcept {
  switch (lib) {
    case library::ascendcl: return "libascendcl.so";
    case library::nnopbase: return "libnnopbase.so";
    case library::opapi: return "libopapi.so";
  }
  return "";
}

/** @brief How library_candidates() reads an environment variable: returns
 *  null when unset. std::getenv when not given. */
using environment_lookup = const char* (*)(const char* name);

/**
 * @brief The paths to try, in order, to load @p lib; load the first that opens.
 *
 * 1. @p explicit_directory, when not empty: only `<explicit_directory>/<soname>`.
 *    An explicit choice is never silently replaced by another CANN.
 * 2. `$ASCEND_HOME_PATH/lib64/<soname>`: CANN's `set_env.sh` sets
 *    ASCEND_HOME_PATH to the toolkit root (by default
 *    /usr/local/Ascend/ascend-toolkit/latest), whose lib64 holds the libraries.
 * 3. `$ASCEND_TOOLKIT_HOME/lib64/<soname>`: the same root under the other
 *    name set_env.sh exports and many build scripts read; skipped when it
 *    gives the same path as 2.
 * 4. `<soname>` alone: the dynamic loader searches LD_LIBRARY_PATH (which
 *    set_env.sh extends with lib64), the ld.so cache and the system paths.
 *
 * Empty variables count as unset. A trailing '/' on a directory is accepted.
 * @param env reads the environment; std::getenv when null (which is not safe
 *        against a concurrent setenv, like every getenv).
 * @throws std::bad_alloc only.
 */
inline std::vector<std::string> library_candidates(library lib, std::string_view explicit_directory = {},
                                                   environment_lookup env = nullptr) {
  const std::string name = soname(lib);
  const auto join = [](std::string_view directory, std::string_view leaf) {
    std::string path(directory);
    if (path.back() != '/') path += '/';
    return path.append(leaf);
  };
  const auto in = [&](std::string_view directory) { return join(directory, name); };
  if (!explicit_directory.empty()) return {in(explicit_directory)};

  const auto lookup = [env](const char* variable) -> std::string {
    const char* value = env != nullptr ? env(variable) : std::getenv(variable);
    return value == nullptr ? std::string() : std::string(value);
  };
  std::vector<std::string> candidates;
  const std::string home = lookup("ASCEND_HOME_PATH");
  const std::string toolkit = lookup("ASCEND_TOOLKIT_HOME");
  if (!home.empty()) candidates.push_back(in(join(home, "lib64")));
  if (!toolkit.empty()) {
    std::string path = in(join(toolkit, "lib64"));
    if (candidates.empty() || candidates.front() != path) candidates.push_back(std::move(path));
  }
  candidates.push_back(name);
  return candidates;
}

} KEEL_END_NAMESPACE  // namespace keel::acl
