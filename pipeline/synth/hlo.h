// A small HLO graph builder for the generator: instructions with the attributes the
// TpuGraphs featurizer reads (shape, element type, layout, window, convolution dimension
// numbers, ...), appended in topological order, and turned into the real file's arrays
// (node_feat (n,140), node_opcode, edge_index [consumer, producer] sorted).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/graph.h"

namespace tpuperf::synth {

// HLO opcode ids as the release numbers them (the documented ones: add 2, bitcast 11,
// broadcast 13, constant 24, convert 25, convolution 26, copy 27, dot 34, fusion 41,
// get-tuple-element 45, multiply 59, parameter 63, reduce 70, reshape 75, transpose 98,
// tuple 100, while 102). The others follow the same alphabetical HLO opcode list, which
// reproduces every documented id.
namespace op {
constexpr uint8_t kAdd = 2, kAllReduce = 5, kBitcast = 11, kBroadcast = 13, kCompare = 20,
                  kConcatenate = 22, kConstant = 24, kConvert = 25, kConvolution = 26, kCopy = 27,
                  kDivide = 32, kDot = 34, kDynamicSlice = 35, kDynamicUpdateSlice = 36, kExp = 37,
                  kFusion = 41, kGather = 42, kGetTupleElement = 45, kIota = 48, kLog = 50,
                  kMaximum = 57, kMinimum = 58, kMultiply = 59, kNegate = 60, kPad = 62,
                  kParameter = 63, kReduce = 70, kReduceWindow = 72, kReshape = 75, kRsqrt = 81,
                  kSelect = 83, kSelectAndScatter = 84, kSlice = 92, kSqrt = 94, kSubtract = 95,
                  kTanh = 96, kTranspose = 98, kTuple = 100, kWhile = 102;
}  // namespace op

enum class ElemType { Pred, S32, F16, F32, BF16, Tuple };

int elem_bytes(ElemType t);

// Node feature columns (see docs/tpugraphs.md); the ones the builder fills.
namespace col {
constexpr int kIsRoot = 0, kTypeBase = 2, kDims = 21, kDimsSum = 27, kDimsProduct = 28,
              kTupleSize = 29, kParameterNumber = 30, kDimensions = 31, kWindow = 37,
              kConvDims = 93, kFeatureGroups = 107, kBatchGroups = 108, kSliceStart = 109,
              kSliceStride = 113, kSliceLimit = 117, kDynamicSliceSizes = 121, kPadLow = 125,
              kPadHigh = 129, kIsStable = 133, kLayout = 134;
// Window fields, each 6 dims + sum + product, in this order starting at kWindow.
constexpr int kWindowSize = 0, kWindowStride = 1, kWindowPadLow = 2, kWindowPadHigh = 3,
              kWindowDilation = 4, kBaseDilation = 5, kWindowReversal = 6;
}  // namespace col

struct Window {
  // Each of the seven fields has one entry per spatial dimension.
  std::vector<int64_t> size, stride, pad_low, pad_high, dilation, base_dilation, reversal;
};

// Convolution dimension numbers for 2 spatial dims.
struct ConvDims {
  int64_t in_batch = 0, in_feature = 3, in_spatial[2] = {1, 2};
  int64_t k_in_feature = 2, k_out_feature = 3, k_spatial[2] = {0, 1};
  int64_t out_batch = 0, out_feature = 3, out_spatial[2] = {1, 2};
};

struct HloNode {
  uint8_t opcode = 0;
  ElemType type = ElemType::F32;
  std::vector<int64_t> dims;            // logical shape; empty for scalars and tuples
  std::vector<int64_t> minor_to_major;  // layout; empty means row-major
  std::vector<int> operands;            // producer node ids, all smaller than this node's
  bool is_root = false;
  int64_t parameter_number = 0;
  int64_t tuple_size = 0;
  std::vector<int64_t> dimensions;  // reduce / transpose / broadcast / concatenate dims
  bool has_window = false;
  Window window;
  bool has_conv = false;
  ConvDims conv;
  int64_t feature_groups = 0, batch_groups = 0;
  std::vector<int64_t> slice_start, slice_stride, slice_limit;
  std::vector<int64_t> pad_low, pad_high;
};

// Row-major layout {r-1, ..., 0}.
std::vector<int64_t> row_major(size_t rank);
int64_t num_elements(const std::vector<int64_t>& dims);

class HloBuilder {
 public:
  // Appends a node; its operands must already exist. Returns its id.
  int add(HloNode node);
  const HloNode& node(int id) const { return nodes_[static_cast<size_t>(id)]; }
  HloNode& node(int id) { return nodes_[static_cast<size_t>(id)]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<HloNode>& nodes() const { return nodes_; }

  // Marks the start of a new computation (for node_splits); the first starts at 0.
  void begin_computation();
  // Starts of every computation plus the end, as node_splits holds them.
  std::vector<int64_t> splits() const;

  // Convenience constructors; the element type defaults to the first operand's.
  int parameter(ElemType t, std::vector<int64_t> dims);
  int constant(ElemType t, std::vector<int64_t> dims = {});
  int broadcast(int operand, std::vector<int64_t> dims, std::vector<int64_t> kept_dims);
  int unary(uint8_t opcode, int a);
  int binary(uint8_t opcode, int a, int b);
  int convert(int a, ElemType t);
  int reshape(int a, std::vector<int64_t> dims);
  int transpose(int a, const std::vector<int64_t>& perm);
  int reduce(int a, int init, std::vector<int64_t> reduced_dims);
  int reduce_window(int a, int init, const Window& w, std::vector<int64_t> out_dims);
  int dot(int lhs, int rhs, std::vector<int64_t> out_dims, ElemType out_type);
  int convolution(int input, int kernel, const Window& w, const ConvDims& cd,
                  std::vector<int64_t> out_dims, ElemType out_type, int64_t feature_groups);
  int tuple(const std::vector<int>& elements);
  int get_tuple_element(int tuple, int64_t index, ElemType t, std::vector<int64_t> dims);

  // The graph in the release's form (node_feat, node_opcode, edge_index); name is the stem.
  void fill(GraphBase& g) const;

 private:
  std::vector<HloNode> nodes_;
  std::vector<int64_t> starts_;
  int next_parameter_ = 0;
};

// One node's 140 features.
std::array<float, kNodeFeatDim> node_features(const HloNode& n);

// Window of a 2-d convolution or pool: size k, stride s, "same" padding.
Window square_window(int64_t k, int64_t s, bool reversed = false);

}  // namespace tpuperf::synth
