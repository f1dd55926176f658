# railcoll's torch.distributed backend (python/, docs/torch.md): the package
# built into ${CMAKE_BINARY_DIR}/python against this tree's C API and the torch
# of RAILCOLL_PYTHON (python3 in PATH: the interpreter scripts/install-deps.sh
# installs torch for). Without torch the target is left out and the torch
# tests fail saying so (tests/torch/run_tests.sh); not in sanitizer builds,
# whose librailcoll a Python process cannot load without the runtime preloaded.
find_program(RAILCOLL_PYTHON NAMES python3 DOC "the Python whose torch the backend is built for")
set(RAILCOLL_TORCH_PACKAGE ${CMAKE_BINARY_DIR}/python)
set(RAILCOLL_TORCH_FOUND OFF)
if(RAILCOLL_PYTHON AND NOT RAILCOLL_SANITIZE)
  execute_process(COMMAND ${RAILCOLL_PYTHON} -c "import torch" RESULT_VARIABLE torch_status
                  OUTPUT_QUIET ERROR_QUIET)
  if(torch_status EQUAL 0)
    set(RAILCOLL_TORCH_FOUND ON)
  endif()
endif()
if(RAILCOLL_TORCH_FOUND)
  # setup.py rebuilds only what changed (the extension when its source, the
  # header or the probed C API parts did); it probes the C API every time.
  add_custom_target(railcoll_torch ALL
    COMMAND ${CMAKE_COMMAND} -E env RAILCOLL_BUILD_DIR=${CMAKE_BINARY_DIR}
            ${RAILCOLL_PYTHON} setup.py -q build --build-base ${CMAKE_BINARY_DIR}/python-tmp
            --build-lib ${RAILCOLL_TORCH_PACKAGE}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/python
    COMMENT "railcoll's torch backend (python/ -> build/python)"
    VERBATIM)
  add_dependencies(railcoll_torch railcoll)
else()
  message(STATUS "torch is not installed for ${RAILCOLL_PYTHON}: the torch backend is not built "
                 "(scripts/install-deps.sh installs torch; its tests fail until then)")
endif()
