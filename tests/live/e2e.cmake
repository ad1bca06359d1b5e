# The end-to-end driver: a simulated training process that loads the real libstepwatch.so with the
# fake libcupti (tests/live/e2e/e2e_driver.cpp), run by tests/live/e2e_test.cpp.
if(TARGET stepwatch_inject AND TARGET stepwatch_fake_cupti)
  add_executable(stepwatch_e2e_driver ${CMAKE_CURRENT_LIST_DIR}/e2e/e2e_driver.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/sim_loop.cpp)
  target_include_directories(stepwatch_e2e_driver PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(stepwatch_e2e_driver PRIVATE stepwatch_synthetic ${CMAKE_DL_LIBS} Threads::Threads)
  stepwatch_set_warnings(stepwatch_e2e_driver)
  add_dependencies(stepwatch_live_tests stepwatch_e2e_driver stepwatch_inject stepwatch_cli)
  target_compile_definitions(stepwatch_live_tests PRIVATE
    STEPWATCH_E2E_DRIVER="$<TARGET_FILE:stepwatch_e2e_driver>"
    STEPWATCH_CLI="$<TARGET_FILE:stepwatch_cli>")
endif()
