// SPDX-License-Identifier: Apache-2.0
// The mutex policies every policy-templated test runs against.
#pragma once

#include <keel/core/checked_mutex.hpp>
#include <keel/core/mutex_policy.hpp>
#if defined(KEEL_TEST_WITH_BOOST)
#include <keel/core/boost_mutex_policy.hpp>
#endif

#include <tuple>

namespace keel_test {

using all_policies = std::tuple<keel::std_shared_mutex_policy, keel::null_mutex_policy, keel::checked_mutex_policy
#if defined(KEEL_TEST_WITH_BOOST)
                                ,
                                keel::boost_shared_mutex_policy, keel::boost_upgrade_mutex_policy
#endif
                                >;

using thread_safe_policies = std::tuple<keel::std_shared_mutex_policy, keel::checked_mutex_policy
#if defined(KEEL_TEST_WITH_BOOST)
                                        ,
                                        keel::boost_shared_mutex_policy, keel::boost_upgrade_mutex_policy
#endif
                                        >;

}  // namespace keel_test
