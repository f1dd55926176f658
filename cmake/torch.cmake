# railcoll's torch.distributed backend (python/, docs/torch.md): the extension
# railcoll._C, built from every python/railcoll/csrc/*.cpp (add a file there,
# nothing else to edit) against this tree's librailcoll and the torch of
# RAILCOLL_PYTHON, with the package's Python files beside it:
#  * `make build`: into ${CMAKE_BINARY_DIR}/python (PYTHONPATH), linked to build/lib;
#  * a wheel (python/pyproject.toml, scikit-build-core sets SKBUILD): installed,
#    component `python`, with librailcoll into the wheel's railcoll/, where the
#    extension finds it by its rpath $ORIGIN (no LD_LIBRARY_PATH).
# torch is the one of the interpreter the package will run under, asked with
# pip's build isolation lifted (PYTHONPATH, PYTHONNOUSERSITE unset): a C++
# extension runs only with the torch it was compiled against, so a copy in an
# isolated build environment would be the wrong one. Without torch a wheel
# build stops saying so; `make build` leaves the target out and the torch tests
# fail saying so (tests/torch/run_tests.sh). Not in AddressSanitizer builds;
# in ThreadSanitizer ones (make sanitize's build-tsan) for the backend's
# threads, run by a Python with libtsan preloaded (tests/torch/run_tests.sh threads).
if(SKBUILD AND Python_EXECUTABLE)
  # The interpreter pip builds for (a build directory may serve several venvs).
  set(RAILCOLL_PYTHON ${Python_EXECUTABLE} CACHE FILEPATH "the Python whose torch the backend is built for" FORCE)
endif()
find_program(RAILCOLL_PYTHON NAMES python3 DOC "the Python whose torch the backend is built for")
set(RAILCOLL_TORCH_PACKAGE ${CMAKE_BINARY_DIR}/python)
set(RAILCOLL_TORCH_FOUND OFF)
if(RAILCOLL_PYTHON AND (NOT RAILCOLL_SANITIZE OR RAILCOLL_SANITIZE STREQUAL "thread"))
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE
                          ${RAILCOLL_PYTHON} ${CMAKE_SOURCE_DIR}/cmake/torch_paths.py
                  RESULT_VARIABLE torch_status OUTPUT_VARIABLE torch_paths ERROR_VARIABLE torch_error
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(torch_status EQUAL 0)
    set(RAILCOLL_TORCH_FOUND ON)
    file(WRITE ${CMAKE_BINARY_DIR}/torch_paths.cmake "${torch_paths}\n")
    include(${CMAKE_BINARY_DIR}/torch_paths.cmake)
  endif()
endif()

if(NOT RAILCOLL_TORCH_FOUND)
  if(SKBUILD)
    message(FATAL_ERROR "railcoll's wheel holds its torch backend, built against the torch it will run with, "
                        "and ${RAILCOLL_PYTHON} has none (${torch_error}): install torch first")
  endif()
  message(STATUS "torch is not installed for ${RAILCOLL_PYTHON}: the torch backend is not built "
                 "(scripts/install-deps.sh installs torch; its tests fail until then)")
  return()
endif()
message(STATUS "railcoll's torch backend: torch ${RAILCOLL_TORCH_VERSION} of ${RAILCOLL_PYTHON}")

# The C API's optional parts, each probed by compiling its declaration as the
# backend uses it (capi_features.h; railcoll.features() lists them).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR}/include)
set(RAILCOLL_CAPI_FEATURES "// Written by cmake/torch.cmake: the optional C API parts this railcoll has.\n#pragma once\n")
function(railcoll_capi_probe name body)
  check_cxx_source_compiles("#include <railcoll/railcoll.h>\nint main() { ${body} return 0; }" RAILCOLL_PROBE_${name})
  set(have 0)
  if(RAILCOLL_PROBE_${name})
    set(have 1)
  endif()
  set(RAILCOLL_CAPI_FEATURES "${RAILCOLL_CAPI_FEATURES}#define RAILCOLL_HAS_${name} ${have}\n" PARENT_SCOPE)
