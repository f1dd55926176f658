# The test bed: the emulated cluster (network namespaces), the launchers, the
# one process-spawn helper and the traffic generator (src/testbed/, every
# source file of the directory); its traffic generator runs railcoll itself.
railcoll_sources(TESTBED_SOURCES src/testbed)
add_library(railcoll_testbed STATIC ${TESTBED_SOURCES})
target_include_directories(railcoll_testbed PUBLIC src)
target_link_libraries(railcoll_testbed PUBLIC railcoll_capi_static)

# What the rails give a plain program: raw TCP all-to-all between the nodes,
# no railcoll inside (scripts/tcp-alltoall.sh; docs/runtime.md, "Rails kept full").
add_executable(railcoll-tcp-alltoall tools/probes/tcp_alltoall.c)
set_target_properties(railcoll-tcp-alltoall PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)

# The Open MPI baseline: an OSU-style benchmark of MPI's collectives, run on the emulated cluster by
# `railcoll cluster mpirun`. Optional: without an MPI library the rest of
# railcoll builds as usual.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  # Over the bench library's core (src/bench/peer.hpp): the same buffers,
  # statistics and records as railcoll bench's workers.
  add_executable(railcoll-mpi-bench tools/mpi_bench/mpi_bench.cpp)
  target_link_libraries(railcoll-mpi-bench PRIVATE MPI::MPI_C railcoll_bench_core)
  target_compile_definitions(railcoll-mpi-bench PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  # The MPI layer's own cost: MPI calls through librailcoll_mpi.so against the
  # C API in the same program, alternating (docs/mpi.md).
  add_executable(railcoll-mpi-layer-cost tools/mpi_bench/mpi_layer_cost.c)
  target_link_libraries(railcoll-mpi-layer-cost PRIVATE MPI::MPI_C railcoll)
  set_target_properties(railcoll-mpi-layer-cost PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
  # What a non-contiguous layout costs, plainly and through the layer (docs/mpi.md).
  add_executable(railcoll-mpi-layout-cost tools/mpi_bench/mpi_layout_cost.c)
  target_link_libraries(railcoll-mpi-layout-cost PRIVATE MPI::MPI_C)
  set_target_properties(railcoll-mpi-layout-cost PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
else()
  message(STATUS "railcoll: MPI (C) not found, skipping railcoll-mpi-bench (the Open MPI baseline)")
endif()
