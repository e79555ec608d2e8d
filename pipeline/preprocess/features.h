// Fitting the node-feature transform: statistics over the train graphs (mergeable across
// MPI ranks) and the FeatureTransform fitted on them. Applying it (and the re-padding that
// precedes statistics and application) is common/graph/feature_transform.h.
//
// Reproducibility: every sum is kept as an exact fixed-point number (see ExactSum), so
// the statistics, and the fitted transform, are bit-identical whatever the order in
// which graphs are added and however they are spread over ranks.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "common/graph/feature_transform.h"
#include "common/graph/graph.h"

namespace tpuperf {

// An exact sum of doubles: a fixed-point integer with 32-bit limbs covering 2^-64 up
// to beyond 2^320 (any sum of squares of floats fits). Bits below 2^-64 of each added
// value are truncated (towards zero), the same way whatever the order. Limbs are stored
// as doubles in flat form; summing flat forms element-wise is exact for up to 2^20
// operands, so MPI_SUM merges them exactly.
class ExactSum {
 public:
  static constexpr int kLimbs = 12;
  void add(double x);
  void add(const ExactSum& other);
  double value() const;
  // Normalized limbs as doubles (kLimbs values).
  void to_flat(double* out) const;
  // Reads limbs written by to_flat, possibly summed over several sums.
  void from_flat(const double* in);

 private:
  void normalize();
  std::array<int64_t, kLimbs> limb_{};
};

struct FeatureStats {
  static constexpr int kCols = kNodeFeatDim;
  // Flat layout: [sums block | extremes block]. Sums: per column the count followed by
  // the limbs of sum, sum of squares, sum of |x|, sum and sum of squares of
  // signed_log1p(x). Extremes: per column max and -min (merged with a maximum).
  static constexpr int kSumsPerCol = 5;
  static constexpr int kSumBlock = kCols * (1 + kSumsPerCol * ExactSum::kLimbs);
  static constexpr int kExtremeBlock = kCols * 2;
  static constexpr int kFlatSize = kSumBlock + kExtremeBlock;

  FeatureStats();

  // Adds one graph's (re-padded) rows: n x 140.
  void add_graph(const float* node_feat, int64_t n);
  void add_graph(const std::vector<float>& node_feat, int64_t n);
  void merge(const FeatureStats& other);

  std::vector<double> to_flat() const;
  static FeatureStats from_flat(const std::vector<double>& flat);
  // Every rank ends with the statistics of all ranks' graphs: one MPI_SUM all-reduce of
  // the sums block and one MPI_MAX all-reduce of the extremes block. Collective.
  void mpi_allreduce(MPI_Comm comm);

  int64_t count(int col) const { return count_[col]; }
  double min(int col) const { return min_[col]; }
  double max(int col) const { return max_[col]; }
  double max_abs(int col) const;
  double mean(int col) const;
  double mean_abs(int col) const;
  double variance(int col) const;  // population variance, >= 0
  // The same after signed_log1p (a monotonic map, so its min/max are the mapped ones).
  double log_min(int col) const { return signed_log1p(min_[col]); }
  double log_max(int col) const { return signed_log1p(max_[col]); }
  double log_mean(int col) const;
  double log_variance(int col) const;

 private:
  enum Sum { kSum = 0, kSumSq, kSumAbs, kLogSum, kLogSumSq };
  std::vector<int64_t> count_;
  std::vector<std::array<ExactSum, kSumsPerCol>> sums_;
  std::vector<double> min_, max_;
  double moment_mean(int col, Sum s) const;
  double moment_variance(int col, Sum s, Sum sq) const;
};

struct FitOptions {
  bool drop_constant = true;  // drop columns with max == min on train
  bool log_columns = true;    // signed_log1p heavy-tailed columns
};

// The heavy-tail rule's thresholds (why these: features.cpp, is_heavy_tailed). Changing
// one changes which columns are logged, so every fitted transform.
constexpr double kHeavyTailMaxAbs = 1000.0;   // sizes, counts, products
constexpr double kSkewedMaxAbsFloor = 16.0;   // below: small-integer columns stay linear
constexpr double kSkewedMaxOverMean = 100.0;  // max|x| / mean|x| of a very skewed column
// A kept column whose stddev is below this is standardized with stddev 1 instead.
constexpr double kStddevFloor = 1e-6;

// Heavy-tail rule (see features.cpp): max|x| > kHeavyTailMaxAbs, or
// max|x| > kSkewedMaxAbsFloor and max|x| > kSkewedMaxOverMean * mean|x|.
bool is_heavy_tailed(const FeatureStats& stats, int col);

// Fits on train statistics. Stddev below kStddevFloor becomes 1 (constant kept columns
// map to 0). Throws Error when the statistics hold no rows.
FeatureTransform fit_transform(const FeatureStats& stats, const FitOptions& options);

}  // namespace tpuperf
