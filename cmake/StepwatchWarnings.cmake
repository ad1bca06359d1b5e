# Warnings and sanitizers, applied per target so that third-party code is not affected.
function(stepwatch_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
  # GCC 12 reports false -Wmaybe-uninitialized on std::variant holding vectors (GCC PR 105562
  # family); clang and -fsanitize runs keep the check honest.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()

if(STEPWATCH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# ThreadSanitizer (tests/tsan/run_tsan.sh) and the libFuzzer build (tests/fuzz/run_fuzzers.sh, clang
# only: every target gets coverage instrumentation plus ASan+UBSan; the fuzzers link libFuzzer).
option(STEPWATCH_TSAN "Build with ThreadSanitizer" OFF)
option(STEPWATCH_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
if(STEPWATCH_TSAN AND (STEPWATCH_SANITIZE OR STEPWATCH_FUZZ))
  message(FATAL_ERROR "STEPWATCH_TSAN cannot be combined with STEPWATCH_SANITIZE or STEPWATCH_FUZZ")
endif()
if(STEPWATCH_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(STEPWATCH_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
