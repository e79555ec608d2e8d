#include "pipeline/featurize/extra_features.h"

#include <algorithm>
#include <string_view>

#include "pipeline/featurize/hlo_graph.h"
#include "pipeline/featurize/row_writer.h"

namespace tpuperf::featurize {

namespace {

namespace pb = tpuperf::records;

constexpr std::string_view kFusionKinds[] = {"kLoop", "kInput", "kOutput", "kCustom"};
constexpr std::string_view kDirections[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
constexpr int32_t kTupleType = 13;

// Bits per element of an xla.PrimitiveType; 0 for tuple, opaque, token and unknown types.
int64_t element_bits(int32_t type) {
  switch (type) {
    case 30: case 31: return 1;                                   // S1 U1
    case 26: case 27: return 2;                                   // S2 U2
    case 21: case 22: case 32: return 4;                          // S4 U4 F4E2M1FN
    case 1: case 2: case 6:                                       // PRED S8 U8
    case 19: case 20: case 23: case 24: case 25: case 28: case 29: case 33: return 8;  // F8*
    case 3: case 7: case 10: case 16: return 16;                  // S16 U16 F16 BF16
    case 4: case 8: case 11: return 32;                           // S32 U32 F32
    case 5: case 9: case 12: case 15: return 64;                  // S64 U64 F64 C64
    case 18: return 128;                                          // C128
    default: return 0;
  }
}

struct ShapeStats {
  uint64_t bytes = 0;  // unsigned: a lying shape may overflow, but never into undefined behaviour
  int64_t leaves = 0, max_leaf_rank = -1;
};

uint64_t array_bytes(const pb::ShapeProto& shape) {
  return (static_cast<uint64_t>(wrapping_product(shape.dimensions())) * element_bits(shape.element_type()) + 7) / 8;
}

// Sizes of a shape's array leaves; a tuple is walked recursively.
void add_leaves(const pb::ShapeProto& shape, ShapeStats& s) {
  for (const auto& member : shape.tuple_shapes()) {
    if (member.element_type() == kTupleType || member.tuple_shapes_size() > 0) {
      add_leaves(member, s);
      continue;
    }
    ++s.leaves;
    s.max_leaf_rank = std::max<int64_t>(s.max_leaf_rank, member.dimensions_size());
    s.bytes += array_bytes(member);
  }
}

ShapeStats shape_stats(const pb::ShapeProto& shape) {
  ShapeStats s;
  if (shape.element_type() == kTupleType || shape.tuple_shapes_size() > 0) {
    add_leaves(shape, s);
  } else {
    s.bytes = array_bytes(shape);
  }
  return s;
}

template <size_t N>
void one_hot(RowWriter& w, const std::string_view (&names)[N], const std::string& value) {
  for (std::string_view name : names) w.put(value == name ? 1 : 0);
}

// What the columns need beyond one instruction: who is where, users, call graph sizes.
class ModuleFacts {
 public:
  explicit ModuleFacts(const pb::HloModuleProto& module) : module_(module), index_(module) {
    for (int c = 0; c < module.computations_size(); ++c)
      for (const auto& inst : module.computations(c).instructions()) nodes_.push_back(&inst);
    users_.assign(nodes_.size(), 0);
    for (const auto* inst : nodes_)
      for (int64_t id : distinct_operand_ids(*inst)) ++users_[index_.position(id)];
    seen_.assign(module.computations_size(), 0);
  }

  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }
  int64_t users(int64_t position) const { return users_[position]; }
  // The operand_ids()[k]-th instruction, or null when there is no operand k.
  const pb::HloInstructionProto* operand(const pb::HloInstructionProto& inst, int k) const {
    return k < inst.operand_ids_size() ? nodes_[index_.position(inst.operand_ids(k))] : nullptr;
  }

  int64_t direct_callee_size(const pb::HloInstructionProto& inst) const {
    int64_t n = 0;
    for (int64_t id : inst.called_computation_ids())
      n += module_.computations(index_.computation_of(id)).instructions_size();
    return n;
  }

  // Instructions of every computation reachable through calls, each computation once.
  int64_t reachable_size(const pb::HloInstructionProto& inst) {
    ++stamp_;
    int64_t n = 0;
    std::vector<int> stack;
    for (int64_t id : inst.called_computation_ids()) stack.push_back(index_.computation_of(id));
    while (!stack.empty()) {
      int c = stack.back();
      stack.pop_back();
      if (seen_[c] == stamp_) continue;
      seen_[c] = stamp_;
      const auto& comp = module_.computations(c);
      n += comp.instructions_size();
      for (const auto& callee_inst : comp.instructions())
        for (int64_t id : callee_inst.called_computation_ids()) stack.push_back(index_.computation_of(id));
    }
    return n;
  }

 private:
  const pb::HloModuleProto& module_;
  ModuleIndex index_;
  std::vector<const pb::HloInstructionProto*> nodes_;
  std::vector<int64_t> users_;
  std::vector<int64_t> seen_;
  int64_t stamp_ = 0;
};

void operand_columns(RowWriter& w, const pb::HloInstructionProto* a, const pb::HloInstructionProto* b) {
  for (const auto* op : {a, b}) {  // 22..33
    if (op) w.leading(op->shape().layout().minor_to_major(), 6, -1);
    else w.leading(std::vector<int64_t>{}, 6, -1);
  }
  for (const auto* op : {a, b}) w.put(op ? wrapping_product(op->shape().dimensions()) : -1);  // 34, 35
  for (const auto* op : {a, b}) w.put(op ? op->shape().element_type() : -1);                 // 36, 37
}

void shape_columns(RowWriter& w, const pb::ShapeProto& shape) {  // 13..21
  ShapeStats s = shape_stats(shape);
  w.put(shape.dimensions_size());
  w.put(static_cast<int64_t>(s.bytes));
  w.put(s.leaves);
  w.put(s.max_leaf_rank);
  w.put(std::count(shape.is_dynamic_dimension().begin(), shape.is_dynamic_dimension().end(), true));
  const auto& tiles = shape.layout().tiles();
  w.put(tiles.size());
  int dims = tiles.empty() ? 0 : tiles[0].dimensions_size();
  w.put(dims >= 2 ? tiles[0].dimensions(dims - 2) : 0);
  w.put(dims >= 1 ? tiles[0].dimensions(dims - 1) : 0);
  w.put(shape.layout().memory_space());
}

void operation_columns(RowWriter& w, const pb::HloInstructionProto& inst) {  // 38..55
  w.leading(inst.convolution_dimension_numbers().output_spatial_dimensions(), 4);
  const auto& dot = inst.dot_dimension_numbers();
  w.put(dot.lhs_contracting_dimensions().empty() ? -1 : dot.lhs_contracting_dimensions(0));
  w.put(dot.rhs_contracting_dimensions().empty() ? -1 : dot.rhs_contracting_dimensions(0));
  w.put(dot.lhs_batch_dimensions_size());
  uint64_t interior = 0;  // wraps like the main block's sums
  for (const auto& d : inst.padding_config().dimensions()) interior += static_cast<uint64_t>(d.interior_padding());
  w.put(static_cast<int64_t>(interior));
  one_hot(w, kDirections, inst.comparison_direction());
  const auto& precision = inst.precision_config().operand_precision();
  w.put(precision.empty() ? 0 : *std::max_element(precision.begin(), precision.end()));
  w.put(inst.control_predecessor_ids_size());
  w.put(inst.opcode() == "custom-call" && !inst.custom_call_target().empty() ? 1 : 0);
  w.put(inst.replica_groups_size());
}

}  // namespace

std::vector<float> extra_node_features(const pb::HloModuleProto& module) {
  ModuleFacts facts(module);
  std::vector<float> out(static_cast<size_t>(facts.num_nodes()) * kExtraNodeFeatDim);
  int64_t position = 0;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp.instructions()) {
      float* row = out.data() + position * kExtraNodeFeatDim;
      RowWriter w(row);
      one_hot(w, kFusionKinds, inst.fusion_kind());                                  // 0..3
      w.put(inst.opcode() == "get-tuple-element" ? inst.tuple_index() : -1);         // 4
      w.put(inst.operand_ids_size());                                                // 5
      w.put(static_cast<int64_t>(distinct_operand_ids(inst).size()));              // 6
      w.put(facts.users(position));                                                  // 7
      w.put(inst.called_computation_ids_size());                                     // 8
      w.put(facts.direct_callee_size(inst));                                         // 9
      w.put(facts.reachable_size(inst));                                             // 10
      w.put(comp.id() == module.entry_computation_id() ? 1 : 0);                     // 11
      w.put(comp.is_fusion_computation() ? 1 : 0);                                   // 12
      shape_columns(w, inst.shape());                                                // 13..21
      operand_columns(w, facts.operand(inst, 0), facts.operand(inst, 1));            // 22..37
      operation_columns(w, inst);                                                    // 38..55
      if (w.position() != row + kExtraNodeFeatDim) throw std::logic_error("extra feature row is not 56 wide");
      ++position;
    }
  }
  return out;
}

}  // namespace tpuperf::featurize
