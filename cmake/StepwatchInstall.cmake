# Install rules: `cmake --install <build> --prefix <prefix>` lays out
#
#   <prefix>/bin/stepwatch                                  the command-line tool (analyze, run, detectors)
#   <prefix>/lib/libstepwatch.so                            the injected library (when it is built: CUDA toolkit)
#   <prefix>/include/stepwatch/stepwatch.h                  the C API
#   <prefix>/lib/cmake/stepwatch/stepwatchConfig.cmake      find_package(stepwatch) → stepwatch::stepwatch
#   <prefix>/share/stepwatch/python/stepwatch/              the Python shim (PYTHONPATH=<prefix>/share/stepwatch/python)
#
# bin/ and lib/ are siblings on purpose: `stepwatch run` injects <bin>/../lib/libstepwatch.so, and the
# Python shim, installed four levels below the prefix, finds <prefix>/lib/libstepwatch.so. The library
# directory is therefore `lib` (STEPWATCH_INSTALL_LIBDIR), not GNUInstallDirs' multiarch lib/<triplet>.
# Included from the top-level CMakeLists.txt when stepwatch is the top project.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(STEPWATCH_INSTALL_LIBDIR "lib" CACHE STRING "Where libstepwatch.so goes, relative to the prefix (next to bin/)")
set(STEPWATCH_INSTALL_CMAKEDIR "${STEPWATCH_INSTALL_LIBDIR}/cmake/stepwatch" CACHE STRING
    "Where stepwatchConfig.cmake goes, relative to the prefix")
set(STEPWATCH_INSTALL_PYTHONDIR "${CMAKE_INSTALL_DATADIR}/stepwatch/python" CACHE STRING
    "Where the Python package goes, relative to the prefix (put it on PYTHONPATH)")
set(STEPWATCH_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")

install(TARGETS stepwatch_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT stepwatch)
# The wheel (pyproject.toml, scikit-build-core): the tool and the library inside the Python package,
# as siblings — <pkg>/bin/stepwatch runs <pkg>/lib/libstepwatch.so (`stepwatch run`), and the
# shim finds <pkg>/lib/libstepwatch.so first.
if(SKBUILD)
  install(TARGETS stepwatch_cli RUNTIME DESTINATION ${SKBUILD_PLATLIB_DIR}/stepwatch/bin COMPONENT wheel)
  if(TARGET stepwatch_inject)
    install(TARGETS stepwatch_inject LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/stepwatch/lib COMPONENT wheel)
  else()
    message(STATUS "stepwatch: no CUPTI/NVTX headers: the wheel holds the offline analyzer only")
  endif()
endif()
set(STEPWATCH_INSTALLS_LIBRARY OFF)
if(TARGET stepwatch_inject)
  set(STEPWATCH_INSTALLS_LIBRARY ON)
  install(TARGETS stepwatch_inject LIBRARY DESTINATION ${STEPWATCH_INSTALL_LIBDIR} COMPONENT stepwatch)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/libtrace/include/stepwatch/stepwatch.h
        DESTINATION ${STEPWATCH_INSTALL_INCLUDEDIR}/stepwatch COMPONENT stepwatch)

# The Python shim: sources only (no __pycache__, no packaging metadata; pip installs use python_shim/).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python_shim/src/stepwatch
        DESTINATION ${STEPWATCH_INSTALL_PYTHONDIR} COMPONENT stepwatch
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

# The CMake package: a hand-written config (the .so's interface is the C header alone, nothing to export).
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/stepwatchConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/stepwatchConfig.cmake
  INSTALL_DESTINATION ${STEPWATCH_INSTALL_CMAKEDIR}
  PATH_VARS STEPWATCH_INSTALL_INCLUDEDIR STEPWATCH_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR STEPWATCH_INSTALL_PYTHONDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/stepwatchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stepwatchConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/stepwatchConfigVersion.cmake
        DESTINATION ${STEPWATCH_INSTALL_CMAKEDIR} COMPONENT stepwatch)
