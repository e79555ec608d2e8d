#include "pipeline/preprocess/features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

// ---------------------------------------------------------------------------- ExactSum

namespace {
constexpr int kFracBits = 64;  // weight of limb 0 is 2^-64
constexpr int64_t kLimbBase = int64_t{1} << 32;
constexpr uint64_t kLimbMask = 0xffffffffULL;

int64_t floor_div_base(int64_t v) { return v >= 0 ? v / kLimbBase : -((-v + kLimbBase - 1) / kLimbBase); }
}  // namespace

void ExactSum::add(double x) {
  if (x == 0.0) return;
  if (!std::isfinite(x)) throw Error("non-finite value in node feature statistics");
  const int64_t sign = x < 0 ? -1 : 1;
  int e = 0;
  const double f = std::frexp(std::fabs(x), &e);       // |x| = f * 2^e, f in [0.5, 1)
  uint64_t m = static_cast<uint64_t>(std::ldexp(f, 53));  // |x| = m * 2^(e - 53), exact
  int p = e - 53 + kFracBits;                               // bit position of m's lowest bit
  if (p < 0) {
    m = -p >= 64 ? 0 : m >> -p;  // truncation below 2^-64, the same for every order
    p = 0;
  }
  if (m == 0) return;
  const int i = p / 32, s = p % 32;
  if (i + 2 >= kLimbs) throw Error("value too large for exact feature statistics");
  const uint64_t low = m << s;                        // bits 0..63 of m * 2^s (m < 2^53)
  const uint64_t high = s == 0 ? 0 : m >> (64 - s);  // bits 64..
  limb_[i] += sign * static_cast<int64_t>(low & kLimbMask);
  limb_[i + 1] += sign * static_cast<int64_t>(low >> 32);
  limb_[i + 2] += sign * static_cast<int64_t>(high);
  normalize();
}

void ExactSum::add(const ExactSum& other) {
  for (int i = 0; i < kLimbs; ++i) limb_[i] += other.limb_[i];
  normalize();
}

// Canonical form: limbs 0..K-2 in [0, 2^32), the top limb carries the sign. Equal sums
// have equal limbs, so value() gives equal bits.
void ExactSum::normalize() {
  int64_t carry = 0;
  for (int i = 0; i + 1 < kLimbs; ++i) {
    const int64_t v = limb_[i] + carry;
    carry = floor_div_base(v);
    limb_[i] = v - carry * kLimbBase;
  }
  limb_[kLimbs - 1] += carry;
}

double ExactSum::value() const {
  long double acc = 0;
  for (int i = kLimbs - 1; i >= 0; --i)
    acc += std::ldexp(static_cast<long double>(limb_[i]), 32 * i - kFracBits);
  return static_cast<double>(acc);
}

void ExactSum::to_flat(double* out) const {
  for (int i = 0; i < kLimbs; ++i) out[i] = static_cast<double>(limb_[i]);
}

void ExactSum::from_flat(const double* in) {
  for (int i = 0; i < kLimbs; ++i) limb_[i] = std::llround(in[i]);
  normalize();
}

// ---------------------------------------------------------------------------- FeatureStats

FeatureStats::FeatureStats()
    : count_(kCols, 0),
      sums_(kCols),
      min_(kCols, std::numeric_limits<double>::infinity()),
      max_(kCols, -std::numeric_limits<double>::infinity()) {}

// One graph is summed in plain double in a fixed order (deterministic), then added to
// the exact sums: the result does not depend on how graphs are ordered or partitioned.
void FeatureStats::add_graph(const float* node_feat, int64_t n) {
  if (n <= 0) return;
  std::vector<double> acc(static_cast<size_t>(kCols) * kSumsPerCol, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = node_feat + i * kCols;
    for (int c = 0; c < kCols; ++c) {
      const double x = row[c], y = signed_log1p(x);
      double* a = &acc[static_cast<size_t>(c) * kSumsPerCol];
      a[kSum] += x;
      a[kSumSq] += x * x;
      a[kSumAbs] += std::fabs(x);
      a[kLogSum] += y;
      a[kLogSumSq] += y * y;
      min_[c] = std::min(min_[c], x);
      max_[c] = std::max(max_[c], x);
    }
  }
  for (int c = 0; c < kCols; ++c) {
    count_[c] += n;
    for (int s = 0; s < kSumsPerCol; ++s) sums_[c][s].add(acc[static_cast<size_t>(c) * kSumsPerCol + s]);
  }
}

void FeatureStats::add_graph(const std::vector<float>& node_feat, int64_t n) {
  if (node_feat.size() != static_cast<size_t>(n) * kCols)
    throw Error("node_feat has " + std::to_string(node_feat.size()) + " values, expected " +
                    std::to_string(n) + " x 140", "", "node_feat");
  add_graph(node_feat.data(), n);
}

void FeatureStats::merge(const FeatureStats& other) {
  for (int c = 0; c < kCols; ++c) {
    count_[c] += other.count_[c];
    for (int s = 0; s < kSumsPerCol; ++s) sums_[c][s].add(other.sums_[c][s]);
    min_[c] = std::min(min_[c], other.min_[c]);
    max_[c] = std::max(max_[c], other.max_[c]);
  }
}

