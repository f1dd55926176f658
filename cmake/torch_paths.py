"""Writes, as CMake set() commands, what cmake/torch.cmake needs to build the
extension railcoll._C against this interpreter's torch: its version, its C++
ABI flag, its include and library directories, Python's include directory and
the extension suffix. Without torch: exits 1 saying why."""
import sys
import sysconfig

try:
    import torch
    from torch.utils import cpp_extension
except ImportError as e:
    sys.exit("torch is not importable by %s: %s" % (sys.executable, e))

for name, value in [
    ("RAILCOLL_TORCH_VERSION", torch.__version__),
    ("RAILCOLL_TORCH_CXX11_ABI", int(torch._C._GLIBCXX_USE_CXX11_ABI)),
    ("RAILCOLL_TORCH_INCLUDES", ";".join(cpp_extension.include_paths())),
    ("RAILCOLL_TORCH_LIBDIR", cpp_extension.library_paths()[0]),
    ("RAILCOLL_TORCH_PYTHON_INCLUDE", sysconfig.get_paths()["include"]),
    ("RAILCOLL_TORCH_EXT_SUFFIX", sysconfig.get_config_var("EXT_SUFFIX")),
]:
    print('set(%s "%s")' % (name, value))
