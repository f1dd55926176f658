# The MPI interposition library (src/mpi, docs/mpi.md), librailcoll_mpi.so:
# one build per MPI ABI found, the same sources compiled against that mpi.h and
# linked with that MPI library:
#   Open MPI                      -> lib/librailcoll_mpi.so        (pkg-config ompi-c)
#   MPICH, Intel MPI, MVAPICH...  -> lib/mpich/librailcoll_mpi.so  (pkg-config mpich)
# Each sits on the shipped C API (librailcoll.so, found beside it or one
# directory up: RPATH $ORIGIN and $ORIGIN/..) and exports MPI_* and their
# Fortran entry points (src/mpi/fortran) alone.
# Optional: without an MPI library the rest of railcoll builds as usual.
find_package(PkgConfig QUIET)
railcoll_sources(MPI_LAYER_SOURCES src/mpi src/mpi/fortran)
set(RAILCOLL_MPI_LAYERS "")
function(railcoll_mpi_layer abi module subdir)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(RAILCOLL_${abi} QUIET IMPORTED_TARGET ${module})
  endif()
  if(NOT RAILCOLL_${abi}_FOUND)
    message(STATUS "railcoll: ${abi} (pkg-config ${module}) not found: no lib/${subdir}librailcoll_mpi.so")
    return()
  endif()
  set(target railcoll_mpi_${abi})
  add_library(${target} SHARED ${MPI_LAYER_SOURCES})
  target_link_libraries(${target} PRIVATE railcoll PkgConfig::RAILCOLL_${abi} ${CMAKE_DL_LIBS})
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  # MPI's headers declare MPI_* with their own visibility, or none: export by
  # the version script instead.
  set_target_properties(${target} PROPERTIES OUTPUT_NAME railcoll_mpi CXX_VISIBILITY_PRESET default
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/${subdir}
                        BUILD_RPATH "$ORIGIN;$ORIGIN/.." INSTALL_RPATH "$ORIGIN;$ORIGIN/.."
                        LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/railcoll_mpi.map)
  target_link_options(${target} PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/railcoll_mpi.map
                      -Wl,--no-undefined)
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/${subdir})
  set(RAILCOLL_MPI_LAYERS ${RAILCOLL_MPI_LAYERS} ${abi} PARENT_SCOPE)
endfunction()
railcoll_mpi_layer(openmpi ompi-c "")
railcoll_mpi_layer(mpich mpich "mpich")
