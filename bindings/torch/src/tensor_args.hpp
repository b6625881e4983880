// SPDX-License-Identifier: BSD-3-Clause
//
// tensor_args.hpp: what weft is told about a torch tensor and a c10d
// reduction: the checks torch's own backends make (dense, on a device weft
// serves, one tensor per call), the element type, and the operator.
#pragma once

#include <weft.h>

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace torch_weft {

// Fails with a RuntimeError naming what (e.g. "all_reduce's tensor") for a
// sparse tensor or one weft cannot reach.
void check_tensor(const at::Tensor &t, const char *what);

// The one tensor of a c10d tensor list; torch 1.13 still passes lists, one
// entry per device, and weft drives one device per process.
const at::Tensor &single_tensor(const std::vector<at::Tensor> &tensors, const char *what);

// Every tensor of list has t's type and layout, and torch's checks above.
void check_same_kind(const std::vector<at::Tensor> &list, const at::Tensor &t,
                     const char *what);

// Bytes of t's elements.
size_t byte_count(const at::Tensor &t);

// A reduction as weft runs it: the element type and the operator, which
// for PREMUL_SUM weft creates and this object frees.
class Reduction {
  public:
    Reduction(const c10d::ReduceOp &op, const at::Tensor &t, const char *what);
    ~Reduction();
    Reduction(const Reduction &) = delete;
    Reduction &operator=(const Reduction &) = delete;

    weft_dtype_t dtype() const { return dtype_; }
    weft_op_t op() const { return op_; }
    size_t count(const at::Tensor &t) const;

  private:
    weft_dtype_t dtype_;
    weft_op_t op_;
    bool created_ = false;
    int lanes_ = 1; // complex numbers travel as pairs of reals
};

} // namespace torch_weft
