// SPDX-License-Identifier: BSD-3-Clause
//
// process_group.hpp: ProcessGroupWeft, torch.distributed's backend "weft".
//
// Each process group is one weft job of its own, started through the
// c10d store torch hands the backend (weft_init_attr_t.kvs): the default
// group and every new_group() alike, since torch calls the backend only
// on a group's members. Collectives run in issue order through a
// CollectiveQueue on the group's communicator; point-to-point traffic
// uses a duplicate of it, so that a receive waited for on the Python
// thread never holds up the queue's collectives, nor they it.
#pragma once

#include <weft.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "collective_queue.hpp"
#include "work.hpp"

namespace torch_weft {

class ProcessGroupWeft : public c10d::ProcessGroup {
  public:
    // Collective over the group's ranks: every member calls it with the
    // same store. Throws a RuntimeError with weft's reason when weft_init
    // fails (a rank that never comes: WEFT_ERR_TIMEOUT after timeout).
    ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                     std::chrono::milliseconds timeout);
    ~ProcessGroupWeft() override;

    const std::string getBackendName() const override { return "weft"; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
        std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather_coalesced(
        std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
        const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
        at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &output_splits,
                                                 std::vector<int64_t> &input_splits,
                                                 const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                                 int tag) override;

  private:
    // Queues run(comm) and then finish() (copying results into torch's
    // tensors) as one collective; outputs become the work's result().
    c10::intrusive_ptr<c10d::Work> collective(c10d::OpType type, const char *what,
                                              std::vector<at::Tensor> outputs,
                                              std::function<weft_result_t(weft_comm_t)> run,
                                              std::function<void()> finish = nullptr);
    c10::intrusive_ptr<c10d::Work> receive(std::vector<at::Tensor> &tensors, int src, int tag,
                                           c10d::OpType type, const char *what);
    void check_root(int root, const char *what) const;
    void check_peer(int peer, const char *what) const;

    c10::intrusive_ptr<c10d::Store> store_; // weft_init reads it; kept for its lifetime
    weft_comm_t comm_ = nullptr;           // collectives, run by queue_ only
    std::shared_ptr<P2PChannel> p2p_;      // send and recv
    std::unique_ptr<CollectiveQueue> queue_;
};

} // namespace torch_weft
