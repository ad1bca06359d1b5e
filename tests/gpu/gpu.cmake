# The GPU-validation dry run as a CTest test (no GPU, no network): tests/gpu/validate.sh --dry-run
# against this build folder, which holds the same bin/ and lib/ as the bundle that
# tests/gpu/make_bundle.sh makes. It checks that bin/fault_loop, bin/stepwatch and
# lib/libstepwatch.so are there and that their non-CUDA libraries resolve, prints the plan of
# every command the GPU run would make, and sends fake results through the JSON path.
#
# Included from tests/CMakeLists.txt:  include(${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu.cmake)
# Skipped (exit 77) when fault_loop is not built (no CUDA compiler / NCCL, or examples/ not added);
# a missing libstepwatch.so is tolerated only when its target (stepwatch_inject) does not exist.
# Target checks are generator expressions: they hold whatever the order of add_subdirectory calls.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "stepwatch: python3 not found; the GPU-validation dry-run test is not added")
  return()
endif()

add_test(NAME gpu_validate_dry_run
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/validate.sh --dry-run
          --build ${CMAKE_BINARY_DIR}
          --out ${CMAKE_CURRENT_BINARY_DIR}/gpu-dry-run/out
          --work-dir ${CMAKE_CURRENT_BINARY_DIR}/gpu-dry-run/work
          $<$<NOT:$<TARGET_EXISTS:stepwatch_inject>>:--allow-missing-lib>
          $<$<NOT:$<TARGET_EXISTS:fault_loop>>:--skip-if-no-fault-loop>)
set_tests_properties(gpu_validate_dry_run PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
