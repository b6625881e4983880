// SPDX-License-Identifier: BSD-3-Clause
//
// collective_queue.hpp: runs a process group's collectives one at a time,
// in the order they were issued.
//
// weft lets one thread at a time use a communicator, and every rank must
// run collectives in the same order; running them one by one through a
// queue gives both and needs no polling: each job is a blocking weft call,
// which waits the way weft waits (a short spin, then sleeping).
// A job starts on the queue's worker thread, so that async_op=True work
// and DDP's bucket reductions go on while Python computes, or on the
// thread that waits for it when that thread finds it next in line and the
// worker idle, which spares synchronous calls the hand-over.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <c10/util/intrusive_ptr.h>

namespace torch_weft {

class CollectiveWork;

class CollectiveQueue {
  public:
    CollectiveQueue();
    // Runs what is queued, then stops the worker.
    ~CollectiveQueue();
    CollectiveQueue(const CollectiveQueue &) = delete;
    CollectiveQueue &operator=(const CollectiveQueue &) = delete;

    void push(c10::intrusive_ptr<CollectiveWork> work);

    // Runs queued jobs on the calling thread, up to and including work,
    // while no other thread runs one; returns when work has run or another
    // thread has the queue (the caller then waits for the work itself).
    void run_until(const CollectiveWork *work);

  private:
    void worker_main();
    // With mu_ held: takes the first job and marks the queue busy.
    c10::intrusive_ptr<CollectiveWork> take_front();
    void run_one(std::unique_lock<std::mutex> &lock, c10::intrusive_ptr<CollectiveWork> job);

    std::mutex mu_; // guards everything below
    std::condition_variable cv_;
    std::deque<c10::intrusive_ptr<CollectiveWork>> jobs_;
    bool busy_ = false; // a job runs, on some thread
    bool stopping_ = false;
    std::thread worker_;
};

} // namespace torch_weft
