// SPDX-License-Identifier: BSD-3-Clause
//
// work.hpp: the c10d::Work objects the weft process group returns.
//
// A collective is a Job: closures that run one blocking weft call and then
// copy results back into torch's tensors. Jobs run in the order they were
// issued, on the process group's worker thread or on the thread that waits
// for one (see CollectiveQueue). Point-to-point work holds a weft request
// instead, completed by wait() or isCompleted().
#pragma once

#include <weft.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace torch_weft {

class CollectiveQueue;

// Throws the RuntimeError torch shows for a failed weft call, with
// weft_last_error() read on the calling thread (it is per thread).
[[noreturn]] void throw_weft_error(const char *what, weft_result_t rc);

class WorkWeft : public c10d::Work {
  public:
    WorkWeft(int rank, c10d::OpType type, const char *what, std::vector<at::Tensor> outputs);

    std::vector<at::Tensor> result() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    const char *what() const { return what_; }

    // Marks the work done (eptr == nullptr) or failed, and completes its
    // future. Runs without any of the process group's locks held and with
    // its queue free: the future's callbacks (DDP's hooks) may issue more
    // work and wait for it.
    void complete(std::exception_ptr eptr);

  protected:
    const char *what_;
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class CollectiveWork : public WorkWeft {
  public:
    CollectiveWork(int rank, c10d::OpType type, const char *what,
                   std::vector<at::Tensor> outputs, std::function<weft_result_t()> run,
                   std::function<void()> finish, CollectiveQueue *queue);

    // Runs this job here if it is next and nothing else runs, then waits.
    bool wait(std::chrono::milliseconds timeout) override;

    // Runs the weft call and copies results back; called once, by the
    // queue, in issue order. Returns the failure to complete() with.
    std::exception_ptr execute();

  private:
    std::function<weft_result_t()> run_;
    std::function<void()> finish_;
    CollectiveQueue *queue_;
};

// The point-to-point communicator, shared by a process group and its
// works, which may outlive it.
struct P2PChannel {
    std::mutex mutex; // weft calls on comm and its requests, one thread at a time
    weft_comm_t comm = nullptr;
    bool closed = false; // the group is gone, and with it comm and its requests
};

class P2PWork : public WorkWeft {
  public:
    // req is started on channel's communicator; finish, if any, checks
    // the completed request's status and copies results into place.
    using Finish = std::function<void(const weft_status_t &)>;
    P2PWork(int rank, c10d::OpType type, const char *what, std::vector<at::Tensor> tensors,
            weft_request_t req, std::shared_ptr<P2PChannel> channel, Finish finish);
    ~P2PWork() override;

    bool isCompleted() override;
    bool wait(std::chrono::milliseconds timeout) override;
    int sourceRank() const override;

  private:
    // Takes weft_test's or weft_wait's verdict, with channel_->mutex held
    // (req_ == nullptr afterwards tells other threads it is taken); returns
    // the exception to complete with, outside the lock.
    std::exception_ptr settle(weft_result_t rc, const weft_status_t &status);

    weft_request_t req_;
    std::shared_ptr<P2PChannel> channel_;
    Finish finish_;
    int source_ = -1;
};

} // namespace torch_weft
