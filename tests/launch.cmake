# How jobs are launched and measured (issue 32): no silent fallbacks, the pip
# wheel, Slurm on the emulated cluster and the PMIx / PMI-2 bootstrap.

# Commands that would measure something other than what was asked refuse.
add_test(NAME no_fallback COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_no_fallback.sh $<TARGET_FILE:railcoll_cli>)
# It holds the cluster lock (another job's cluster would be measured instead):
# ctest gives it its turn at the cluster rather than a slot to wait in.
set_tests_properties(no_fallback PROPERTIES TIMEOUT 1800 RESOURCE_LOCK railcoll_cluster)

# A railcoll C program as a launcher starts it: railcoll_comm_init and every collective, byte-checked.
add_executable(mp_launched mp_launched.c)
target_link_libraries(mp_launched PRIVATE railcoll)
set_target_properties(mp_launched PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)

# The same program under mpirun (PMIx) and Hydra (PMI-2) on this machine.
add_test(NAME launchers_local COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_launchers_local.sh $<TARGET_FILE:mp_launched>)
set_tests_properties(launchers_local PROPERTIES TIMEOUT 600)

# Slurm on the emulated cluster (root): srun --mpi=pmix|pmi2, sbatch, an MPI
# program with the layer preloaded, torchrun per node. Skipped without root.
set(slurm_mpi_prog "")
set(slurm_mpi_layer "")
if(TARGET mpi_collectives_openmpi)
  set(slurm_mpi_prog $<TARGET_FILE:mpi_collectives_openmpi>)
  set(slurm_mpi_layer ${CMAKE_BINARY_DIR}/lib/librailcoll_mpi.so)
endif()
add_test(NAME slurm_cluster
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_slurm.sh $<TARGET_FILE:railcoll_cli> $<TARGET_FILE:mp_launched>
                 "${slurm_mpi_prog}" "${slurm_mpi_layer}" "${RAILCOLL_PYTHON}" "${RAILCOLL_TORCH_PACKAGE}")
# Alone (16 ranks and Slurm's daemons on the emulated nodes: beside another
# test at load 26, Open MPI's TCP connects between its ranks failed once).
set_tests_properties(slurm_cluster PROPERTIES TIMEOUT 1800 RUN_SERIAL TRUE RESOURCE_LOCK railcoll_cluster
                                   SKIP_RETURN_CODE 77)

# The wheel: pip wheel ./python, installed into a new venv, a two-process torch job from it.
add_test(NAME wheel COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_wheel.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                            "${RAILCOLL_PYTHON}" ${CMAKE_BUILD_TYPE})
set_tests_properties(wheel PROPERTIES TIMEOUT 3600 SKIP_RETURN_CODE 77)

# In one process: the generated slurm.conf, which launcher exchange is taken and when not.
add_executable(launch_tests test_launch.cpp)
target_link_libraries(launch_tests PRIVATE railcoll_testbed railcoll_runtime GTest::gtest_main)
gtest_discover_tests(launch_tests DISCOVERY_TIMEOUT 60)
