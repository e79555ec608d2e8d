// pack_layout_values works on words (processed_graph.h): these tests hold it to the
// definition, digit by digit, and to its inverse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "common/graph/processed_graph.h"

namespace tpuperf {
namespace {

// The definition: value v at position j contributes (v + 1) * 7^j.
uint64_t pack_by_digits(const int8_t* v) {
  uint64_t packed = 0, pow = 1;
  for (int j = 0; j < 18; ++j, pow *= 7) packed += static_cast<uint64_t>(v[j] + 1) * pow;
  return packed;
}

void expect_packs_right(const int8_t* v) {
  const uint64_t packed = pack_layout_values(v);
  ASSERT_EQ(packed, pack_by_digits(v));
  int8_t back[18];
  unpack_layout_values(packed, back);
  for (int j = 0; j < 18; ++j) ASSERT_EQ(back[j], v[j]) << "position " << j;
}

TEST(PackLayoutValues, ExtremesAndEveryValueAtEveryPosition) {
  for (int base : {-1, 5, 0}) {
    int8_t v[18];
    for (int8_t& x : v) x = static_cast<int8_t>(base);
    expect_packs_right(v);
    for (int j = 0; j < 18; ++j)
      for (int value = -1; value <= 5; ++value) {
        int8_t w[18];
        std::copy(v, v + 18, w);
        w[j] = static_cast<int8_t>(value);
        expect_packs_right(w);
      }
  }
  int8_t top[18];
  for (int8_t& x : top) x = 5;
  EXPECT_EQ(pack_layout_values(top), 1628413597910448ull);  // 7^18 - 1, the largest
}

TEST(PackLayoutValues, RandomValuesMatchTheDefinition) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-1, 5);
  // Unaligned starts too: nodes lie 18 bytes apart in the configs array.
  std::vector<int8_t> buf(18 * 1000 + 7);
  for (int8_t& x : buf) x = static_cast<int8_t>(value(rng));
  for (size_t at = 0; at + 18 <= buf.size(); at += 7) expect_packs_right(buf.data() + at);
}

}  // namespace
}  // namespace tpuperf
