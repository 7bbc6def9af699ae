# SPDX-License-Identifier: Apache-2.0
# keel.benchmarks.json_output: keel_benchmarks with --benchmark_format=json
# on a tiny filter prints JSON on stdout and nothing else (a script can parse
# it), the ratio table on stderr, and the JSON ratio table, with one row per
# pair, only where asked: --keel_ratios_json names the file; a run without it
# (and without KEEL_RATIOS_JSON) writes no file at all.
#   cmake -DKEEL_BENCHMARKS=<binary> -DWORK_DIR=<dir> -P check_json_output.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/unasked")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=KEEL_RATIOS_JSON
          "${KEEL_BENCHMARKS}" "--benchmark_filter=^BM_guard_baseline$" --benchmark_min_time=0.01
  WORKING_DIRECTORY "${WORK_DIR}/unasked"
  OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "keel_benchmarks exited with ${result}:\n${err}")
endif()
file(GLOB left_behind "${WORK_DIR}/unasked/*")
if(left_behind)
  message(FATAL_ERROR "a run not asked for files left some where it was started: ${left_behind}")
endif()

execute_process(
  COMMAND "${KEEL_BENCHMARKS}" "--benchmark_filter=^BM_guard_(baseline|scope_exit)$"
          --benchmark_min_time=0.01 --benchmark_format=json "--keel_ratios_json=${WORK_DIR}/keel_ratios.json"
  WORKING_DIRECTORY "${WORK_DIR}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "keel_benchmarks exited with ${result}:\n${err}")
endif()

# stdout is one JSON document: Google Benchmark's own.
string(JSON count ERROR_VARIABLE json_error LENGTH "${out}" benchmarks)
if(json_error)
  message(FATAL_ERROR "stdout is not Google Benchmark's JSON (${json_error}):\n${out}")
endif()
if(NOT count EQUAL 2)
  message(FATAL_ERROR "expected 2 benchmarks on stdout, got ${count}:\n${out}")
endif()
set(names "")
foreach(i RANGE 1)
  string(JSON name GET "${out}" benchmarks ${i} name)
  string(JSON time GET "${out}" benchmarks ${i} real_time)
  if(NOT time GREATER 0)
    message(FATAL_ERROR "${name}: real_time ${time} is not a time")
  endif()
  list(APPEND names "${name}")
endforeach()
list(SORT names)
if(NOT names STREQUAL "BM_guard_baseline;BM_guard_scope_exit")
  message(FATAL_ERROR "unexpected benchmarks on stdout: ${names}")
endif()

# The ratio table went to stderr, not into the JSON.
if(NOT err MATCHES "keel benchmark[^\n]*ratio" OR NOT err MATCHES "\nBM_guard_scope_exit +[0-9.]+ ns +BM_guard_baseline")
  message(FATAL_ERROR "no ratio table row on stderr:\n${err}")
endif()

# keel_ratios.json: the same pair, with every field a gate needs.
set(ratios_file "${WORK_DIR}/keel_ratios.json")
if(NOT EXISTS "${ratios_file}")
  message(FATAL_ERROR "keel_ratios.json was not written")
endif()
file(READ "${ratios_file}" ratios)
string(JSON rows ERROR_VARIABLE json_error LENGTH "${ratios}" ratios)
if(json_error)
  message(FATAL_ERROR "keel_ratios.json does not parse (${json_error}):\n${ratios}")
endif()
if(NOT rows EQUAL 1)
  message(FATAL_ERROR "expected 1 row in keel_ratios.json, got ${rows}:\n${ratios}")
endif()
foreach(field name baseline unit keel baseline_figure ratio added_ns target met)
  string(JSON value ERROR_VARIABLE json_error GET "${ratios}" ratios 0 ${field})
  if(json_error)
    message(FATAL_ERROR "keel_ratios.json row lacks \"${field}\":\n${ratios}")
  endif()
  set(row_${field} "${value}")
endforeach()
if(NOT row_name STREQUAL "BM_guard_scope_exit" OR NOT row_baseline STREQUAL "BM_guard_baseline" OR
   NOT row_unit STREQUAL "ns")
  message(FATAL_ERROR "wrong pair in keel_ratios.json:\n${ratios}")
endif()
string(JSON met_type TYPE "${ratios}" ratios 0 met)
if(NOT met_type STREQUAL "NULL")  # "~1.0x" is an informational target
  message(FATAL_ERROR "an informational target must have \"met\": null, got ${met_type}")
endif()
string(JSON all_met TYPE "${ratios}" all_targets_met)
if(NOT all_met STREQUAL "BOOLEAN")
  message(FATAL_ERROR "all_targets_met is not a boolean:\n${ratios}")
endif()
