# Other CPython interpreters on the build machine (pyenv's, under ~/.pyenv/versions): for each
# minor version the frame reader has a layout row for, the probe measures the row with that
# interpreter's own headers (python_layout_<version>), and the live call-site test runs under it
# (python_call_sites_<version>): the frames read without the GIL give the right file:line there
# too. Interpreters that are absent add no test (a fresh machine without pyenv runs the configured
# Python's only).
set(_sw_py_candidates)
foreach(_minor 11 12 13)
  file(GLOB _found "$ENV{HOME}/.pyenv/versions/3.${_minor}.*/bin/python3.${_minor}")
  list(SORT _found)
  if(_found)
    list(GET _found -1 _py)  # the newest patch release
    list(APPEND _sw_py_candidates "3.${_minor}=${_py}")
  endif()
endforeach()
foreach(_entry ${_sw_py_candidates})
  string(REPLACE "=" ";" _pair "${_entry}")
  list(GET _pair 0 _ver)
  list(GET _pair 1 _py)
  get_filename_component(_root "${_py}" DIRECTORY)
  get_filename_component(_root "${_root}" DIRECTORY)
  set(_inc "${_root}/include/python${_ver}")
  if(TARGET stepwatch_live_base_tests AND EXISTS "${_inc}/internal/pycore_frame.h")
    add_executable(stepwatch_python_layout_probe_${_ver} ${PROJECT_SOURCE_DIR}/tests/live/python_layout_probe.c)
    target_include_directories(stepwatch_python_layout_probe_${_ver} PRIVATE "${_inc}")
    add_dependencies(stepwatch_live_base_tests stepwatch_python_layout_probe_${_ver})
    add_test(NAME python_layout_${_ver} COMMAND stepwatch_live_base_tests
             "--gtest_filter=PythonLayout.TheTableMatchesTheInterpretersOwnHeaders")
    set_tests_properties(python_layout_${_ver} PROPERTIES FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED" ENVIRONMENT
      "STEPWATCH_PYTHON_LAYOUT_PROBE=$<TARGET_FILE:stepwatch_python_layout_probe_${_ver}>")
  endif()
  if(TARGET stepwatch_inject AND TARGET stepwatch_fake_cupti AND NOT STEPWATCH_SANITIZE)
    add_test(NAME python_call_sites_${_ver}
             COMMAND "${_py}" -m unittest discover -s ${_sw_py_dir} -p test_call_sites.py -v
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(python_call_sites_${_ver} PROPERTIES ENVIRONMENT "${_sw_py_env}" TIMEOUT 120
                         FAIL_REGULAR_EXPRESSION "skipped|FAILED")
  endif()
endforeach()
