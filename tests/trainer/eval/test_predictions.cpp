#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/base/error.h"
#include "trainer/eval/predictions.h"

using namespace tpuperf;

namespace {

std::vector<GraphScores> sample() {
  GraphScores a;
  a.collection = "tile:xla";
  a.split = "test";
  a.name = "3ba8";
  a.model = 2;
  a.config_index = {0, 5, 7};
  a.score = {0.25, -1.5, 1e300};
  GraphScores b;
  b.collection = "layout:nlp:random";
  b.split = "valid";
  b.name = "";  // empty strings and empty vectors must survive too
  b.model = -1;
  return {a, b};
}

void expect_equal(const GraphScores& x, const GraphScores& y) {
  EXPECT_EQ(x.collection, y.collection);
  EXPECT_EQ(x.split, y.split);
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.model, y.model);
  EXPECT_EQ(x.config_index, y.config_index);
  EXPECT_EQ(x.score, y.score);
}

}  // namespace

TEST(Predictions, RoundTrip) {
  const auto in = sample();
  const auto out = deserialize_scores(serialize_scores(in));
  ASSERT_EQ(out.size(), 2u);
  expect_equal(out[0], in[0]);
  expect_equal(out[1], in[1]);
}

TEST(Predictions, NaNScoreSurvives) {
  auto in = sample();
  in[0].score[1] = std::nan("");
  const auto out = deserialize_scores(serialize_scores(in));
  EXPECT_TRUE(std::isnan(out[0].score[1]));
}

TEST(Predictions, ConcatenatedBuffersAreOneList) {
  // What MPI_Gatherv leaves on the root: the ranks' buffers back to back.
  const auto in = sample();
  const std::string all =
      serialize_scores({in[0]}) + serialize_scores({}) + serialize_scores({in[1]});
  const auto out = deserialize_scores(all);
  ASSERT_EQ(out.size(), 2u);
  expect_equal(out[0], in[0]);
  expect_equal(out[1], in[1]);
}

TEST(Predictions, EmptyBufferIsEmptyList) { EXPECT_TRUE(deserialize_scores("").empty()); }

TEST(Predictions, EveryTruncationIsAnError) {
  const std::string full = serialize_scores(sample());
  for (size_t n = 1; n < full.size(); ++n)
    EXPECT_THROW(deserialize_scores(full.substr(0, n)), Error) << "prefix of " << n << " bytes";
}

TEST(Predictions, TruncationMessageSaysTruncated) {
  const std::string full = serialize_scores(sample());
  try {
    deserialize_scores(full.substr(0, full.size() - 3));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("truncated"));
  }
}

TEST(Predictions, BadMagicAndVersion) {
  std::string buf = serialize_scores(sample());
  std::string bad = buf;
  bad[0] = 'X';
  EXPECT_THROW(deserialize_scores(bad), Error);
  bad = buf;
  bad[4] = 9;  // version field follows the 4-byte magic
  try {
    deserialize_scores(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("version"));
  }
  EXPECT_THROW(deserialize_scores(buf + "junk"), Error);  // trailing garbage
}

TEST(Predictions, HugeCountDoesNotAllocate) {
  // A corrupted config count must be rejected by the bounds check, not by bad_alloc.
  GraphScores g;
  g.collection = "tile:xla";
  std::string buf = serialize_scores({g});
  // The config count is the last 8 bytes of this record (no configs follow).
  for (size_t i = buf.size() - 8; i < buf.size(); ++i) buf[i] = static_cast<char>(0x7f);
  EXPECT_THROW(deserialize_scores(buf), Error);
}

TEST(Predictions, SizeMismatchRefused) {
  auto in = sample();
  in[0].score.pop_back();
  EXPECT_THROW(serialize_scores(in), Error);
}
