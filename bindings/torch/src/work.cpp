// SPDX-License-Identifier: BSD-3-Clause
//
// work.cpp: completion of the weft process group's work objects.
#include "work.hpp"

#include <c10/util/Exception.h>

#include "collective_queue.hpp"

namespace torch_weft {

void throw_weft_error(const char *what, weft_result_t rc)
{
    TORCH_CHECK(false, "weft: ", what, " failed: ", weft_strerror(rc), ": ", weft_last_error());
    __builtin_unreachable();
}

WorkWeft::WorkWeft(int rank, c10d::OpType type, const char *what,
                   std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), what_(what), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get())))
{
}

std::vector<at::Tensor> WorkWeft::result()
{
    return outputs_;
}

// Created with the work, so that it exists before any thread completes it;
// DDP's communication hooks chain their steps on it.
c10::intrusive_ptr<c10::ivalue::Future> WorkWeft::getFuture()
{
    return future_;
}

void WorkWeft::complete(std::exception_ptr eptr)
{
    finish(eptr);
    if (eptr)
        future_->setError(eptr);
    else
        future_->markCompleted(c10::IValue(outputs_));
}

CollectiveWork::CollectiveWork(int rank, c10d::OpType type, const char *what,
                               std::vector<at::Tensor> outputs,
                               std::function<weft_result_t()> run,
                               std::function<void()> finish, CollectiveQueue *queue)
    : WorkWeft(rank, type, what, std::move(outputs)), run_(std::move(run)),
      finish_(std::move(finish)), queue_(queue)
{
}

bool CollectiveWork::wait(std::chrono::milliseconds timeout)
{
    if (!isCompleted())
        queue_->run_until(this);
    return c10d::Work::wait(timeout);
}

std::exception_ptr CollectiveWork::execute()
{
    std::exception_ptr eptr;

    try {
        weft_result_t rc = run_();
        if (rc != WEFT_SUCCESS)
            throw_weft_error(what_, rc);
        if (finish_)
            finish_();
    } catch (...) {
        eptr = std::current_exception();
    }
    // The closures hold the staging tensors: let them go now, not when
    // Python drops the work.
    run_ = nullptr;
    finish_ = nullptr;
    return eptr;
}

P2PWork::P2PWork(int rank, c10d::OpType type, const char *what,
                 std::vector<at::Tensor> tensors, weft_request_t req,
                 std::shared_ptr<P2PChannel> channel, Finish finish)
    : WorkWeft(rank, type, what, std::move(tensors)), req_(req), channel_(std::move(channel)),
      finish_(std::move(finish))
{
}

// Dropped unwaited (an isend whose work Python discarded): the operation
// still completes inside weft, which keeps the request until then.
P2PWork::~P2PWork()
{
    std::lock_guard<std::mutex> lock(channel_->mutex);

    if (req_ != nullptr && !channel_->closed)
        weft_request_free(&req_);
}

bool P2PWork::isCompleted()
{
    weft_status_t status = {};
    std::exception_ptr eptr;
    weft_result_t rc;
    int done = 0;

    if (c10d::Work::isCompleted())
        return true;
    {
        std::lock_guard<std::mutex> lock(channel_->mutex);
        if (req_ == nullptr)
            return false; // another thread is completing it
        rc = channel_->closed ? WEFT_ERR_ABORTED : weft_test(&req_, &done, &status);
        if (rc == WEFT_SUCCESS && !done)
            return false;
        eptr = settle(rc, status);
    }
    complete(eptr);
    return true;
}

bool P2PWork::wait(std::chrono::milliseconds timeout)
{
    weft_status_t status = {};
    std::exception_ptr eptr;
    bool settled = false;

    if (!c10d::Work::isCompleted()) {
        std::lock_guard<std::mutex> lock(channel_->mutex);
        if (req_ != nullptr) {
            // weft's own wait, bounded by WEFT_TIMEOUT: it spins briefly,
            // then sleeps until the transports have news.
            weft_result_t rc = channel_->closed ? WEFT_ERR_ABORTED : weft_wait(&req_, &status);
            eptr = settle(rc, status);
            settled = true;
        }
    }
    if (settled)
        complete(eptr);
    return c10d::Work::wait(timeout);
}

std::exception_ptr P2PWork::settle(weft_result_t rc, const weft_status_t &status)
{
    std::exception_ptr eptr;

    if (channel_->closed)
        req_ = nullptr; // freed with the communicator
    else if (req_ != nullptr)
        weft_request_free(&req_); // a failed request weft did not free
    try {
        TORCH_CHECK(!channel_->closed, "weft: ", what_,
                    " did not complete: its process group was destroyed first");
        if (rc != WEFT_SUCCESS)
            throw_weft_error(what_, rc);
        source_ = status.source;
        if (finish_)
            finish_(status);
    } catch (...) {
        eptr = std::current_exception();
    }
    finish_ = nullptr;
    return eptr;
}

int P2PWork::sourceRank() const
{
    return source_;
}

} // namespace torch_weft
