#include "pipeline/featurize/node_features.h"

#include <vector>

#include "common/graph/graph.h"
#include "pipeline/featurize/row_writer.h"

namespace tpuperf::featurize {

namespace {

// featurizers.h kPrimitiveTypeFeatures: one-hot column 2 + k is PrimitiveType kOneHot[k]
// (INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 BF16 C64 C128 TUPLE OPAQUE TOKEN).
constexpr int32_t kOneHot[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 15, 18, 13, 14, 17};
constexpr int kOneHotFirstColumn = 2;

// One int64 field of every repeated sub-message, e.g. the sizes of all window dimensions.
template <typename Repeated, typename Get>
std::vector<int64_t> field_of_each(const Repeated& items, Get get) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(items.size()));
  for (const auto& item : items) out.push_back(get(item));
  return out;
}

void shape_columns(const pb::ShapeProto& shape, RowWriter& w) {  // 2..29
  int hot = element_type_column(shape.element_type());
  for (int c = kOneHotFirstColumn; c < kOneHotFirstColumn + 19; ++c) w.put(c == hot ? 1 : 0);
  w.leading_sum_product(shape.dimensions(), 6);
  w.put(shape.tuple_shapes_size());
}

void window_columns(const pb::Window& window, RowWriter& w) {  // 37..92
  const auto& d = window.dimensions();
  using D = pb::WindowDimension;
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.size(); }), 6);
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.stride(); }), 6);
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.padding_low(); }), 6);
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.padding_high(); }), 6);
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.window_dilation(); }), 6);
  w.leading_sum_product(field_of_each(d, [](const D& x) { return x.base_dilation(); }), 6);
  std::vector<bool> reversal;
  for (const D& x : d) reversal.push_back(x.window_reversal());
  w.flags_counts(reversal, 6);
}

void convolution_columns(const pb::ConvolutionDimensionNumbers& dn, RowWriter& w) {  // 93..106
  w.put(dn.input_batch_dimension());
  w.put(dn.input_feature_dimension());
  w.leading(dn.input_spatial_dimensions(), 4);
  w.put(dn.kernel_input_feature_dimension());
  w.put(dn.kernel_output_feature_dimension());
  w.leading(dn.kernel_spatial_dimensions(), 4);
  w.put(dn.output_batch_dimension());
  w.put(dn.output_feature_dimension());
}

void slice_columns(const pb::HloInstructionProto& inst, RowWriter& w) {  // 109..120
  using S = pb::HloInstructionProto::SliceDimensions;
  const auto& s = inst.slice_dimensions();
  // Upstream's order: start, stride, limit.
  w.leading_sum_product(field_of_each(s, [](const S& x) { return x.start(); }), 2);
  w.leading_sum_product(field_of_each(s, [](const S& x) { return x.stride(); }), 2);
  w.leading_sum_product(field_of_each(s, [](const S& x) { return x.limit(); }), 2);
}

void padding_columns(const pb::PaddingConfig& padding, RowWriter& w) {  // 125..132
  using P = pb::PaddingConfig::PaddingConfigDimension;
  const auto& d = padding.dimensions();
  w.leading_sum_product(field_of_each(d, [](const P& x) { return x.edge_padding_low(); }), 2);
  w.leading_sum_product(field_of_each(d, [](const P& x) { return x.edge_padding_high(); }), 2);
}

}  // namespace

int element_type_column(int32_t element_type) {
  for (int k = 0; k < 19; ++k)
    if (kOneHot[k] == element_type) return kOneHotFirstColumn + k;
  return -1;
}

void instruction_features(const pb::HloInstructionProto& inst, const pb::HloComputationProto& comp,
                          float* row) {
  RowWriter w(row);
  w.put(inst.id() == comp.root_id() ? 1 : 0);  // 0 is_root
  w.put(0);                                    // 1 element_size_in_bits: upstream writes 0
  shape_columns(inst.shape(), w);              // 2..29
  w.put(inst.parameter_number());              // 30
  w.leading(inst.dimensions(), 6);             // 31..36
  window_columns(inst.window(), w);            // 37..92
  convolution_columns(inst.convolution_dimension_numbers(), w);  // 93..106
  w.put(inst.feature_group_count());                             // 107
  w.put(inst.batch_group_count());                               // 108
  slice_columns(inst, w);                                        // 109..120
  w.leading_sum_product(inst.dynamic_slice_sizes(), 2);          // 121..124
  padding_columns(inst.padding_config(), w);                     // 125..132
  w.put(inst.is_stable() ? 1 : 0);                               // 133
  // 134..139, 0-padded (so dimension 0 and "no dimension" look alike, as in the release).
  w.leading(inst.shape().layout().minor_to_major(), 6);
  if (w.position() != row + kNodeFeatDim) throw std::logic_error("node feature row is not 140 wide");
}

void tile_config_features(const pb::TileSizeConfig& config, float* row) {
  RowWriter w(row);
  w.leading_sum_product(config.kernel_bounds(), 6, true);
  w.leading_sum_product(config.output_bounds(), 6, true);
  w.leading_sum_product(config.input_bounds(), 6, true);
  if (w.position() != row + kTileConfigDim) throw std::logic_error("tile config row is not 24 wide");
}

}  // namespace tpuperf::featurize
