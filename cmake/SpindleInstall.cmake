# `cmake --install`: the public headers, the static libraries, a CMake package
# (find_package(spindle) gives spindle::spindle and spindle::<folder>) and
# spindle.pc for pkg-config. Every path is relative to the install prefix, so
# the installed tree may be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_spindle_install_targets
  spindle_base spindle_fiber spindle_uring spindle_sched spindle_net spindle_tls spindle_http
  spindle_storage spindle_fs spindle_proc spindle_sim spindle_spindle)
# The public headers need C++23 (std::expected): consumers get it from here.
target_compile_features(spindle_base INTERFACE cxx_std_23)
foreach(_target IN LISTS _spindle_install_targets)
  string(REGEX REPLACE "^spindle_" "" _name ${_target})
  set_target_properties(${_target} PROPERTIES EXPORT_NAME ${_name})
endforeach()

# Headers: each library's include/ tree (sched's public headers include its
# detail/ ones) and the umbrella include/spindle/spindle.hpp.
foreach(_dir base fiber uring sched net tls http storage fs proc sim)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/spindle/spindle.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spindle)

install(TARGETS ${_spindle_install_targets}
  EXPORT spindleTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# spindle::options (warnings, -Werror, sanitizers) is not installed, but its
# link options (a sanitizer's, if any) are: a sanitized static library needs
# the sanitizer's runtime in the consumer's link.
get_target_property(_spindle_link_options spindle_options INTERFACE_LINK_OPTIONS)
if(_spindle_link_options)
  target_link_options(spindle_base INTERFACE "$<INSTALL_INTERFACE:${_spindle_link_options}>")
  list(JOIN _spindle_link_options " " SPINDLE_PC_LINK_OPTIONS)
endif()

set(_spindle_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/spindle)
install(EXPORT spindleTargets
  NAMESPACE spindle::
  DESTINATION ${_spindle_cmake_dir})
configure_package_config_file(cmake/spindleConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spindleConfig.cmake
  INSTALL_DESTINATION ${_spindle_cmake_dir})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spindleConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/spindleConfig.cmake
  ${PROJECT_BINARY_DIR}/spindleConfigVersion.cmake
  DESTINATION ${_spindle_cmake_dir})

# spindle.pc finds the prefix from its own place, lib/pkgconfig or the like.
file(RELATIVE_PATH _spindle_pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" _spindle_pc_to_prefix "${_spindle_pc_to_prefix}")
set(SPINDLE_PC_PREFIX "\${pcfiledir}/${_spindle_pc_to_prefix}")
configure_file(cmake/spindle.pc.in ${PROJECT_BINARY_DIR}/spindle.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spindle.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The gdb extension (docs/debugging.md): `source <prefix>/share/spindle/gdb/spindle.py`.
install(FILES ${PROJECT_SOURCE_DIR}/scripts/gdb/spindle.py
  DESTINATION ${CMAKE_INSTALL_DATADIR}/spindle/gdb)
