// SPDX-License-Identifier: BSD-3-Clause
//
// process_group.cpp: ProcessGroupWeft's start and end, and what is not a
// collective: send, recv, and the way collectives are queued.
#include "process_group.hpp"

#include <Python.h>

#include <algorithm>
#include <climits>

#include <c10/util/Exception.h>

#include "kvs_store.hpp"
#include "tensor_args.hpp"

namespace torch_weft {

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                   int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), store_(store), p2p_(std::make_shared<P2PChannel>())
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    const weft_kvs_t kvs = kvs_over_store(store_.get());
    weft_result_t rc;

    attr.rank = rank;
    attr.size = size;
    attr.timeout_ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT_MAX));
    attr.name = "torch";
    attr.kvs = &kvs;
    rc = weft_init(&attr, &comm_);
    if (rc != WEFT_SUCCESS)
        throw_weft_error("init_process_group (weft_init)", rc);
    rc = weft_comm_dup(comm_, &p2p_->comm);
    if (rc != WEFT_SUCCESS) {
        std::string why = weft_last_error();
        weft_comm_destroy(comm_);
        TORCH_CHECK(false, "weft: init_process_group (weft_comm_dup) failed: ",
                    weft_strerror(rc), ": ", why);
    }
    queue_ = std::make_unique<CollectiveQueue>();
}

ProcessGroupWeft::~ProcessGroupWeft()
{
    // Python drops the group with the GIL held, and the worker may need the
    // GIL to finish: a future's Python callback runs on it. Joining it with
    // the GIL held could wait forever.
    PyThreadState *saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;

    queue_.reset(); // runs what was queued: every rank queued the same
    {
        std::lock_guard<std::mutex> lock(p2p_->mutex);
        weft_comm_destroy(p2p_->comm);
        p2p_->comm = nullptr;
        p2p_->closed = true;
    }
    weft_comm_destroy(comm_);
    if (saved != nullptr)
        PyEval_RestoreThread(saved);
}

void ProcessGroupWeft::check_root(int root, const char *what) const
{
    TORCH_CHECK(root >= 0 && root < size_, "weft: ", what, ": root ", root,
                " is not a rank of this group (size ", size_, ")");
}

void ProcessGroupWeft::check_peer(int peer, const char *what) const
{
    TORCH_CHECK(peer >= 0 && peer < size_, "weft: ", what, ": rank ", peer,
                " is not a rank of this group (size ", size_, ")");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::collective(
    c10d::OpType type, const char *what, std::vector<at::Tensor> outputs,
    std::function<weft_result_t(weft_comm_t)> run, std::function<void()> finish)
{
    weft_comm_t comm = comm_;
    auto work = c10::make_intrusive<CollectiveWork>(
        rank_, type, what, std::move(outputs), [comm, run = std::move(run)] { return run(comm); },
        std::move(finish), queue_.get());

    queue_->push(work);
    return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions &)
{
    return collective(c10d::OpType::BARRIER, "barrier", {},
                      [](weft_comm_t comm) { return weft_barrier(comm); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor> &tensors,
                                                      int dst, int tag)
{
    const at::Tensor &t = single_tensor(tensors, "send's tensor");
    at::Tensor c = t.contiguous();
    weft_request_t req = nullptr;
    weft_result_t rc;

    check_peer(dst, "send");
    TORCH_CHECK(tag >= 0, "weft: send: tag ", tag, " is negative");
    {
        std::lock_guard<std::mutex> lock(p2p_->mutex);
        rc = weft_isend(c.data_ptr(), byte_count(c), WEFT_UINT8, dst, tag, p2p_->comm, &req);
        if (rc != WEFT_SUCCESS)
            throw_weft_error("send", rc);
    }
    return c10::make_intrusive<P2PWork>(rank_, c10d::OpType::SEND, "send",
                                        std::vector<at::Tensor>{ c }, req, p2p_, nullptr);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::receive(std::vector<at::Tensor> &tensors,
                                                         int src, int tag, c10d::OpType type,
                                                         const char *what)
{
    const at::Tensor &t = single_tensor(tensors, what);
    at::Tensor c = t.contiguous();
    const size_t bytes = byte_count(c);
    weft_request_t req = nullptr;
    weft_result_t rc;

    TORCH_CHECK(tag >= 0, "weft: ", what, ": tag ", tag, " is negative");
    {
        std::lock_guard<std::mutex> lock(p2p_->mutex);
        rc = weft_irecv(c.data_ptr(), bytes, WEFT_UINT8, src, tag, p2p_->comm, &req);
        if (rc != WEFT_SUCCESS)
            throw_weft_error(what, rc);
    }
    // A shorter message than the tensor is an error, as with gloo: the
    // tensor's tail would keep stale values. A longer one weft refuses
    // itself (WEFT_ERR_TRUNCATED).
    auto finish = [t, c, bytes, what](const weft_status_t &status) {
        TORCH_CHECK(status.count == bytes, "weft: ", what, ": rank ", status.source, " sent ",
                    status.count, " bytes to a tensor of ", bytes);
        if (!c.is_same(t))
            t.copy_(c);
    };
    return c10::make_intrusive<P2PWork>(rank_, type, what,
                                        std::vector<at::Tensor>{ t }, req, p2p_,
                                        std::move(finish));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor> &tensors,
                                                      int src, int tag)
{
    check_peer(src, "recv");
    return receive(tensors, src, tag, c10d::OpType::RECV, "recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recvAnysource(
    std::vector<at::Tensor> &tensors, int tag)
{
    return receive(tensors, WEFT_ANY_SOURCE, tag, c10d::OpType::RECVANYSOURCE,
                   "recv from any source");
}

} // namespace torch_weft
