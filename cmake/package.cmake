# The pkg-config file and the CMake package of an installed railcoll (included by
# CMakeLists.txt). Both describe the prefix given at install time
# (`cmake --install build --prefix P`, `make install PREFIX=P`), not the one
# configured.
include(CMakePackageConfigHelpers)

# pkg-config: everything but the prefix now, the prefix when installing.
string(JOIN " " RAILCOLL_PC_STATIC_LIBS ${RAILCOLL_STATIC_LIBS})
set(RAILCOLL_PC_PREFIX "@RAILCOLL_PC_PREFIX@")
configure_file(cmake/railcoll.pc.in ${CMAKE_BINARY_DIR}/package/railcoll.pc.in @ONLY)
install(CODE "
  set(RAILCOLL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_BINARY_DIR}/package/railcoll.pc.in\" \"${CMAKE_BINARY_DIR}/package/railcoll.pc\" @ONLY)")
install(FILES ${CMAKE_BINARY_DIR}/package/railcoll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake: imported targets found relative to the config file.
set(RAILCOLL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/railcoll)
file(RELATIVE_PATH RAILCOLL_CONFIG_TO_PREFIX /prefix/${RAILCOLL_CMAKE_DIR} /prefix)
string(REPLACE "-l" "" RAILCOLL_CONFIG_STATIC_LIBS "${RAILCOLL_STATIC_LIBS}")
list(TRANSFORM RAILCOLL_CONFIG_STATIC_LIBS REPLACE "^pthread$" "Threads::Threads")
configure_file(cmake/railcoll-config.cmake.in ${CMAKE_BINARY_DIR}/package/railcoll-config.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/railcoll-config-version.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/railcoll-config.cmake
              ${CMAKE_BINARY_DIR}/package/railcoll-config-version.cmake
        DESTINATION ${RAILCOLL_CMAKE_DIR})
