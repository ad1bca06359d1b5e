# The fake libnvidia-ml for the NVML sampler tests (tests/live/fake_nvml/fake_nvml.cpp): the tests
# point the sampler at it (STEPWATCH_NVML_PATH's option) and drive it through its fake_nvml_* API.
add_library(stepwatch_fake_nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml/fake_nvml.cpp)
set_target_properties(stepwatch_fake_nvml PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
stepwatch_set_warnings(stepwatch_fake_nvml)
add_dependencies(stepwatch_live_base_tests stepwatch_fake_nvml)
target_compile_definitions(stepwatch_live_base_tests PRIVATE
  STEPWATCH_FAKE_NVML_SO="$<TARGET_FILE:stepwatch_fake_nvml>")
