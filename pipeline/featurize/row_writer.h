// Writes one feature row left to right, every value cast from int64 to float32 as
// upstream's featurizer did (directly, round to nearest even, not via double).
#pragma once

#include <cstdint>

namespace tpuperf::featurize {

// Product of all values in int64 arithmetic that wraps like upstream's int64_t (computed
// unsigned: signed overflow would be undefined behaviour); 1 for an empty list.
template <typename Seq>
int64_t wrapping_product(const Seq& values) {
  uint64_t product = 1;
  for (int64_t v : values) product *= static_cast<uint64_t>(v);
  return static_cast<int64_t>(product);
}

class RowWriter {
 public:
  explicit RowWriter(float* row) : p_(row) {}
  void put(int64_t v) { *p_++ = static_cast<float>(v); }
  // The first `width` values, padded with `pad` (FixedNumericSequenceFeaturesNoAggregate).
  template <typename Seq>
  void leading(const Seq& values, int width, int64_t pad = 0) {
    int i = 0;
    for (auto it = values.begin(); it != values.end() && i < width; ++it, ++i) put(*it);
    for (; i < width; ++i) put(pad);
  }
  // leading(values, width), then the sum and the product of ALL values, in wrapping int64
  // arithmetic (FixedNumericSequenceFeatures). An empty list's product is 1, or 0 when
  // zero_product_on_empty (the tile config features).
  template <typename Seq>
  void leading_sum_product(const Seq& values, int width, bool zero_product_on_empty = false) {
    leading(values, width);
    uint64_t sum = 0;  // wraps like wrapping_product
    for (int64_t v : values) sum += static_cast<uint64_t>(v);
    put(static_cast<int64_t>(sum));
    put(values.empty() && zero_product_on_empty ? 0 : wrapping_product(values));
  }
  // First `width` flags as 0/1, then the count of true and of false flags over ALL of
  // them (FeaturizeVariableLengthBools).
  template <typename Seq>
  void flags_counts(const Seq& flags, int width) {
    leading(flags, width);
    int64_t on = 0;
    for (bool f : flags) on += f ? 1 : 0;
    put(on);
    put(static_cast<int64_t>(flags.size()) - on);
  }
  float* position() const { return p_; }

 private:
  float* p_;
};

}  // namespace tpuperf::featurize
