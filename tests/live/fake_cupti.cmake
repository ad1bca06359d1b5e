# The fake libcupti for the CUPTI adapter tests (tests/live/fake_cupti/fake_cupti.h): a shared
# library exporting the cupti* control functions with test-controlled behaviour, forwarding record
# parsing (cuptiActivityGetNextRecord, names, result strings, version) to the real libcupti.so.13.
# Included from tests/CMakeLists.txt inside the `if(TARGET stepwatch_live ...)` block, so
# STEPWATCH_CUPTI_INCLUDE_DIR is set.
set(_fake_cupti_dir ${CMAKE_CURRENT_LIST_DIR}/fake_cupti)
add_library(stepwatch_fake_cupti SHARED ${_fake_cupti_dir}/fake_cupti.cpp ${_fake_cupti_dir}/fake_cupti_control.cpp
            ${_fake_cupti_dir}/fake_cupti_sim.cpp ${_fake_cupti_dir}/fake_cupti_calls.cpp ${_fake_cupti_dir}/fake_kineto.cpp
            ${PROJECT_SOURCE_DIR}/libtrace/src/cupti/record_layouts.cpp)
# The record builder lives with the adapter (libtrace/src/cupti/cupti_record_builder.h).
target_include_directories(stepwatch_fake_cupti PRIVATE ${_fake_cupti_dir} ${PROJECT_SOURCE_DIR}/libtrace/src
                           SYSTEM PRIVATE ${STEPWATCH_CUPTI_INCLUDE_DIR})
# The real libcupti, for record iteration, through a link whose name is not libcupti.so*: in a test
# process the fake (soname libcupti.so.13, below) is then the only library that looks like CUPTI to
# stepwatch's loader (dlopen RTLD_NOLOAD by soname finds the first loaded; a scan by file name finds
# none other), as torch's copy is in a real job.
set(_real_cupti "${STEPWATCH_CUPTI_INCLUDE_DIR}/../lib64/libcupti.so.13")
set(_parser_link "${CMAKE_BINARY_DIR}/lib/fake_cupti_parser/libstepwatch_real_cupti_parser.so")
file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/lib/fake_cupti_parser")
file(CREATE_LINK "${_real_cupti}" "${_parser_link}" SYMBOLIC)
target_compile_definitions(stepwatch_fake_cupti PRIVATE FAKE_CUPTI_REAL_LIBCUPTI="${_parser_link}")
target_link_libraries(stepwatch_fake_cupti PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
# Default visibility on purpose: the cupti* functions and the fake_cupti_* control API are its ABI.
# Soname libcupti.so.13: it stands in for the libcupti a real job has loaded before stepwatch.
set_target_properties(stepwatch_fake_cupti PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                      NO_SONAME ON)
target_link_options(stepwatch_fake_cupti PRIVATE -Wl,-soname,libcupti.so.13)
stepwatch_set_warnings(stepwatch_fake_cupti)

# The tests dlopen it (like libstepwatch.so would through STEPWATCH_CUPTI_PATH); not linked, so
# its cupti* symbols never interpose on the real libcupti the record tests load.
add_dependencies(stepwatch_live_tests stepwatch_fake_cupti)
target_compile_definitions(stepwatch_live_tests PRIVATE
  STEPWATCH_FAKE_CUPTI_SO="$<TARGET_FILE:stepwatch_fake_cupti>")
