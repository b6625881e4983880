// SPDX-License-Identifier: BSD-3-Clause
//
// collectives.cpp: torch's collectives as weft calls.
//
// Tensors that are not contiguous run through a contiguous copy, written
// back when the collective completes, as torch's own backends do; lists of
// tensors (all_gather's outputs, scatter's inputs) run through one flat
// buffer. Data that is only moved travels as bytes, so every torch dtype
// moves; reductions travel as the weft type that matches (tensor_args).
#include <c10/util/Exception.h>

#include "process_group.hpp"
#include "tensor_args.hpp"

namespace torch_weft {

namespace {

// Writes c back into t when c is t's contiguous copy.
void copy_back(const at::Tensor &t, const at::Tensor &c)
{
    if (!c.is_same(t))
        t.copy_(c);
}

// One flat buffer holding list's tensors back to back.
at::Tensor flatten(const std::vector<at::Tensor> &list, const at::Tensor &like)
{
    std::vector<at::Tensor> flat;

    flat.reserve(list.size());
    for (const at::Tensor &t : list)
        flat.push_back(t.reshape({ -1 }));
    return flat.empty() ? at::empty({ 0 }, like.options()) : at::cat(flat);
}

// Copies flat, as laid out by flatten(), into list's tensors.
void unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &list)
{
    int64_t offset = 0;

    for (const at::Tensor &t : list) {
        t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
    }
}

int64_t total_numel(const std::vector<at::Tensor> &list)
{
    int64_t n = 0;

    for (const at::Tensor &t : list)
        n += t.numel();
    return n;
}

std::vector<size_t> byte_counts(const std::vector<at::Tensor> &list)
{
    std::vector<size_t> counts;

    for (const at::Tensor &t : list)
        counts.push_back(byte_count(t));
    return counts;
}

std::vector<size_t> offsets(const std::vector<size_t> &counts)
{
    std::vector<size_t> displs(counts.size(), 0);

    for (size_t i = 1; i < counts.size(); i++)
        displs[i] = displs[i - 1] + counts[i - 1];
    return displs;
}

bool all_equal(const std::vector<size_t> &counts)
{
    for (size_t c : counts)
        if (c != counts[0])
            return false;
    return true;
}

// Whether list's tensors lie back to back in one buffer, as the pieces of
// torch.split or torch.chunk of a flat tensor do: weft then writes into
// them directly.
bool back_to_back(const std::vector<at::Tensor> &list)
{
    const char *next = nullptr;

    for (const at::Tensor &t : list) {
        if (!t.is_contiguous() || !t.storage().is_alias_of(list[0].storage()))
            return false;
        if (next != nullptr && static_cast<const char *>(t.data_ptr()) != next)
            return false;
        next = static_cast<const char *>(t.data_ptr()) + byte_count(t);
    }
    return true;
}

const std::vector<at::Tensor> &single_list(const std::vector<std::vector<at::Tensor>> &lists,
                                           const char *what)
{
    TORCH_CHECK(lists.size() == 1, "weft: ", what, " must be one list of tensors, not ",
                lists.size(), " (one device per process)");
    return lists[0];
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor> &tensors,
                                                           const c10d::BroadcastOptions &opts)
{
    const at::Tensor &t = single_tensor(tensors, "broadcast's tensor");
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor c = t.contiguous();

    check_root(root, "broadcast");
    return collective(
        c10d::OpType::BROADCAST, "broadcast", { t },
        [c, root](weft_comm_t comm) {
            return weft_broadcast(c.data_ptr(), byte_count(c), WEFT_UINT8, root, comm);
        },
        [t, c] { copy_back(t, c); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor> &tensors,
                                                           const c10d::AllreduceOptions &opts)
{
    const at::Tensor &t = single_tensor(tensors, "all_reduce's tensor");
    auto red = std::make_shared<Reduction>(opts.reduceOp, t, "all_reduce");
    at::Tensor c = t.contiguous();

    return collective(
        c10d::OpType::ALLREDUCE, "all_reduce", { t },
        [c, red](weft_comm_t comm) {
            return weft_allreduce(WEFT_IN_PLACE, c.data_ptr(), red->count(c), red->dtype(),
                                  red->op(), comm);
        },
        [t, c] { copy_back(t, c); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(
    std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts)
{
    std::vector<std::shared_ptr<Reduction>> reds;
    std::vector<at::Tensor> copies;

    TORCH_CHECK(!tensors.empty(), "weft: all_reduce_coalesced: no tensors");
    for (const at::Tensor &t : tensors) {
        check_tensor(t, "all_reduce_coalesced's tensor");
        reds.push_back(std::make_shared<Reduction>(opts.reduceOp, t, "all_reduce_coalesced"));
        copies.push_back(t.contiguous());
    }
    return collective(
        c10d::OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", tensors,
        [copies, reds](weft_comm_t comm) {
            for (size_t i = 0; i < copies.size(); i++) {
                weft_result_t rc = weft_allreduce(WEFT_IN_PLACE, copies[i].data_ptr(),
                                                  reds[i]->count(copies[i]), reds[i]->dtype(),
                                                  reds[i]->op(), comm);
                if (rc != WEFT_SUCCESS)
                    return rc;
            }
            return WEFT_SUCCESS;
        },
        [tensors, copies] {
            for (size_t i = 0; i < copies.size(); i++)
                copy_back(tensors[i], copies[i]);
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor> &tensors,
                                                        const c10d::ReduceOptions &opts)
{
    const at::Tensor &t = single_tensor(tensors, "reduce's tensor");
    const int root = static_cast<int>(opts.rootRank);
    auto red = std::make_shared<Reduction>(opts.reduceOp, t, "reduce");
    at::Tensor c = t.contiguous();
    const bool at_root = root == rank_;

    check_root(root, "reduce");
    // Only the root's tensor takes the result; the others keep their input.
    return collective(
        c10d::OpType::REDUCE, "reduce", { t },
        [c, red, root, at_root](weft_comm_t comm) {
            return weft_reduce(at_root ? WEFT_IN_PLACE : c.data_ptr(),
                               at_root ? c.data_ptr() : nullptr, red->count(c), red->dtype(),
                               red->op(), root, comm);
        },
        [t, c, at_root] {
            if (at_root)
                copy_back(t, c);
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &)
{
    const at::Tensor &in = single_tensor(inputs, "all_gather's input");
    const std::vector<at::Tensor> &outs = single_list(outputs, "all_gather's output");
    at::Tensor c = in.contiguous();

    TORCH_CHECK(static_cast<int>(outs.size()) == size_, "weft: all_gather: the output list has ",
                outs.size(), " tensors for a group of ", size_);
    check_same_kind(outs, in, "all_gather's output");
    TORCH_CHECK(outs[rank_].numel() == in.numel(), "weft: all_gather: output ", rank_, " has ",
                outs[rank_].numel(), " elements but this rank's input has ", in.numel());
    // Outputs of different sizes gather unevenly: their sizes tell every
    // rank what each other rank sends.
    auto counts = std::make_shared<std::vector<size_t>>(byte_counts(outs));
    auto displs = std::make_shared<std::vector<size_t>>(offsets(*counts));
    const bool direct = back_to_back(outs) && !c.storage().is_alias_of(outs[0].storage());
    at::Tensor flat = direct ? outs[0] : at::empty({ total_numel(outs) }, in.options());
    return collective(
        c10d::OpType::ALLGATHER, "all_gather", outs,
        [c, flat, counts, displs](weft_comm_t comm) {
            if (all_equal(*counts))
                return weft_allgather(c.data_ptr(), flat.data_ptr(), byte_count(c), WEFT_UINT8,
                                      comm);
            return weft_allgatherv(c.data_ptr(), byte_count(c), flat.data_ptr(), counts->data(),
                                   displs->data(), WEFT_UINT8, comm);
        },
        [flat, outs, direct] {
            if (!direct)
                unflatten(flat, outs);
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(
    at::Tensor &output, at::Tensor &input, const c10d::AllgatherOptions &)
{
    check_tensor(input, "all_gather_into_tensor's input");
    check_same_kind({ output }, input, "all_gather_into_tensor's output");
    TORCH_CHECK(output.numel() == input.numel() * size_, "weft: all_gather_into_tensor: ",
                "the output has ", output.numel(), " elements, not ", size_, " x ",
                input.numel());
    at::Tensor ci = input.contiguous(), co = output.contiguous();
    at::Tensor out = output;
    return collective(
        c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", { output },
        [ci, co](weft_comm_t comm) {
            return weft_allgather(ci.data_ptr(), co.data_ptr(), byte_count(ci), WEFT_UINT8,
                                  comm);
        },
        [out, co] { copy_back(out, co); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather_coalesced(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &)
{
    std::vector<at::Tensor> ins, flats, all_outs;

    TORCH_CHECK(outputs.size() == inputs.size(), "weft: all_gather_coalesced: ",
                outputs.size(), " output lists for ", inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); i++) {
        check_tensor(inputs[i], "all_gather_coalesced's input");
        TORCH_CHECK(static_cast<int>(outputs[i].size()) == size_, "weft: all_gather_coalesced: ",
                    "output list ", i, " has ", outputs[i].size(), " tensors for a group of ",
                    size_);
        check_same_kind(outputs[i], inputs[i], "all_gather_coalesced's output");
        for (const at::Tensor &o : outputs[i]) {
            TORCH_CHECK(o.numel() == inputs[i].numel(), "weft: all_gather_coalesced: an output ",
                        "of list ", i, " has ", o.numel(), " elements, not ", inputs[i].numel());
            all_outs.push_back(o);
        }
        ins.push_back(inputs[i].contiguous());
        flats.push_back(at::empty({ inputs[i].numel() * size_ }, inputs[i].options()));
    }
    auto lists = outputs;
    return collective(
        c10d::OpType::ALLGATHER_COALESCED, "all_gather_coalesced", all_outs,
        [ins, flats](weft_comm_t comm) {
            for (size_t i = 0; i < ins.size(); i++) {
                weft_result_t rc = weft_allgather(ins[i].data_ptr(), flats[i].data_ptr(),
                                                  byte_count(ins[i]), WEFT_UINT8, comm);
                if (rc != WEFT_SUCCESS)
                    return rc;
            }
            return WEFT_SUCCESS;
        },
        [flats, lists] {
            for (size_t i = 0; i < flats.size(); i++)
                unflatten(flats[i], lists[i]);
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::GatherOptions &opts)
{
    const at::Tensor &in = single_tensor(inputs, "gather's input");
    const int root = static_cast<int>(opts.rootRank);
    const bool at_root = root == rank_;
    std::vector<at::Tensor> outs;
    at::Tensor c = in.contiguous(), flat;

    check_root(root, "gather");
    if (at_root) {
        outs = single_list(outputs, "gather's output");
        TORCH_CHECK(static_cast<int>(outs.size()) == size_, "weft: gather: the output list has ",
                    outs.size(), " tensors for a group of ", size_);
        check_same_kind(outs, in, "gather's output");
        for (const at::Tensor &o : outs)
            TORCH_CHECK(o.numel() == in.numel(), "weft: gather: an output has ", o.numel(),
                        " elements but the input has ", in.numel());
        flat = at::empty({ in.numel() * size_ }, in.options());
    } else {
        TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                    "weft: gather: only the root (rank ", root, ") takes an output list");
    }
    return collective(
        c10d::OpType::GATHER, "gather", outs,
        [c, flat, root](weft_comm_t comm) {
            return weft_gather(c.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr,
                               byte_count(c), WEFT_UINT8, root, comm);
        },
        [flat, outs] {
            if (flat.defined())
                unflatten(flat, outs);
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ScatterOptions &opts)
{
    const at::Tensor &out = single_tensor(outputs, "scatter's output");
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor c = out.contiguous(), flat;

    check_root(root, "scatter");
    if (root == rank_) {
        const std::vector<at::Tensor> &ins = single_list(inputs, "scatter's input");
        TORCH_CHECK(static_cast<int>(ins.size()) == size_, "weft: scatter: the input list has ",
                    ins.size(), " tensors for a group of ", size_);
        check_same_kind(ins, out, "scatter's input");
        for (const at::Tensor &i : ins)
            TORCH_CHECK(i.numel() == out.numel(), "weft: scatter: an input has ", i.numel(),
                        " elements but the output has ", out.numel());
        flat = flatten(ins, out);
    } else {
        TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                    "weft: scatter: only the root (rank ", root, ") gives an input list");
    }
    return collective(
        c10d::OpType::SCATTER, "scatter", { out },
        [c, flat, root](weft_comm_t comm) {
            return weft_scatter(flat.defined() ? flat.data_ptr() : nullptr, c.data_ptr(),
                                byte_count(c), WEFT_UINT8, root, comm);
        },
        [out, c] { copy_back(out, c); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ReduceScatterOptions &opts)
{
    const at::Tensor &out = single_tensor(outputs, "reduce_scatter's output");
    const std::vector<at::Tensor> &ins = single_list(inputs, "reduce_scatter's input");
    auto red = std::make_shared<Reduction>(opts.reduceOp, out, "reduce_scatter");
    at::Tensor c = out.contiguous();

    TORCH_CHECK(static_cast<int>(ins.size()) == size_, "weft: reduce_scatter: the input list has ",
                ins.size(), " tensors for a group of ", size_);
    check_same_kind(ins, out, "reduce_scatter's input");
    TORCH_CHECK(ins[rank_].numel() == out.numel(), "weft: reduce_scatter: input ", rank_,
                " has ", ins[rank_].numel(), " elements but the output has ", out.numel());
    auto counts = std::make_shared<std::vector<size_t>>();
    for (const at::Tensor &i : ins)
        counts->push_back(red->count(i));
    at::Tensor flat = flatten(ins, out);
    return collective(
        c10d::OpType::REDUCE_SCATTER, "reduce_scatter", { out },
        [c, flat, red, counts](weft_comm_t comm) {
            if (all_equal(*counts))
                return weft_reduce_scatter(flat.data_ptr(), c.data_ptr(), (*counts)[0],
                                           red->dtype(), red->op(), comm);
            return weft_reduce_scatterv(flat.data_ptr(), c.data_ptr(), counts->data(),
                                        red->dtype(), red->op(), comm);
        },
        [out, c] { copy_back(out, c); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(
    at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts)
{
    check_tensor(output, "reduce_scatter_tensor's output");
    check_same_kind({ input }, output, "reduce_scatter_tensor's input");
    TORCH_CHECK(input.numel() == output.numel() * size_, "weft: reduce_scatter_tensor: ",
                "the input has ", input.numel(), " elements, not ", size_, " x ",
                output.numel());
    auto red = std::make_shared<Reduction>(opts.reduceOp, output, "reduce_scatter_tensor");
    at::Tensor ci = input.contiguous(), co = output.contiguous();
    at::Tensor out = output;
    return collective(
        c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", { output },
        [ci, co, red](weft_comm_t comm) {
            return weft_reduce_scatter(ci.data_ptr(), co.data_ptr(), red->count(co),
                                       red->dtype(), red->op(), comm);
        },
        [out, co] { copy_back(out, co); });
}

namespace {

// all_to_all_single's splits, in rows of dim 0, as byte counts; no splits
// mean equal blocks.
std::vector<size_t> split_bytes(const at::Tensor &t, const std::vector<int64_t> &splits,
                                int size, const char *what)
{
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const size_t row_bytes = rows == 0 ? 0 : byte_count(t) / rows;
    std::vector<size_t> counts;

    if (splits.empty()) {
        TORCH_CHECK(rows % size == 0, "weft: all_to_all_single: the ", what, "'s ", rows,
                    " rows do not split evenly among ", size, " ranks; give split sizes");
        counts.assign(size, row_bytes * (rows / size));
        return counts;
    }
    TORCH_CHECK(static_cast<int>(splits.size()) == size, "weft: all_to_all_single: ",
                splits.size(), " ", what, " split sizes for a group of ", size);
    int64_t total = 0;
    for (int64_t s : splits) {
        TORCH_CHECK(s >= 0, "weft: all_to_all_single: a negative ", what, " split size ", s);
        total += s;
        counts.push_back(row_bytes * static_cast<size_t>(s));
    }
    TORCH_CHECK(total == rows, "weft: all_to_all_single: the ", what, " split sizes add up to ",
                total, " rows, but the ", what, " has ", rows);
    return counts;
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(
    at::Tensor &output, at::Tensor &input, std::vector<int64_t> &output_splits,
    std::vector<int64_t> &input_splits, const c10d::AllToAllOptions &)
{
    check_tensor(input, "all_to_all_single's input");
    check_same_kind({ output }, input, "all_to_all_single's output");
    auto scounts = std::make_shared<std::vector<size_t>>(
        split_bytes(input, input_splits, size_, "input"));
    auto rcounts = std::make_shared<std::vector<size_t>>(
        split_bytes(output, output_splits, size_, "output"));
    auto sdispls = std::make_shared<std::vector<size_t>>(offsets(*scounts));
    auto rdispls = std::make_shared<std::vector<size_t>>(offsets(*rcounts));
    at::Tensor ci = input.contiguous(), co = output.contiguous();
    at::Tensor out = output;
    const bool even = input_splits.empty() && output_splits.empty();

    return collective(
        c10d::OpType::ALLTOALL_BASE, "all_to_all_single", { output },
        [ci, co, scounts, rcounts, sdispls, rdispls, even](weft_comm_t comm) {
            if (even && (*scounts)[0] == (*rcounts)[0])
                return weft_alltoall(ci.data_ptr(), co.data_ptr(), (*scounts)[0], WEFT_UINT8,
                                     comm);
            return weft_alltoallv(ci.data_ptr(), scounts->data(), sdispls->data(),
                                  co.data_ptr(), rcounts->data(), rdispls->data(), WEFT_UINT8,
                                  comm);
        },
        [out, co] { copy_back(out, co); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor> &outputs,
                                                          std::vector<at::Tensor> &inputs,
                                                          const c10d::AllToAllOptions &)
{
    TORCH_CHECK(static_cast<int>(inputs.size()) == size_ &&
                    static_cast<int>(outputs.size()) == size_,
                "weft: all_to_all: ", inputs.size(), " inputs and ", outputs.size(),
                " outputs for a group of ", size_);
    check_tensor(inputs[0], "all_to_all's input");
    check_same_kind(inputs, inputs[0], "all_to_all's input");
    check_same_kind(outputs, inputs[0], "all_to_all's output");
    auto scounts = std::make_shared<std::vector<size_t>>(byte_counts(inputs));
    auto rcounts = std::make_shared<std::vector<size_t>>(byte_counts(outputs));
    auto sdispls = std::make_shared<std::vector<size_t>>(offsets(*scounts));
    auto rdispls = std::make_shared<std::vector<size_t>>(offsets(*rcounts));
    at::Tensor sflat = flatten(inputs, inputs[0]);
    at::Tensor rflat = at::empty({ total_numel(outputs) }, inputs[0].options());
    std::vector<at::Tensor> outs = outputs;

    return collective(
        c10d::OpType::ALLTOALL, "all_to_all", outputs,
        [sflat, rflat, scounts, rcounts, sdispls, rdispls](weft_comm_t comm) {
            return weft_alltoallv(sflat.data_ptr(), scounts->data(), sdispls->data(),
                                  rflat.data_ptr(), rcounts->data(), rdispls->data(), WEFT_UINT8,
                                  comm);
        },
        [rflat, outs] { unflatten(rflat, outs); });
}

} // namespace torch_weft
