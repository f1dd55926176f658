# Owned by the emulated-cluster work: src/cluster/, tools/railcoll/cmd_cluster.cpp,
# tools/mpi_bench/, tests/test_cluster.sh.
add_library(railcoll_cluster STATIC src/cluster/cluster.cpp)
target_include_directories(railcoll_cluster PUBLIC src)
target_link_libraries(railcoll_cluster PUBLIC railcoll_launch)

# The Open MPI baseline: an OSU-style MPI_Allgather benchmark, run on the
# emulated cluster by `railcoll cluster mpirun`. Optional: without an MPI
# library the rest of railcoll builds as usual.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(railcoll-mpi-bench tools/mpi_bench/mpi_allgather_bench.c)
  target_link_libraries(railcoll-mpi-bench PRIVATE MPI::MPI_C m)
  set_target_properties(railcoll-mpi-bench PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
else()
  message(STATUS "railcoll: MPI (C) not found, skipping railcoll-mpi-bench (the Open MPI baseline)")
endif()
