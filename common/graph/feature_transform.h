// The node-feature transform as training and prediction apply it: re-padding of the
// layout columns, then per kept column an optional sign-preserving log and a
// standardization. Preprocessing fits the transform on the train split
// (pipeline/preprocess/features.h) and stores it in the manifest; the trainer, the
// checkpoints and prediction on new data apply exactly this code, without the pipeline.
#pragma once

#include <cstdint>
#include <vector>

namespace tpuperf {

// Node feature columns the transform knows about.
constexpr int kShapeDimsBegin = 21;      // 21-26: shape dims
constexpr int kMinorToMajorBegin = 134;  // 134-139: layout minor_to_major
constexpr int kMaxRank = 6;

// The transform fitted on a collection's train split.
struct FeatureTransform {
  std::vector<int32_t> kept_columns;  // source columns kept, in order (out of 140)
  std::vector<uint8_t> log1p;         // per kept column: apply sign(x)*log1p(|x|) first
  std::vector<double> mean, stddev;   // per kept column, after the log; stddev > 0
};

// Re-pads minor_to_major with -1: the tensor's rank is the number of leading non-zero
// shape dims; positions >= rank are padding (stored as 0, which collides with dimension
// 0). In place, n rows of 140. Run before statistics and before apply.
void repad_minor_to_major(float* node_feat, int64_t n);

// sign(x) * log1p(|x|): the log used for heavy-tailed columns.
double signed_log1p(double x);

// n rows of 140 (already re-padded) -> n x kept_columns, (f(x) - mean) / stddev in double,
// rounded to float once. Throws Error on an inconsistent transform (arrays of different
// lengths, a column outside [0, 140), a non-positive or non-finite stddev or mean).
std::vector<float> apply_transform(const FeatureTransform& t, const float* node_feat, int64_t n);

}  // namespace tpuperf
