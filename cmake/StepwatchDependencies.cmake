# Third-party libraries, all from Debian packages (tests/run.sh installs them).
find_package(PkgConfig QUIET)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
# SQLite3: Nsight Systems exports (`nsys export --type sqlite`); Debian libsqlite3-dev.
find_package(SQLite3 REQUIRED)

# simdjson: Debian ships a shared library and a CMake package.
find_package(simdjson REQUIRED)

# libdeflate: the floor the import is measured against (bench/import_floor.cpp); no CMake package
# in Debian 12: headers + library.
find_path(LIBDEFLATE_INCLUDE_DIR libdeflate.h REQUIRED)
find_library(LIBDEFLATE_LIBRARY NAMES libdeflate.a deflate REQUIRED)
add_library(stepwatch_libdeflate INTERFACE)
target_include_directories(stepwatch_libdeflate SYSTEM INTERFACE ${LIBDEFLATE_INCLUDE_DIR})
target_link_libraries(stepwatch_libdeflate INTERFACE ${LIBDEFLATE_LIBRARY})

# ISA-L's igzip (Debian libisal-dev): the Kineto importer's streaming gzip inflate, ~3x zlib's
# speed. Optional: without it zlib inflates (same results, slower).
find_path(ISAL_INCLUDE_DIR isa-l/igzip_lib.h)
find_library(ISAL_LIBRARY NAMES isal)
if(ISAL_INCLUDE_DIR AND ISAL_LIBRARY)
  add_library(stepwatch_isal INTERFACE)
  target_include_directories(stepwatch_isal SYSTEM INTERFACE ${ISAL_INCLUDE_DIR})
  target_link_libraries(stepwatch_isal INTERFACE ${ISAL_LIBRARY})
  target_compile_definitions(stepwatch_isal INTERFACE STEPWATCH_HAVE_ISAL=1)
else()
  message(STATUS "stepwatch: ISA-L (libisal-dev) not found: gzip traces are inflated with zlib, about 3x slower")
endif()

# nlohmann_json and CLI11 are header-only.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

# spdlog header-only (SPDLOG_HEADER_ONLY) so that the injected .so carries its own copy.
find_package(spdlog QUIET)
