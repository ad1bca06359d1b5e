# Third-party libraries, all from Debian packages (tests/run.sh installs them).
find_package(PkgConfig QUIET)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
# SQLite3: Nsight Systems exports (`nsys export --type sqlite`); Debian libsqlite3-dev.
find_package(SQLite3 REQUIRED)

# simdjson: Debian ships a shared library and a CMake package.
find_package(simdjson REQUIRED)

# libdeflate: no CMake package in Debian 12; headers + library.
find_path(LIBDEFLATE_INCLUDE_DIR libdeflate.h REQUIRED)
find_library(LIBDEFLATE_LIBRARY NAMES libdeflate.a deflate REQUIRED)
add_library(stepwatch_libdeflate INTERFACE)
target_include_directories(stepwatch_libdeflate SYSTEM INTERFACE ${LIBDEFLATE_INCLUDE_DIR})
target_link_libraries(stepwatch_libdeflate INTERFACE ${LIBDEFLATE_LIBRARY})

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
