# The launchers' exchanges a communicator can be set up through
# (src/runtime/bootstrap/launcher_exchange.hpp): PMIx (Debian's libpmix-dev,
# found by pkg-config) and PMI-2 (Slurm's slurm/pmi2.h, Debian's
# libpmi2-0-dev). Only their headers are needed to build: the libraries are
# loaded (dlopen) when a launcher offering them started the process, so
# librailcoll needs neither where they are not used. A build without a header
# still works, and says here which way is missing; a process started by that
# launcher is then told so (no quiet fall back).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PMIX QUIET pmix)
endif()
if(PMIX_FOUND)
  target_include_directories(railcoll_runtime PRIVATE ${PMIX_INCLUDE_DIRS})
  target_compile_definitions(railcoll_runtime PRIVATE RAILCOLL_HAVE_PMIX=1)
  message(STATUS "railcoll: PMIx bootstrap on (pmix ${PMIX_VERSION}, loaded when a PMIx server starts a process)")
else()
  message(STATUS "railcoll: PMIx not found by pkg-config: built without the PMIx bootstrap "
                 "(install libpmix-dev; scripts/install-deps.sh)")
endif()
find_path(RAILCOLL_PMI2_INCLUDE slurm/pmi2.h)
if(RAILCOLL_PMI2_INCLUDE)
  target_include_directories(railcoll_runtime PRIVATE ${RAILCOLL_PMI2_INCLUDE})
  target_compile_definitions(railcoll_runtime PRIVATE RAILCOLL_HAVE_PMI2=1)
  message(STATUS "railcoll: PMI-2 bootstrap on (slurm/pmi2.h; libpmi2 loaded when srun --mpi=pmi2 starts a process)")
else()
  message(STATUS "railcoll: slurm/pmi2.h not found: built without the PMI-2 bootstrap "
                 "(install libpmi2-0-dev; scripts/install-deps.sh)")
endif()
target_link_libraries(railcoll_runtime PUBLIC ${CMAKE_DL_LIBS})
