// An HloModuleProto as the release's graph: nodes are the instructions of every
// computation in record order (callees come first, so the order is topological), edges
// run from each instruction to its operands and to the ROOT of every computation it calls
// (upstream hlo_encoder.cc EncodeHloModule; /work/notes/featurizer_spec.md §6).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pipeline/featurize/tuning_records.pb.h"

namespace tpuperf::featurize {

namespace pb = tpuperf::records;

// Instruction ids and computation ids resolved to node positions. With duplicate ids the
// later one wins, as in upstream's hash maps.
class ModuleIndex {
 public:
  explicit ModuleIndex(const pb::HloModuleProto& module);
  int64_t num_nodes() const { return num_nodes_; }
  // The node position of an instruction id, or -1 when no instruction has that id.
  int64_t position(int64_t instruction_id) const;
  // The root instruction id of a computation id; false when no computation has that id.
  bool root_id(int64_t computation_id, int64_t& root) const;
  // The computation at an index of module.computations() for a computation id, or -1.
  int computation_of(int64_t computation_id) const;

 private:
  int64_t num_nodes_ = 0;
  std::unordered_map<int64_t, int64_t> position_;
  std::unordered_map<int64_t, int64_t> root_id_;
  std::unordered_map<int64_t, int> computation_;
};

struct HloGraph {
  int64_t num_nodes = 0;
  std::vector<float> node_feat;       // num_nodes x 140
  std::vector<uint8_t> node_opcode;   // num_nodes
  std::vector<int64_t> edge_index;    // rows [u, v] (u consumes v), sorted
  std::vector<int64_t> node_splits;   // layout only: 0, ends of cluster/while/cond computations, n
};

// Throws Error (naming the instruction and computation) when an operand or a called
// computation is not in the module, or when the module would give a self-edge or the
// same edge twice (upstream CHECK-fails on both, so no release file has them).
HloGraph encode_module(const pb::HloModuleProto& module);

// The instruction's operand ids sorted ascending without repeats (upstream DeduplicateField).
std::vector<int64_t> distinct_operand_ids(const pb::HloInstructionProto& inst);

// "'name' (id N) in computation 'comp'": how messages name an instruction.
std::string describe(const pb::HloInstructionProto& inst, const pb::HloComputationProto& comp);

}  // namespace tpuperf::featurize
