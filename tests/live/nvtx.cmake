# NVTX injection end to end, on CPU: an nvtx3 program (plus a second shared object with its own NVTX
# instance) runs as a child of stepwatch_live_tests with NVTX_INJECTION64_PATH pointing at a test
# injection library. That library is libtrace/src/nvtx/ plus a sink that writes every event to
# the file named by STEPWATCH_NVTX_TEST_OUT. Included from tests/CMakeLists.txt when
# stepwatch_live exists (so STEPWATCH_NVTX3_INCLUDE_DIR is set).
set(_nvtx_test_dir ${CMAKE_CURRENT_LIST_DIR}/nvtx)
file(GLOB _nvtx_injection_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/libtrace/src/nvtx/*.cpp)

add_library(stepwatch_nvtx_test_injection SHARED ${_nvtx_injection_sources} ${_nvtx_test_dir}/nvtx_file_sink.cpp)
target_include_directories(stepwatch_nvtx_test_injection
  PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/src ${PROJECT_SOURCE_DIR}/libtrace/include
  SYSTEM PRIVATE ${STEPWATCH_NVTX3_INCLUDE_DIR})
# Like libstepwatch.so: everything hidden except the NVTX entry points.
set_target_properties(stepwatch_nvtx_test_injection PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_link_libraries(stepwatch_nvtx_test_injection PRIVATE Threads::Threads -Wl,--no-undefined)
stepwatch_set_warnings(stepwatch_nvtx_test_injection)

# A second shared object: NVTX3's globals are hidden per object, so it initializes on its own.
add_library(stepwatch_nvtx_test_applib SHARED ${_nvtx_test_dir}/nvtx_app_lib.cpp)
target_include_directories(stepwatch_nvtx_test_applib SYSTEM PRIVATE ${STEPWATCH_NVTX3_INCLUDE_DIR})
target_link_libraries(stepwatch_nvtx_test_applib PRIVATE ${CMAKE_DL_LIBS})
stepwatch_set_warnings(stepwatch_nvtx_test_applib)

add_executable(stepwatch_nvtx_test_app ${_nvtx_test_dir}/nvtx_app.cpp)
target_include_directories(stepwatch_nvtx_test_app SYSTEM PRIVATE ${STEPWATCH_NVTX3_INCLUDE_DIR})
target_link_libraries(stepwatch_nvtx_test_app PRIVATE stepwatch_nvtx_test_applib Threads::Threads ${CMAKE_DL_LIBS})
stepwatch_set_warnings(stepwatch_nvtx_test_app)

# Real NCCL (CPU only: its NVTX range comes before it rejects a null communicator), when present.
add_executable(stepwatch_nvtx_test_nccl_probe ${_nvtx_test_dir}/nvtx_nccl_probe.cpp)
target_link_libraries(stepwatch_nvtx_test_nccl_probe PRIVATE ${CMAKE_DL_LIBS})
stepwatch_set_warnings(stepwatch_nvtx_test_nccl_probe)
find_library(STEPWATCH_NVTX_TEST_NCCL NAMES libnccl.so.2 nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib /usr/local/cuda/lib64)

add_dependencies(stepwatch_live_tests stepwatch_nvtx_test_injection stepwatch_nvtx_test_app
                 stepwatch_nvtx_test_nccl_probe)
target_compile_definitions(stepwatch_live_tests PRIVATE
  STEPWATCH_NVTX_TEST_APP="$<TARGET_FILE:stepwatch_nvtx_test_app>"
  STEPWATCH_NVTX_TEST_INJECTION="$<TARGET_FILE:stepwatch_nvtx_test_injection>"
  STEPWATCH_NVTX_TEST_NCCL_PROBE="$<TARGET_FILE:stepwatch_nvtx_test_nccl_probe>")
if(STEPWATCH_NVTX_TEST_NCCL)
  target_compile_definitions(stepwatch_live_tests PRIVATE STEPWATCH_NVTX_TEST_NCCL="${STEPWATCH_NVTX_TEST_NCCL}")
endif()
