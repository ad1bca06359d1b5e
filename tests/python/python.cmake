# The Python shim's tests (tests/python, stdlib unittest). Included from tests/CMakeLists.txt after
# the live-library block (it uses the stepwatch_fake_cupti target defined there when it exists).
#
#   python_shim       every test, against the built libstepwatch.so, the fake libcupti and the CLI
#                     (tests needing an artifact that was not built skip themselves)
#   python_shim_noop  no-op mode only: no library anywhere (runs even without the CUDA toolkit)
#
# Not in sanitizer builds: an ASan-instrumented libstepwatch.so cannot be dlopen'ed by python3.
find_package(Python3 3.9 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "stepwatch: no Python 3.9+ interpreter; the Python shim tests are not registered")
  return()
endif()

set(_sw_py_dir ${CMAKE_CURRENT_LIST_DIR})
set(_sw_py_env "PYTHONPATH=${PROJECT_SOURCE_DIR}/python_shim/src" "PYTHONDONTWRITEBYTECODE=1")

if(TARGET stepwatch_inject AND NOT STEPWATCH_SANITIZE)
  list(APPEND _sw_py_env "STEPWATCH_TEST_LIBRARY=$<TARGET_FILE:stepwatch_inject>")
  if(TARGET stepwatch_fake_cupti)
    list(APPEND _sw_py_env "STEPWATCH_TEST_FAKE_CUPTI=$<TARGET_FILE:stepwatch_fake_cupti>")
  endif()
endif()
if(TARGET stepwatch_cli)
  list(APPEND _sw_py_env "STEPWATCH_TEST_CLI=$<TARGET_FILE:stepwatch_cli>")
endif()

add_test(NAME python_shim
         COMMAND ${Python3_EXECUTABLE} -m unittest discover -s ${_sw_py_dir} -v
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python_shim PROPERTIES ENVIRONMENT "${_sw_py_env}" TIMEOUT 300)

add_test(NAME python_shim_noop
         COMMAND ${Python3_EXECUTABLE} -m unittest discover -s ${_sw_py_dir} -p test_noop.py -v
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python_shim_noop PROPERTIES
  ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python_shim/src;PYTHONDONTWRITEBYTECODE=1" TIMEOUT 120)

include(${CMAKE_CURRENT_LIST_DIR}/interpreters.cmake)
