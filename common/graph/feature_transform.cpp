#include "common/graph/feature_transform.h"

#include <cmath>
#include <string>

#include "common/base/error.h"
#include "common/graph/graph.h"

namespace tpuperf {

void repad_minor_to_major(float* node_feat, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float* row = node_feat + i * kNodeFeatDim;
    int rank = 0;
    while (rank < kMaxRank && row[kShapeDimsBegin + rank] != 0.0f) ++rank;
    for (int p = rank; p < kMaxRank; ++p) row[kMinorToMajorBegin + p] = -1.0f;
  }
}

double signed_log1p(double x) { return std::copysign(std::log1p(std::fabs(x)), x); }

namespace {

void check_transform(const FeatureTransform& t) {
  const size_t k = t.kept_columns.size();
  if (t.log1p.size() != k || t.mean.size() != k || t.stddev.size() != k)
    throw Error("feature transform arrays differ in length", "", "feature_transform");
  for (size_t j = 0; j < k; ++j) {
    if (t.kept_columns[j] < 0 || t.kept_columns[j] >= kNodeFeatDim)
      throw Error("feature transform column " + std::to_string(t.kept_columns[j]) +
                  " outside [0, 140)", "", "feature_transform");
    if (!(t.stddev[j] > 0) || !std::isfinite(t.stddev[j]) || !std::isfinite(t.mean[j]))
      throw Error("feature transform column " + std::to_string(t.kept_columns[j]) +
                  " has a non-positive or non-finite stddev or mean", "", "feature_transform");
  }
}

}  // namespace

std::vector<float> apply_transform(const FeatureTransform& t, const float* node_feat, int64_t n) {
  check_transform(t);
  const size_t k = t.kept_columns.size();
  std::vector<float> out(static_cast<size_t>(n) * k);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = node_feat + i * kNodeFeatDim;
    float* dst = out.data() + static_cast<size_t>(i) * k;
    for (size_t j = 0; j < k; ++j) {
      double v = row[t.kept_columns[j]];
      if (t.log1p[j]) v = signed_log1p(v);
      dst[j] = static_cast<float>((v - t.mean[j]) / t.stddev[j]);
    }
  }
  return out;
}

}  // namespace tpuperf
