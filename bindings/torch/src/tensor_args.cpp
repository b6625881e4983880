// SPDX-License-Identifier: BSD-3-Clause
//
// tensor_args.cpp: torch tensors and c10d reductions in weft's terms.
#include "tensor_args.hpp"

#include <c10/util/Exception.h>

namespace torch_weft {

void check_tensor(const at::Tensor &t, const char *what)
{
    TORCH_CHECK(t.defined(), "weft: ", what, " is undefined");
    TORCH_CHECK(t.layout() == c10::kStrided, "weft: ", what,
                " is sparse; weft moves dense tensors only");
    // CUDA tensors arrive with the GPU path of the binding; until then weft
    // refuses them here rather than reading device pointers on the host.
    TORCH_CHECK(t.device().is_cpu(), "weft: ", what, " is on ", t.device().str(),
                "; this torch_weft build moves CPU tensors only");
}

const at::Tensor &single_tensor(const std::vector<at::Tensor> &tensors, const char *what)
{
    TORCH_CHECK(tensors.size() == 1, "weft: ", what, " must be one tensor, not ",
                tensors.size(), " (one device per process)");
    check_tensor(tensors[0], what);
    return tensors[0];
}

void check_same_kind(const std::vector<at::Tensor> &list, const at::Tensor &t,
                     const char *what)
{
    for (const at::Tensor &x : list) {
        check_tensor(x, what);
        TORCH_CHECK(x.scalar_type() == t.scalar_type(), "weft: ", what, " holds ",
                    x.scalar_type(), " but the input is ", t.scalar_type());
    }
}

size_t byte_count(const at::Tensor &t)
{
    return static_cast<size_t>(t.numel()) * t.element_size();
}

namespace {

bool element_type(at::ScalarType st, weft_dtype_t *dt, int *lanes)
{
    *lanes = 1;
    switch (st) {
    case at::kChar: *dt = WEFT_INT8; return true;
    case at::kByte: *dt = WEFT_UINT8; return true;
    case at::kBool: *dt = WEFT_UINT8; return true;
    case at::kInt: *dt = WEFT_INT32; return true;
    case at::kLong: *dt = WEFT_INT64; return true;
    case at::kHalf: *dt = WEFT_FLOAT16; return true;
    case at::kBFloat16: *dt = WEFT_BFLOAT16; return true;
    case at::kFloat: *dt = WEFT_FLOAT32; return true;
    case at::kDouble: *dt = WEFT_FLOAT64; return true;
    case at::kComplexFloat: *dt = WEFT_FLOAT32; *lanes = 2; return true;
    case at::kComplexDouble: *dt = WEFT_FLOAT64; *lanes = 2; return true;
    default: return false;
    }
}

const char *op_name(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "an unknown operator";
    }
}

// PREMUL_SUM's factor, a double or one scalar tensor per input tensor.
at::Tensor premul_factor(const c10d::ReduceOp &op, at::ScalarType st, const char *what)
{
    auto *supp = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(op.supplement_.get());

    TORCH_CHECK(supp != nullptr, "weft: ", what, ": PREMUL_SUM carries no factor");
    if (supp->tensor_factors.empty())
        return at::scalar_tensor(supp->double_factor, at::TensorOptions().dtype(st));
    TORCH_CHECK(supp->tensor_factors.size() == 1, "weft: ", what,
                ": PREMUL_SUM needs one factor, not ", supp->tensor_factors.size());
    const at::Tensor &f = supp->tensor_factors[0];
    TORCH_CHECK(f.numel() == 1, "weft: ", what, ": PREMUL_SUM's factor has ", f.numel(),
                " elements, not 1");
    return f.to(at::kCPU, st).reshape({});
}

} // namespace

Reduction::Reduction(const c10d::ReduceOp &rop, const at::Tensor &t, const char *what)
{
    const at::ScalarType st = t.scalar_type();
    const c10d::ReduceOp::RedOpType op = rop;
    const bool is_bool = st == at::kBool;
    const bool is_float = at::isFloatingType(st) || at::isComplexType(st);

    TORCH_CHECK(element_type(st, &dtype_, &lanes_), "weft: ", what, ": weft cannot reduce ",
                st, " tensors (it reduces bool, int8, uint8, int32, int64, float16, ",
                "bfloat16, float32, float64 and complex)");
    TORCH_CHECK(lanes_ == 1 || op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::AVG ||
                    op == c10d::ReduceOp::PREMUL_SUM,
                "weft: ", what, ": ", op_name(op), " is not defined on complex tensors");
    switch (op) {
    case c10d::ReduceOp::SUM:
        op_ = is_bool ? WEFT_MAX : WEFT_SUM; // torch's bool sum is a logical or
        break;
    case c10d::ReduceOp::PRODUCT:
        op_ = is_bool ? WEFT_MIN : WEFT_PROD; // and its product a logical and
        break;
    case c10d::ReduceOp::MIN: op_ = WEFT_MIN; break;
    case c10d::ReduceOp::MAX: op_ = WEFT_MAX; break;
    case c10d::ReduceOp::AVG:
        TORCH_CHECK(!is_bool, "weft: ", what, ": AVG is not defined on bool tensors");
        op_ = WEFT_AVG;
        break;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
        TORCH_CHECK(!is_float, "weft: ", what, ": ", op_name(op),
                    " is defined on integer and bool tensors only, not ", st);
        op_ = op == c10d::ReduceOp::BAND ? WEFT_BAND
            : op == c10d::ReduceOp::BOR  ? WEFT_BOR
                                         : WEFT_BXOR;
        break;
    case c10d::ReduceOp::PREMUL_SUM: {
        TORCH_CHECK(!is_bool, "weft: ", what, ": PREMUL_SUM is not defined on bool tensors");
        // A complex tensor travels as reals; a real factor scales both parts.
        const at::ScalarType real = lanes_ == 2 ? c10::toRealValueType(st) : st;
        at::Tensor factor = premul_factor(rop, real, what);
        weft_result_t rc = weft_op_create_premul_sum(factor.data_ptr(), dtype_, &op_);
        TORCH_CHECK(rc == WEFT_SUCCESS, "weft: ", what, ": PREMUL_SUM: ", weft_strerror(rc),
                    ": ", weft_last_error());
        created_ = true;
        break;
    }
    default:
        TORCH_CHECK(false, "weft: ", what, ": unknown reduction operator ",
                    static_cast<int>(op));
    }
}

Reduction::~Reduction()
{
    if (created_)
        weft_op_free(op_);
}

size_t Reduction::count(const at::Tensor &t) const
{
    return static_cast<size_t>(t.numel()) * lanes_;
}

} // namespace torch_weft
