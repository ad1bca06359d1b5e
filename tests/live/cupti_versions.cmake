# Every CUPTI release in the layout table that scripts/fetch-cupti.sh fetched (NVIDIA's wheels, in
# STEPWATCH_CUPTI_CACHE): a layout probe built against the release's own headers
# (cupti_layout_<version>), and — for a release whose libcupti parses records without a GPU — the
# record-parser, adapter and faithful end-to-end tests against that libcupti (live_cupti_<version>:
# the fake forwards record iteration to it and writes records at its sizes) plus the loading
# policy with it already loaded (live_cupti_loader_<version>). Included from tests/CMakeLists.txt
# after fake_cupti.cmake. Absent releases (offline) add no test: tests/run.sh says so.
set(STEPWATCH_CUPTI_CACHE "$ENV{STEPWATCH_CUPTI_CACHE}" CACHE PATH "CUPTI releases fetched by scripts/fetch-cupti.sh")
if(STEPWATCH_CUPTI_CACHE STREQUAL "")
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(_sw_cupti_cache "$ENV{XDG_CACHE_HOME}/stepwatch/cupti")
  else()
    set(_sw_cupti_cache "$ENV{HOME}/.cache/stepwatch/cupti")
  endif()
else()
  set(_sw_cupti_cache "${STEPWATCH_CUPTI_CACHE}")
endif()

file(GLOB _sw_cupti_releases LIST_DIRECTORIES true "${_sw_cupti_cache}/*")
set(_sw_cupti_tested "")
foreach(_dir IN LISTS _sw_cupti_releases)
  get_filename_component(_v "${_dir}" NAME)
  set(_h "${_dir}/include/cupti_activity.h")
  if(NOT EXISTS "${_h}" OR NOT EXISTS "${_dir}/include/cupti_version.h")
    continue()
  endif()
  # The release's current struct of each kind: the one its cupti_activity.h defines (older ones
  # live in cupti_activity_deprecated.h).
  file(STRINGS "${_h}" _ends REGEX "^} CUpti_Activity[A-Za-z]+[0-9]*;")
  set(_defs "")
  foreach(_line IN LISTS _ends)
    string(REGEX REPLACE "^} (CUpti_Activity[A-Za-z]+[0-9]*);.*" "\\1" _s "${_line}")
    string(REGEX REPLACE "^CUpti_Activity" "" _n "${_s}")
    foreach(_pair "KERNEL:^Kernel[0-9]+$" "MEMCPY:^Memcpy[0-9]+$" "PEER_COPY:^MemcpyPtoP[0-9]+$"
                  "MEMSET:^Memset[0-9]*$" "SYNC:^Synchronization[0-9]*$" "API:^API$" "MEMORY:^Memory[0-9]+$"
                  "OVERHEAD:^Overhead[0-9]*$")
      string(REPLACE ":" ";" _kv "${_pair}")
      list(GET _kv 0 _key)
      list(GET _kv 1 _re)
      if(_n MATCHES "${_re}")
        list(APPEND _defs "SW_${_key}=${_s}")
      endif()
    endforeach()
  endforeach()
  string(MAKE_C_IDENTIFIER "${_v}" _id)
  add_executable(cupti_layout_probe_${_id} ${CMAKE_CURRENT_LIST_DIR}/cupti_layout_probe.cpp
                 ${PROJECT_SOURCE_DIR}/libtrace/src/cupti/record_layouts.cpp)
  # The release's headers only (never the toolkit's): SYSTEM keeps their warnings out.
  target_include_directories(cupti_layout_probe_${_id} SYSTEM BEFORE PRIVATE "${_dir}/include")
  target_include_directories(cupti_layout_probe_${_id} PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/src)
  target_compile_definitions(cupti_layout_probe_${_id} PRIVATE ${_defs})
  set_target_properties(cupti_layout_probe_${_id} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/cupti-probes)
  add_test(NAME cupti_layout_${_v} COMMAND cupti_layout_probe_${_id})
  list(APPEND _sw_cupti_tested "${_v}")

  file(STRINGS "${_dir}/include/cupti_version.h" _api REGEX "^#define CUPTI_API_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _api "${_api}")
  file(GLOB _lib "${_dir}/lib/libcupti.so.1[0-9]")
  # From 13.2 on, libcupti needs a driver for every call (cuptiGetVersion returns
  # CUPTI_ERROR_UNKNOWN without one; 13.2's cuptiActivityGetNextRecord recurses until the stack
  # overflows): their parsers run only in the GPU validation.
  if(_lib AND _api LESS 130200)
    add_test(NAME live_cupti_${_v} COMMAND stepwatch_live_tests
             "--gtest_filter=Cupti*:Faithful*:Faults/FaithfulFault.*:-CuptiLibraryChoice.*")
    set_tests_properties(live_cupti_${_v} PROPERTIES RUN_SERIAL TRUE ENVIRONMENT
      "FAKE_CUPTI_REAL_LIBCUPTI=${_lib};STEPWATCH_TEST_REAL_CUPTI=${_lib};LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp:print_suppressions=0")
    add_test(NAME live_cupti_loader_${_v} COMMAND stepwatch_live_tests
             "--gtest_filter=CuptiLibraryChoice.TheLibcuptiTheProcessHasLoadedIsUsed")
    set_tests_properties(live_cupti_loader_${_v} PROPERTIES ENVIRONMENT "STEPWATCH_TEST_PRELOAD_CUPTI=${_lib}"
                         FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
  elseif(_lib)
    # Where tests/gpu/make_bundle.sh puts them in the bundle: the GPU-validation dry run (which
    # reads this build folder as a bundle) plans its per-release runs from here.
    get_filename_component(_lib_name "${_lib}" NAME)
    file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/lib/cupti-releases/${_v}")
    file(CREATE_LINK "${_lib}" "${CMAKE_BINARY_DIR}/lib/cupti-releases/${_v}/${_lib_name}" SYMBOLIC)
  endif()
endforeach()
if(_sw_cupti_tested)
  message(STATUS "stepwatch: CUPTI releases under test: ${_sw_cupti_tested}")
else()
  message(STATUS "stepwatch: no CUPTI releases in ${_sw_cupti_cache} (scripts/fetch-cupti.sh): per-version tests skipped")
endif()
