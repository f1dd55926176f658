// The Python module railcoll._C: what railcoll/__init__.py registers and calls.
#include <torch/extension.h>

#include "backend.hpp"

namespace railcoll_torch {

c10::intrusive_ptr<c10d::Backend> create_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 double timeout_s, const std::string& group_id) {
  // Set-up waits on the network: let other Python threads run meanwhile.
  pybind11::gil_scoped_release no_gil;
  return c10::make_intrusive<BackendRailcoll>(store, rank, size, timeout_s, group_id);
}

}  // namespace railcoll_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace railcoll_torch;
  m.doc() = "railcoll's torch.distributed backend (CPU tensors)";
  m.def("create_backend", &create_backend, "the backend of one process group", pybind11::arg("store"),
        pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout_s"), pybind11::arg("group_id"));
  m.def("features", &features, "the optional C API collectives, datatypes and operators this build uses");
  m.def("library_version", &library_version);
  m.def(
      "capi_allreduce_us",
      [](const c10::intrusive_ptr<c10d::Backend>& backend, at::Tensor t, int iters, bool nonblocking) {
        auto* b = dynamic_cast<BackendRailcoll*>(backend.get());
        if (!b) fail("capi_allreduce_us takes a railcoll backend");
        pybind11::gil_scoped_release no_gil;
        return b->capi_allreduce_us(t, iters, nonblocking);
      },
      "mean microseconds of railcoll_allreduce (or railcoll_iallreduce + railcoll_wait) itself on this "
      "backend's communicator (every rank calls it)",
      pybind11::arg("backend"), pybind11::arg("tensor"), pybind11::arg("iters"), pybind11::arg("nonblocking") = false);
}
