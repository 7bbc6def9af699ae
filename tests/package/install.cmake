# SPDX-License-Identifier: Apache-2.0
# Installs keel into a fresh prefix, so the find_package consumer sees only
# what install() really ships.
file(REMOVE_RECURSE "${KEEL_PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${KEEL_BUILD_DIR}" --prefix "${KEEL_PREFIX}"
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${result}")
endif()
if(NOT EXISTS "${KEEL_PREFIX}/share/cmake/keel/keelConfig.cmake")
  message(FATAL_ERROR "keelConfig.cmake was not installed")
endif()