endfunction()
railcoll_capi_probe(PROD "railcoll_op_t o = RAILCOLL_PROD; (void)o;")
railcoll_capi_probe(BITWISE "railcoll_op_t a = RAILCOLL_BAND, b = RAILCOLL_BOR, c = RAILCOLL_BXOR; (void)a; (void)b; (void)c;")
railcoll_capi_probe(INT8 "railcoll_datatype_t t = RAILCOLL_INT8; (void)t;")
railcoll_capi_probe(UINT8 "railcoll_datatype_t t = RAILCOLL_UINT8; (void)t;")
railcoll_capi_probe(INT16 "railcoll_datatype_t t = RAILCOLL_INT16; (void)t;")
railcoll_capi_probe(FLOAT16 "railcoll_datatype_t t = RAILCOLL_FLOAT16; (void)t;")
railcoll_capi_probe(BFLOAT16 "railcoll_datatype_t t = RAILCOLL_BFLOAT16; (void)t;")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/python-generated/capi_features.h CONTENT "${RAILCOLL_CAPI_FEATURES}")
# What the package checks at import: the torch it was built against.
file(CONFIGURE OUTPUT ${RAILCOLL_TORCH_PACKAGE}/railcoll/_build.py
     CONTENT "# Written by cmake/torch.cmake.\nTORCH_VERSION = \"${RAILCOLL_TORCH_VERSION}\"\n")

# The extension, compiled as torch's CppExtension compiles one.
file(GLOB RAILCOLL_TORCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/railcoll/csrc/*.cpp)
add_library(railcoll_torch MODULE ${RAILCOLL_TORCH_SOURCES})
set_target_properties(railcoll_torch PROPERTIES
  PREFIX "" OUTPUT_NAME _C SUFFIX ${RAILCOLL_TORCH_EXT_SUFFIX}
  LIBRARY_OUTPUT_DIRECTORY ${RAILCOLL_TORCH_PACKAGE}/railcoll
  CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON
  INSTALL_RPATH "$ORIGIN")
target_compile_definitions(railcoll_torch PRIVATE TORCH_API_INCLUDE_EXTENSION_H TORCH_EXTENSION_NAME=_C
                                                  _GLIBCXX_USE_CXX11_ABI=${RAILCOLL_TORCH_CXX11_ABI})
target_include_directories(railcoll_torch SYSTEM PRIVATE ${RAILCOLL_TORCH_INCLUDES} ${RAILCOLL_TORCH_PYTHON_INCLUDE})
target_include_directories(railcoll_torch PRIVATE ${CMAKE_BINARY_DIR}/python-generated)
# libtorch_python and the rest are loaded by `import torch` before railcoll._C.
target_link_libraries(railcoll_torch PRIVATE railcoll ${RAILCOLL_TORCH_LIBDIR}/libc10.so ${RAILCOLL_TORCH_LIBDIR}/libtorch.so
                                             ${RAILCOLL_TORCH_LIBDIR}/libtorch_cpu.so ${RAILCOLL_TORCH_LIBDIR}/libtorch_python.so)

# The package's Python files beside it (make build; a wheel takes them from python/).
file(GLOB_RECURSE RAILCOLL_TORCH_PY CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/railcoll/*.py)
set(py_copies)
foreach(f ${RAILCOLL_TORCH_PY})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/python ${f})
  add_custom_command(OUTPUT ${RAILCOLL_TORCH_PACKAGE}/${rel}
                     COMMAND ${CMAKE_COMMAND} -E copy_if_different ${f} ${RAILCOLL_TORCH_PACKAGE}/${rel}
                     DEPENDS ${f} VERBATIM)
  list(APPEND py_copies ${RAILCOLL_TORCH_PACKAGE}/${rel})
endforeach()
add_custom_target(railcoll_torch_py ALL DEPENDS ${py_copies})
add_dependencies(railcoll_torch railcoll_torch_py)

# The wheel: the extension, its build record and librailcoll under its SONAME
# (one file: a wheel holds no symbolic links).
install(TARGETS railcoll_torch LIBRARY DESTINATION railcoll COMPONENT python EXCLUDE_FROM_ALL)
install(FILES ${RAILCOLL_TORCH_PACKAGE}/railcoll/_build.py DESTINATION railcoll COMPONENT python EXCLUDE_FROM_ALL)
install(FILES $<TARGET_FILE:railcoll> DESTINATION railcoll RENAME librailcoll.so.${PROJECT_VERSION_MAJOR}
        COMPONENT python EXCLUDE_FROM_ALL)
