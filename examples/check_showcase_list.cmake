# SPDX-License-Identifier: Apache-2.0
# tools/showcase runs each line of examples.txt as a program: every line must
# name an executable the build made (an example moved to a subfolder once
# left the showcase running a path that did not exist, which only a fresh
# machine's showcase run noticed).
#   cmake -DLIST=<build>/examples/examples.txt -P check_showcase_list.cmake
cmake_minimum_required(VERSION 3.19)
if(NOT EXISTS "${LIST}")
  message(FATAL_ERROR "the showcase's list ${LIST} was not generated")
endif()
file(STRINGS "${LIST}" examples)
list(LENGTH examples count)
if(count EQUAL 0)
  message(FATAL_ERROR "the showcase's list ${LIST} names no example")
endif()
foreach(example IN LISTS examples)
  if(NOT IS_ABSOLUTE "${example}" OR NOT EXISTS "${example}" OR IS_DIRECTORY "${example}")
    message(FATAL_ERROR "the showcase's list names '${example}', which is not a built example program")
  endif()
endforeach()
message(STATUS "the showcase's list names ${count} built examples")
