#include "trainer/models/shape_features.h"

#include <algorithm>
#include <cmath>

#include "trainer/models/config_dims.h"

namespace tpuperf {

namespace {

constexpr int kRank = 6;
constexpr int kPerTensor = kLayoutShapeFeat / 3;

// Leading positive dims: the tensor's rank (the release pads shapes with 0).
int rank_of(const int64_t* dims) {
  int r = 0;
  while (r < kRank && dims[r] > 0) ++r;
  return r;
}

double elements(const int64_t* dims) {
  double e = 1;
  for (int i = 0, r = rank_of(dims); i < r; ++i) e *= static_cast<double>(dims[i]);
  return e;
}

double pad_up(double x, double m) { return std::ceil(x / m) * m; }

// log(padded / x) for a dim of size x padded to a multiple of m; 0 for no dim.
double log_pad(double x, double m) { return x > 0 ? std::log(pad_up(x, m) / x) : 0.0; }

}  // namespace

void tile_shape_features(const float* config24, const int64_t* dims15, float* out) {
  const int64_t* dims = dims15;
  const int64_t* m2m = dims15 + kRank;
  const float* kernel = config24;      // kernel_bounds[0..5]
  const float* tile = config24 + 8;    // output_bounds[0..5]
  const int rank = rank_of(dims);
  const int minor = rank >= 1 && m2m[0] >= 0 && m2m[0] < rank ? static_cast<int>(m2m[0]) : -1;
  const int second = rank >= 2 && m2m[1] >= 0 && m2m[1] < rank ? static_cast<int>(m2m[1]) : -1;
  double log_grid = 0, log_tile = 0, log_padded = 0, log_kernel = 0;
  for (int i = 0; i < kRank; ++i) {
    double steps = 1;
    if (i < rank && tile[i] > 0) {
      const double t = tile[i];
      steps = std::ceil(static_cast<double>(dims[i]) / t);
      log_tile += std::log(t);
      log_padded += std::log(i == minor ? pad_up(t, 128) : i == second ? pad_up(t, 8) : t);
    }
    out[i] = static_cast<float>(std::log(steps) / 4);
    log_grid += std::log(steps);
    if (kernel[i] > 0) log_kernel += std::log(static_cast<double>(kernel[i]));
  }
  // The tile's bytes: its padded output tile at the kernel's output widths; the inputs if
  // they scale with the output (the parameters' bytes per output element); the kernel tile
  // at the inputs' mean width; and output plus scaled inputs, an elementwise kernel's
  // working set (halved: no double buffering). A matmul's left operand tile (the output
  // tile's rows x the contraction tile) as two more terms did not pay (E43).
  const double padded = std::exp(log_padded);
  const double in_bytes = static_cast<double>(dims[kTileInBytes]);
  const double in_elements = static_cast<double>(dims[kTileInElements]);
  const double out_bytes = padded * static_cast<double>(dims[kTileOutBytes]);
  const double scaled_in = padded * in_bytes / std::max(1.0, elements(dims));
  const double kernel_in = std::exp(log_kernel) * (in_elements > 0 ? in_bytes / in_elements : 0.0);
  const double f[] = {log_grid / 8,
                      log_tile / 8,
                      log_padded / 8,
                      (log_padded - log_tile) / 4,
                      (log_grid + log_padded) / 8,
                      log_kernel / 8,
                      (log_grid + log_kernel) / 8,
                      std::log1p(out_bytes) / 16,
                      std::log1p(scaled_in) / 16,
                      std::log1p(kernel_in) / 16,
                      std::log1p(out_bytes + scaled_in) / 16};
  static_assert(kRank + sizeof(f) / sizeof(f[0]) == kTileShapeFeat);
  for (size_t j = 0; j < sizeof(f) / sizeof(f[0]); ++j) out[kRank + j] = static_cast<float>(f[j]);
}

double max_layout_elements(const int64_t* dims, int64_t nc) {
  double m = 1;
  for (int64_t t = 0; t < nc * 3; ++t) m = std::max(m, elements(dims + t * kRank));
  return m;
}

LayoutNodeDims layout_node_dims(const int64_t* dims18) {
  LayoutNodeDims node;
  for (int t = 0; t < 3; ++t) {
    const int64_t* d = dims18 + t * kRank;
    LayoutNodeDims::TensorDims& td = node.tensor[t];
    td.rank = rank_of(d);
    td.size = elements(d);
    td.log_size = td.rank > 0 ? static_cast<float>(std::log1p(td.size) / 16) : 0.0f;
    for (int i = 0; i < td.rank; ++i) {
      const double x = static_cast<double>(d[i]);
      td.log_dim[i] = static_cast<float>(std::log1p(x) / 8);
      td.pad128[i] = log_pad(x, 128);
      td.pad8[i] = log_pad(x, 8);
    }
  }
  return node;
}

void layout_shape_features(const int8_t* values18, const LayoutNodeDims& node, double max_elements, float* out) {
  for (int t = 0; t < 3; ++t, out += kPerTensor) {
    const int8_t* v = values18 + t * kRank;
    const LayoutNodeDims::TensorDims& td = node.tensor[t];
    const int rank = td.rank;
    const bool is_default = std::all_of(v, v + kRank, [](int8_t x) { return x == -1; });
    std::fill(out, out + kPerTensor, 0.0f);
    out[0] = is_default ? 1.0f : 0.0f;
    out[6] = td.log_size;
    if (is_default || rank == 0) continue;
    bool row_major = true;
    for (int i = 0; i < rank; ++i) row_major &= v[i] == rank - 1 - i;
    // The minor and second-minor dims' values; a value naming no dim counts as a dim of
    // size 0 (all its terms 0).
    const bool has_minor = v[0] >= 0 && v[0] < rank, has_second = v[1] >= 0 && v[1] < rank;
    const double pad_minor = has_minor ? td.pad128[v[0]] : 0.0, pad_second = has_second ? td.pad8[v[1]] : 0.0;
    out[1] = row_major ? 1.0f : 0.0f;
    out[2] = has_minor ? td.log_dim[v[0]] : 0.0f;
    out[3] = has_second ? td.log_dim[v[1]] : 0.0f;
    out[4] = static_cast<float>(pad_minor / 4);
    out[5] = static_cast<float>(pad_second / 2);
    const double waste = td.size * std::expm1(pad_minor + pad_second) / max_elements;
    out[7] = static_cast<float>(waste / 8);
    out[8] = static_cast<float>(std::log1p(waste));
  }
}

void layout_shape_features(const int8_t* values18, const int64_t* dims18, double max_elements, float* out) {
  layout_shape_features(values18, layout_node_dims(dims18), max_elements, out);
}

}  // namespace tpuperf
