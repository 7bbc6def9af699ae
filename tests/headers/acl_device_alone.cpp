// SPDX-License-Identifier: Apache-2.0
// A program that includes keel/acl/device.hpp alone and makes, uses and
// destroys a device: it links only if every member of keel::acl::device is
// defined by what that header includes. Nothing runs (CANN is not loaded):
// building it is the check.
#include "keel/acl/device.hpp"

namespace {

[[maybe_unused]] std::size_t open_and_close() {
  keel::acl::device dev{keel::acl::device_options{}};
  dev.forget_stream(nullptr);
  dev.forget_model(nullptr);
  dev.forget_group(nullptr);
  return dev.pending_releases();
}

}  // namespace

int main(int argc, char**) { return argc > 1 ? static_cast<int>(open_and_close()) : 0; }
