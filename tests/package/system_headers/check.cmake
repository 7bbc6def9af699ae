# SPDX-License-Identifier: Apache-2.0
# KEEL_SYSTEM_HEADERS: with it ON, the consumer's compile command names keel's
# include directory with -isystem and the consumer builds and runs under its
# own strict warnings; with it OFF (the default), keel's directory is a plain -I.
#   cmake -DKEEL_SOURCE_DIR=<src> -DCXX=<compiler> -DGENERATOR=<gen> -DWORK_DIR=<dir> -P check.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(REAL_PATH "${KEEL_SOURCE_DIR}/include" include_dir)
foreach(system ON OFF)
  set(build "${WORK_DIR}/${system}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${CMAKE_CURRENT_LIST_DIR}" -B "${build}" -G "${GENERATOR}"
            "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
            "-DKEEL_SOURCE_DIR=${KEEL_SOURCE_DIR}" "-DKEEL_SYSTEM_HEADERS=${system}"
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "configuring the consumer with KEEL_SYSTEM_HEADERS=${system} failed:\n${out}")
  endif()
  file(READ "${build}/compile_commands.json" commands)
  string(JSON command GET "${commands}" 0 command)
  if(system)
    set(expected "-isystem ${include_dir}")
  else()
    set(expected "-I${include_dir}")
  endif()
  string(FIND "${command}" "${expected}" at)
  string(FIND "${command}" "-isystem ${include_dir}" at_system)
  if(at EQUAL -1 OR (NOT system AND NOT at_system EQUAL -1))
    message(FATAL_ERROR "KEEL_SYSTEM_HEADERS=${system}: expected ${expected} in the consumer's command:\n${command}")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/ON" RESULT_VARIABLE result OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the strict consumer did not build with KEEL_SYSTEM_HEADERS=ON:\n${out}")
endif()
execute_process(COMMAND "${WORK_DIR}/ON/consumer" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the strict consumer failed: ${result}")
endif()
