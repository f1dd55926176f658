# Builds railcoll's torch.distributed backend (docs/torch.md) against the
# installed torch and railcoll's public C API: `pip install ./python`.
#
# Where railcoll is: RAILCOLL_BUILD_DIR (a CMake build tree of this repository:
# <repo>/include, <build>/include, <build>/lib; `make build` passes it), else
# RAILCOLL_PREFIX (an install: <prefix>/include, <prefix>/lib), else pkg-config.
import glob
import os
import re
import subprocess
import tempfile

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))


def railcoll_paths():
    build = os.environ.get("RAILCOLL_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
        return [os.path.join(HERE, "..", "include"), os.path.join(build, "include")], os.path.join(build, "lib")
    prefix = os.environ.get("RAILCOLL_PREFIX")
    if prefix:
        return [os.path.join(prefix, "include")], os.path.join(prefix, "lib")
    try:
        cflags = subprocess.check_output(["pkg-config", "--cflags-only-I", "railcoll"], text=True).split()
        libdir = subprocess.check_output(["pkg-config", "--variable=libdir", "railcoll"], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit("railcoll: cannot find railcoll's C API: set RAILCOLL_BUILD_DIR (a build tree), "
                         "RAILCOLL_PREFIX (an install) or install it where pkg-config finds it")
    return [f[2:] for f in cflags], libdir


# The C API's optional parts, each probed by compiling its declaration as this
# backend calls it: a collective, datatype or operator the linked library does
# not have (or declares otherwise) stays off, and the backend names it as
# missing at the call instead of failing to build.
PROBES = {
    "PROD": "railcoll_op_t o = RAILCOLL_PROD;",
    "BITWISE": "railcoll_op_t a = RAILCOLL_BAND, b = RAILCOLL_BOR, c = RAILCOLL_BXOR;",
    "INT8": "railcoll_datatype_t t = RAILCOLL_INT8;",
    "UINT8": "railcoll_datatype_t t = RAILCOLL_UINT8;",
    "INT16": "railcoll_datatype_t t = RAILCOLL_INT16;",
    "FLOAT16": "railcoll_datatype_t t = RAILCOLL_FLOAT16;",
    "BFLOAT16": "railcoll_datatype_t t = RAILCOLL_BFLOAT16;",
}


def probe(includes, body):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.cpp")
        with open(src, "w") as f:
            f.write("#include <railcoll/railcoll.h>\nvoid probe() { %s }\n" % body)
        cmd = [os.environ.get("CXX", "c++"), "-fsyntax-only", "-Wno-unused-variable"]
        cmd += ["-I" + i for i in includes] + [src]
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def write_features(includes, out_dir):
    lines = ["// Written by setup.py: the optional C API parts the linked railcoll has.", "#pragma once"]
    found = []
    for name, body in PROBES.items():
        have = probe(includes, body)
        lines.append("#define RAILCOLL_HAS_%s %d" % (name, int(have)))
        if have:
            found.append(name.lower())
    os.makedirs(out_dir, exist_ok=True)
    text = "\n".join(lines) + "\n"
    path = os.path.join(out_dir, "capi_features.h")
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    print("railcoll: optional C API parts found: %s" % (", ".join(found) or "none"))


def project_version():
    """The version CMakeLists.txt's project() declares: written once, for both."""
    with open(os.path.join(HERE, "..", "CMakeLists.txt")) as f:
        m = re.search(r"project\(railcoll VERSION ([0-9.]+)", f.read())
    if not m:
        raise SystemExit("railcoll: no 'project(railcoll VERSION x.y.z' in CMakeLists.txt")
    return m.group(1)


includes, libdir = railcoll_paths()
generated = os.path.join(os.path.abspath(os.environ.get("RAILCOLL_BUILD_DIR") or os.path.join(HERE, "build")),
                         "python-generated")
write_features(includes, generated)

setup(
    name="railcoll",
    version=project_version(),
    description="railcoll's torch.distributed backend for CPU tensors, striped over every rail",
    packages=["railcoll", "railcoll.examples"],
    ext_modules=[
        CppExtension(
            "railcoll._C",
            sorted(glob.glob("railcoll/csrc/*.cpp", root_dir=HERE)),
            # Rebuilt when the C API, the backend's headers or what the probes found changes.
            depends=[os.path.join(generated, "capi_features.h")]
            + sorted(glob.glob(os.path.join(HERE, "railcoll", "csrc", "*.hpp")))
            + [os.path.join(i, "railcoll", "railcoll.h") for i in includes if os.path.exists(os.path.join(i, "railcoll", "railcoll.h"))],
            include_dirs=includes + [generated],
            library_dirs=[libdir],
            libraries=["railcoll"],
            runtime_library_dirs=[libdir],
            extra_compile_args=["-O2"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
