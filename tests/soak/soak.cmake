# The live soak (tests/soak/soak_live.cpp): stepwatch_soak pushes synthetic events through a real
# LiveSession (GPU tracing started on the fake libcupti) and samples RSS. Included from
# tests/CMakeLists.txt after the live tests (needs stepwatch_live and stepwatch_fake_cupti).
#   short (CI, ctest -L soak):  stepwatch_soak --events 10000000
#   full  (documented):         stepwatch_soak --events 100000000
include_guard(GLOBAL)
if(NOT TARGET stepwatch_live OR NOT TARGET stepwatch_fake_cupti)
  return()
endif()
add_executable(stepwatch_soak ${CMAKE_CURRENT_LIST_DIR}/soak_live.cpp)
target_link_libraries(stepwatch_soak PRIVATE stepwatch_live Threads::Threads)
add_dependencies(stepwatch_soak stepwatch_fake_cupti)
target_compile_definitions(stepwatch_soak PRIVATE STEPWATCH_FAKE_CUPTI_SO="$<TARGET_FILE:stepwatch_fake_cupti>")
stepwatch_set_warnings(stepwatch_soak)
# Not a test in sanitizer builds: ASan's shadow and quarantine (or TSan's) make the RSS figures
# meaningless there (tests/tsan/run_tsan.sh runs the binary, short and without limits).
if(NOT STEPWATCH_SANITIZE AND NOT STEPWATCH_TSAN AND NOT STEPWATCH_FUZZ)
  add_test(NAME soak_live_short COMMAND stepwatch_soak --events 10000000)
  set_tests_properties(soak_live_short PROPERTIES LABELS soak TIMEOUT 300)
endif()
