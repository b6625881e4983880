// SPDX-License-Identifier: BSD-3-Clause
//
// collective_queue.cpp: the process group's collectives, one at a time.
#include "collective_queue.hpp"

#include "work.hpp"

namespace torch_weft {

CollectiveQueue::CollectiveQueue() : worker_([this] { worker_main(); }) {}

CollectiveQueue::~CollectiveQueue()
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
}

void CollectiveQueue::push(c10::intrusive_ptr<CollectiveWork> work)
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(std::move(work));
    }
    cv_.notify_all();
}

c10::intrusive_ptr<CollectiveWork> CollectiveQueue::take_front()
{
    c10::intrusive_ptr<CollectiveWork> job = std::move(jobs_.front());

    jobs_.pop_front();
    busy_ = true;
    return job;
}

// The job runs with mu_ released: it blocks in weft for as long as the
// collective takes, and new jobs must still be queued meanwhile. It is
// completed once the queue is free again, since its future's callbacks
// may queue more work and wait for it, here on this thread.
void CollectiveQueue::run_one(std::unique_lock<std::mutex> &lock,
                              c10::intrusive_ptr<CollectiveWork> job)
{
    lock.unlock();
    std::exception_ptr eptr = job->execute();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
    lock.unlock();
    job->complete(eptr);
    job.reset();
    lock.lock();
}

void CollectiveQueue::run_until(const CollectiveWork *work)
{
    std::unique_lock<std::mutex> lock(mu_);

    for (;;) {
        if (busy_ || jobs_.empty())
            return;
        bool queued = false;
        for (const auto &job : jobs_)
            queued = queued || job.get() == work;
        if (!queued)
            return;
        c10::intrusive_ptr<CollectiveWork> job = take_front();
        const bool last = job.get() == work;
        run_one(lock, std::move(job));
        if (last)
            return;
    }
}

void CollectiveQueue::worker_main()
{
    std::unique_lock<std::mutex> lock(mu_);

    for (;;) {
        cv_.wait(lock, [this] { return (!busy_ && !jobs_.empty()) || (stopping_ && !busy_); });
        if (jobs_.empty())
            return; // stopping, and nothing left to run
        run_one(lock, take_front());
    }
}

} // namespace torch_weft
