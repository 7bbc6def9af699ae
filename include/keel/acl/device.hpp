// SPDX-License-Identifier: Apache-2.0
// The ACL device: CANN's libraries found and leased, the resolved function
// table, the device made current on every thread that calls keel, and what
// the device keeps for its streams. The class is in
// keel/acl/detail/device.hpp (the native layers are written against it);
// its destructor and forget_* calls drain and forget records of every layer,
// so they are defined over the whole backend, in keel/acl/impl/device.ipp:
// a program that includes this header alone links.
#pragma once

#include "keel/acl/detail/device.hpp"
#include "keel/acl/impl/device.ipp"
