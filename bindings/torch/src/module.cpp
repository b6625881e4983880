// SPDX-License-Identifier: BSD-3-Clause
//
// module.cpp: the Python module torch_weft._C: the process group class and
// the creator that torch.distributed calls for backend "weft".
#include <torch/extension.h>

#include <pybind11/chrono.h>

#include "process_group.hpp"

namespace py = pybind11;

namespace {

c10::intrusive_ptr<c10d::ProcessGroup> create(const c10::intrusive_ptr<c10d::Store> &store,
                                              int rank, int size,
                                              const std::chrono::duration<float> &timeout)
{
    return c10::make_intrusive<torch_weft::ProcessGroupWeft>(
        store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

std::tuple<int, int, int> version()
{
    int major, minor, patch;

    weft_get_version(&major, &minor, &patch);
    return std::make_tuple(major, minor, patch);
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    // torch's pybind types (Store, ProcessGroup) must be registered first.
    py::module::import("torch.distributed");
    m.doc() = "weft's torch.distributed backend (use: import torch_weft)";
    py::class_<torch_weft::ProcessGroupWeft, c10d::ProcessGroup,
               c10::intrusive_ptr<torch_weft::ProcessGroupWeft>>(m, "ProcessGroupWeft");
    // Every rank of the group blocks here until all have joined: let other
    // Python threads run meanwhile.
    m.def("create", &create, py::arg("store"), py::arg("rank"), py::arg("size"),
          py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
          "Creates weft's process group; torch.distributed calls it for backend \"weft\".");
    m.def("weft_version", &version, "The version of the weft library in use.");
}