std::vector<double> FeatureStats::to_flat() const {
  std::vector<double> flat(kFlatSize);
  double* p = flat.data();
  for (int c = 0; c < kCols; ++c) {
    *p++ = static_cast<double>(count_[c]);
    for (int s = 0; s < kSumsPerCol; ++s, p += ExactSum::kLimbs) sums_[c][s].to_flat(p);
  }
  for (int c = 0; c < kCols; ++c) {
    *p++ = max_[c];
    *p++ = -min_[c];
  }
  return flat;
}

FeatureStats FeatureStats::from_flat(const std::vector<double>& flat) {
  if (flat.size() != static_cast<size_t>(kFlatSize))
    throw Error("flat feature statistics have " + std::to_string(flat.size()) +
                " values, expected " + std::to_string(kFlatSize));
  FeatureStats st;
  const double* p = flat.data();
  for (int c = 0; c < kCols; ++c) {
    st.count_[c] = std::llround(*p++);
    for (int s = 0; s < kSumsPerCol; ++s, p += ExactSum::kLimbs) st.sums_[c][s].from_flat(p);
  }
  for (int c = 0; c < kCols; ++c) {
    st.max_[c] = *p++;
    st.min_[c] = -*p++;
  }
  return st;
}

void FeatureStats::mpi_allreduce(MPI_Comm comm) {
  std::vector<double> flat = to_flat();
  allreduce_sum(flat.data(), kSumBlock, comm);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, flat.data() + kSumBlock, kExtremeBlock, MPI_DOUBLE,
                          MPI_MAX, comm),
            "MPI_Allreduce(feature extremes)");
  *this = from_flat(flat);
}

double FeatureStats::max_abs(int col) const {
  if (count_[col] == 0) return 0.0;
  return std::max(std::fabs(min_[col]), std::fabs(max_[col]));
}

double FeatureStats::moment_mean(int col, Sum s) const {
  if (count_[col] == 0) return 0.0;
  return sums_[col][s].value() / static_cast<double>(count_[col]);
}

// E[x^2] - E[x]^2 in long double from the exact sums; clamped at 0 against rounding.
double FeatureStats::moment_variance(int col, Sum s, Sum sq) const {
  if (count_[col] == 0) return 0.0;
  const long double n = static_cast<long double>(count_[col]);
  const long double sum = sums_[col][s].value(), sum_sq = sums_[col][sq].value();
  const long double var = (sum_sq - sum * (sum / n)) / n;
  return var > 0 ? static_cast<double>(var) : 0.0;
}

double FeatureStats::mean(int col) const { return moment_mean(col, kSum); }
double FeatureStats::mean_abs(int col) const { return moment_mean(col, kSumAbs); }
double FeatureStats::variance(int col) const { return moment_variance(col, kSum, kSumSq); }
double FeatureStats::log_mean(int col) const { return moment_mean(col, kLogSum); }
double FeatureStats::log_variance(int col) const { return moment_variance(col, kLogSum, kLogSumSq); }

// ---------------------------------------------------------------------------- fit

// The heavy-tail rule. Why these criteria:
// - max|x| > 1000: the column holds sizes, counts or products (shape dims and products,
//   slice bounds, window products reach 1e9). Their ratios matter, not their
//   differences, and a linear standardization would squash the typical values into a
//   sliver next to the largest ones. Small-integer columns (one-hots, dimension
//   indices, window sizes and strides, layouts -1..5) stay below and stay linear.
// - max|x| > 16 and max|x| > 100 * mean|x|: moderate but very skewed columns (parameter
//   numbers, tuple sizes: up to hundreds while most nodes hold 0-2). The floor of 16
//   keeps sparse binary and small-integer columns linear (for a two-valued column any
//   monotonic map standardizes to the same values anyway).
// Both use the maximum and the mean magnitude only, which do not grow with the number of
// train graphs or nodes, so the decision is stable as train data of the same kind grows.
// Logging is sign-preserving and monotonic, so it never merges distinct values.
bool is_heavy_tailed(const FeatureStats& stats, int col) {
  if (stats.count(col) == 0) return false;
  const double max_abs = stats.max_abs(col);
  return max_abs > kHeavyTailMaxAbs ||
         (max_abs > kSkewedMaxAbsFloor && max_abs > kSkewedMaxOverMean * stats.mean_abs(col));
}

FeatureTransform fit_transform(const FeatureStats& stats, const FitOptions& options) {
  if (stats.count(0) == 0) throw Error("no train node features: cannot fit the feature transform");
  FeatureTransform t;
  for (int c = 0; c < FeatureStats::kCols; ++c) {
    if (options.drop_constant && stats.max(c) == stats.min(c)) continue;
    const bool log = options.log_columns && is_heavy_tailed(stats, c);
    double stddev = std::sqrt(log ? stats.log_variance(c) : stats.variance(c));
    if (!(stddev >= kStddevFloor)) stddev = 1.0;  // also catches NaN
    t.kept_columns.push_back(c);
    t.log1p.push_back(log ? 1 : 0);
    t.mean.push_back(log ? stats.log_mean(c) : stats.mean(c));
    t.stddev.push_back(stddev);
  }
  const auto logged = std::count(t.log1p.begin(), t.log1p.end(), 1);
  if (t.kept_columns.empty()) spdlog::warn("feature transform keeps no column: every node feature is constant on train");
  spdlog::debug("feature transform: {} of {} columns kept, {} log-transformed",
                t.kept_columns.size(), FeatureStats::kCols, logged);
  return t;
}

}  // namespace tpuperf
