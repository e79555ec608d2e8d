// Writes outputs on worker threads while the featurizer goes on: an npz file costs its
// deflate and, in NpzWriter::close, an fsync of the file and of its directory, which
// waits for the disk. With thousands of small tile files the waits would add up; on a few
// threads they overlap. Jobs may finish in any order; the caller decides the names (and
// so every rejection) before submitting, so the outcome does not depend on the order.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <deque>
#include <thread>
#include <vector>

namespace tpuperf::featurize {

class WriteQueue {
 public:
  // threads >= 1; at most 2 x threads jobs wait at a time (their graphs stay in memory).
  explicit WriteQueue(int threads);
  ~WriteQueue();  // waits for the running jobs, drops waiting ones (after an error)
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // Blocks while the queue is full. Rethrows the first error of an earlier job, so a full
  // disk stops the run at once.
  void submit(std::function<void()> job);
  // Waits until every job has run; rethrows the first error.
  void finish();

 private:
  void work();
  void rethrow_locked();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  size_t capacity_;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace tpuperf::featurize
