# Intel oneCCL, a peer of railcoll bench (--peer oneccl): railcoll-oneccl-bench
# (tools/oneccl_bench/), built when scripts/install-deps.sh has installed PyPI's
# oneccl-cpu-devel into its prefix, and MPI (its side channel and launcher) is here.
if(DEFINED ENV{RAILCOLL_ONECCL_PREFIX})
  set(oneccl_default $ENV{RAILCOLL_ONECCL_PREFIX})
else()
  set(oneccl_default /opt/railcoll-oneccl)
endif()
set(RAILCOLL_ONECCL_PREFIX ${oneccl_default} CACHE PATH "where oneccl-cpu and oneccl-cpu-devel are installed")
find_path(ONECCL_INCLUDE oneapi/ccl.hpp PATHS ${RAILCOLL_ONECCL_PREFIX}/include NO_DEFAULT_PATH)
find_library(ONECCL_LIBRARY ccl PATHS ${RAILCOLL_ONECCL_PREFIX}/lib NO_DEFAULT_PATH)
find_library(ONECCL_INTLC intlc PATHS ${RAILCOLL_ONECCL_PREFIX}/lib NO_DEFAULT_PATH)  # intel-cmplr-lib-rt
if(MPI_C_FOUND AND ONECCL_INCLUDE AND ONECCL_LIBRARY AND ONECCL_INTLC)
  # The wheel's libccl.so.1 names libccl.so.2 among what it needs, a file the
  # CPU wheel does not ship: a link in the build tree resolves it to itself.
  set(oneccl_links ${CMAKE_BINARY_DIR}/lib/oneccl)
  file(MAKE_DIRECTORY ${oneccl_links})
  file(CREATE_LINK ${RAILCOLL_ONECCL_PREFIX}/lib/libccl.so.1 ${oneccl_links}/libccl.so.2 SYMBOLIC)
  add_executable(railcoll-oneccl-bench tools/oneccl_bench/oneccl_bench.cpp)
  target_include_directories(railcoll-oneccl-bench PRIVATE ${ONECCL_INCLUDE} ${CMAKE_SOURCE_DIR}/tools/mpi_bench)
  target_link_libraries(railcoll-oneccl-bench PRIVATE MPI::MPI_C railcoll_bench_core ${ONECCL_LIBRARY} ${ONECCL_INTLC})
  target_compile_definitions(railcoll-oneccl-bench PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  # An RPATH (not RUNPATH) also serves libccl's own dependencies: its libfabric
  # and the link above.
  target_link_options(railcoll-oneccl-bench PRIVATE -Wl,--disable-new-dtags)
  set_target_properties(railcoll-oneccl-bench PROPERTIES BUILD_RPATH "${RAILCOLL_ONECCL_PREFIX}/lib;${oneccl_links}")
else()
  message(STATUS "railcoll: oneCCL not found in ${RAILCOLL_ONECCL_PREFIX} (scripts/install-deps.sh installs it), "
                 "skipping railcoll-oneccl-bench")
endif()
