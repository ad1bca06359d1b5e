# libFuzzer targets (tests/fuzz/run_fuzzers.sh). Only with -DSTEPWATCH_FUZZ=ON and clang:
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DSTEPWATCH_FUZZ=ON
# (cmake/StepwatchWarnings.cmake then instruments every target with fuzzer-no-link + ASan/UBSan.)
include_guard(GLOBAL)
if(NOT STEPWATCH_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(STATUS "stepwatch: STEPWATCH_FUZZ needs clang (have ${CMAKE_CXX_COMPILER_ID}); no fuzzers")
  return()
endif()

function(stepwatch_fuzzer name)
  add_executable(${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE stepwatch::detectors stepwatch::core ${ARGN})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/src)
  stepwatch_set_warnings(${name})
endfunction()

stepwatch_fuzzer(fuzz_kineto_import)
stepwatch_fuzzer(fuzz_analysis)
# live_config.cpp has no CUDA dependency: compiled in directly, so this fuzzer exists without the toolkit.
stepwatch_fuzzer(fuzz_live_config)
target_sources(fuzz_live_config PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/src/live/live_config.cpp)
# The metrics endpoint's request parser: no CUDA dependency either.
stepwatch_fuzzer(fuzz_metrics_request)
target_sources(fuzz_metrics_request PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/src/live/outputs/metrics_http.cpp)
# The nsys importer: corrupted database images (seeds: make_nsys_seeds.py), and well-formed
# exports with fuzzed rows (built with the sqlite3 C API in the target).
stepwatch_fuzzer(fuzz_nsys_import)
stepwatch_fuzzer(fuzz_nsys_rows SQLite::SQLite3)
add_custom_target(stepwatch_fuzzers DEPENDS fuzz_kineto_import fuzz_analysis fuzz_live_config fuzz_nsys_import
                                            fuzz_nsys_rows fuzz_metrics_request)
