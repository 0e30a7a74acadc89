# Compiler flags shared by every spindle target, carried by one INTERFACE target.
add_library(spindle_options INTERFACE)
add_library(spindle::options ALIAS spindle_options)

target_compile_options(spindle_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wimplicit-fallthrough -Wformat=2
  -fno-omit-frame-pointer
  # Probe every page of a large frame so a fiber overflowing its stack always
  # touches its guard page instead of jumping over it.
  -fstack-clash-protection)

# clang checks the lock annotations (spindle/base/thread_annotations.hpp): data
# touched without its lock, a lock not released, a function called without
# the lock it requires. GCC ignores the annotations.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_options(spindle_options INTERFACE -Wthread-safety)
endif()

if(SPINDLE_WERROR)
  target_compile_options(spindle_options INTERFACE -Werror)
endif()

if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  target_compile_definitions(spindle_options INTERFACE SPINDLE_DEBUG=1)
endif()

if(SPINDLE_SANITIZE STREQUAL "address")
  set(_spindle_san -fsanitize=address,undefined -fno-sanitize-recover=all)
  # GCC 12 reports false -Wmaybe-uninitialized inside <regex> when instrumenting
  # (clang has no such warning, and rejects the option).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(spindle_options INTERFACE -Wno-maybe-uninitialized)
  endif()
  target_compile_definitions(spindle_options INTERFACE SPINDLE_ASAN=1)
elseif(SPINDLE_SANITIZE STREQUAL "thread")
  set(_spindle_san -fsanitize=thread)
  target_compile_definitions(spindle_options INTERFACE SPINDLE_TSAN=1)
elseif(NOT SPINDLE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SPINDLE_SANITIZE must be empty, 'address' or 'thread', not '${SPINDLE_SANITIZE}'")
endif()
if(DEFINED _spindle_san)
  target_compile_options(spindle_options INTERFACE ${_spindle_san})
  target_link_options(spindle_options INTERFACE ${_spindle_san})
endif()
