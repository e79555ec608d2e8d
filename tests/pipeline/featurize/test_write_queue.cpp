// WriteQueue (tpuperf-featurize's output writers): every job runs, at most 2 x threads wait
// at a time, and the first error reaches the caller, at finish() or at the next submit().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "common/base/error.h"
#include "pipeline/featurize/write_queue.h"

using namespace tpuperf;
using namespace tpuperf::featurize;

TEST(WriteQueue, RunsEveryJob) {
  std::atomic<int> done{0};
  WriteQueue q(3);
  for (int i = 0; i < 200; ++i) q.submit([&] { ++done; });
  q.finish();
  EXPECT_EQ(done.load(), 200);
}

TEST(WriteQueue, BoundsTheJobsInFlight) {
  std::atomic<int> started{0}, submitted{0}, release{0};
  WriteQueue q(2);
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      q.submit([&] {
        ++started;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
      ++submitted;
    }
  });
  for (int i = 0; i < 5000 && started.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(started.load(), 2);     // both threads busy...
  EXPECT_EQ(submitted.load(), 6);   // ...4 jobs waiting, and the producer blocked on the 7th
  release = 1;
  producer.join();
  q.finish();
  EXPECT_EQ(started.load(), 10);
}

TEST(WriteQueue, TheFirstErrorReachesTheCaller) {
  WriteQueue q(2);
  q.submit([] { throw Error("disk full", "/out/a.npz"); });
  EXPECT_THAT([&] { q.finish(); }, ::testing::ThrowsMessage<Error>(::testing::HasSubstr("/out/a.npz: disk full")));
  EXPECT_THROW(q.submit([] {}), Error);
}
