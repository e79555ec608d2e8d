#include "pipeline/featurize/write_queue.h"

#include <algorithm>

namespace tpuperf::featurize {

WriteQueue::WriteQueue(int threads) : capacity_(2 * static_cast<size_t>(std::max(threads, 1))) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { work(); });
}

WriteQueue::~WriteQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void WriteQueue::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void WriteQueue::submit(std::function<void()> job) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return jobs_.size() < capacity_ || error_; });
  rethrow_locked();
  jobs_.push_back(std::move(job));
  changed_.notify_all();
}

void WriteQueue::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return (jobs_.empty() && running_ == 0) || error_; });
  rethrow_locked();
}

void WriteQueue::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    if (stopping_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    changed_.notify_all();  // a slot is free for submit()
    lock.unlock();
    std::exception_ptr failed;
    try {
      job();
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    --running_;
    if (failed && !error_) error_ = failed;
    changed_.notify_all();
  }
}

}  // namespace tpuperf::featurize
