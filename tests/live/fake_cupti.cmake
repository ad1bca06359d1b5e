# The fake libcupti for the CUPTI adapter tests (tests/live/fake_cupti/fake_cupti.h): a shared
# library exporting the cupti* control functions with test-controlled behaviour, forwarding record
# parsing (cuptiActivityGetNextRecord, names, result strings, version) to the real libcupti.so.13.
# Included from tests/CMakeLists.txt inside the `if(TARGET stepwatch_live ...)` block, so
# STEPWATCH_CUPTI_INCLUDE_DIR is set.
set(_fake_cupti_dir ${CMAKE_CURRENT_LIST_DIR}/fake_cupti)
add_library(stepwatch_fake_cupti SHARED ${_fake_cupti_dir}/fake_cupti.cpp)
target_include_directories(stepwatch_fake_cupti PRIVATE ${_fake_cupti_dir}
                           SYSTEM PRIVATE ${STEPWATCH_CUPTI_INCLUDE_DIR})
target_compile_definitions(stepwatch_fake_cupti PRIVATE
  FAKE_CUPTI_REAL_LIBCUPTI="${STEPWATCH_CUPTI_INCLUDE_DIR}/../lib64/libcupti.so.13")
target_link_libraries(stepwatch_fake_cupti PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
# Default visibility on purpose: the cupti* functions and the fake_cupti_* control API are its ABI.
set_target_properties(stepwatch_fake_cupti PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
stepwatch_set_warnings(stepwatch_fake_cupti)

# The tests dlopen it (like libstepwatch.so would through STEPWATCH_CUPTI_PATH); not linked, so
# its cupti* symbols never interpose on the real libcupti the record tests load.
add_dependencies(stepwatch_live_tests stepwatch_fake_cupti)
target_compile_definitions(stepwatch_live_tests PRIVATE
  STEPWATCH_FAKE_CUPTI_SO="$<TARGET_FILE:stepwatch_fake_cupti>")
