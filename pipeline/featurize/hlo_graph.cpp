#include "pipeline/featurize/hlo_graph.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "pipeline/featurize/node_features.h"
#include "pipeline/featurize/opcodes.h"

namespace tpuperf::featurize {

namespace {

// node_splits: 0, then after every computation whose name contains "cluster", "while" or
// "cond" (case-sensitive substrings, so "conditional" and "second" match too, as upstream)
// the running instruction count, then the total unless it is already last.
std::vector<int64_t> computation_splits(const pb::HloModuleProto& module) {
  std::vector<int64_t> splits = {0};
  int64_t count = 0;
  for (const auto& comp : module.computations()) {
    count += comp.instructions_size();
    const std::string& name = comp.name();
    for (const char* marker : {"cluster", "while", "cond"}) {
      if (name.find(marker) != std::string::npos) {
        splits.push_back(count);
        break;
      }
    }
  }
  if (splits.back() < count) splits.push_back(count);
  return splits;
}

// The producers of node u: its distinct operands in ascending id order, then the ROOT of
// each called computation in record order (not deduplicated).
void add_edges(const pb::HloInstructionProto& inst, const pb::HloComputationProto& comp,
               int64_t u, const ModuleIndex& index, std::vector<std::pair<int64_t, int64_t>>& edges) {
  for (int64_t id : distinct_operand_ids(inst)) {
    int64_t v = index.position(id);
    if (v < 0)
      throw Error(fmt::format("instruction {}: operand id {} is no instruction of the module",
                              describe(inst, comp), id));
    edges.emplace_back(u, v);
  }
  for (int64_t c : inst.called_computation_ids()) {
    int64_t root = 0;
    if (!index.root_id(c, root))
      throw Error(fmt::format("instruction {}: called computation id {} is no computation of the "
                              "module",
                              describe(inst, comp), c));
    int64_t v = index.position(root);
    if (v < 0)
      throw Error(fmt::format("instruction {}: the root id {} of called computation {} is no "
                              "instruction of the module",
                              describe(inst, comp), root, c));
    edges.emplace_back(u, v);
  }
}

std::vector<int64_t> sorted_edge_rows(std::vector<std::pair<int64_t, int64_t>> edges) {
  for (const auto& [u, v] : edges)
    if (u == v) throw Error(fmt::format("node {} would consume itself (a self-edge)", u));
  std::sort(edges.begin(), edges.end());
  auto dup = std::adjacent_find(edges.begin(), edges.end());
  if (dup != edges.end())
    throw Error(fmt::format("edge [{}, {}] occurs twice (an instruction calls one computation "
                            "twice; upstream's featurizer fails on such modules)",
                            dup->first, dup->second));
  std::vector<int64_t> rows;
  rows.reserve(2 * edges.size());
  for (const auto& [u, v] : edges) {
    rows.push_back(u);
    rows.push_back(v);
  }
  return rows;
}

}  // namespace

ModuleIndex::ModuleIndex(const pb::HloModuleProto& module) {
  for (int c = 0; c < module.computations_size(); ++c) {
    const auto& comp = module.computations(c);
    root_id_[comp.id()] = comp.root_id();
    computation_[comp.id()] = c;
    for (const auto& inst : comp.instructions()) position_[inst.id()] = num_nodes_++;
  }
}

int64_t ModuleIndex::position(int64_t instruction_id) const {
  auto it = position_.find(instruction_id);
  return it == position_.end() ? -1 : it->second;
}

bool ModuleIndex::root_id(int64_t computation_id, int64_t& root) const {
  auto it = root_id_.find(computation_id);
  if (it == root_id_.end()) return false;
  root = it->second;
  return true;
}

int ModuleIndex::computation_of(int64_t computation_id) const {
  auto it = computation_.find(computation_id);
  return it == computation_.end() ? -1 : it->second;
}

std::vector<int64_t> distinct_operand_ids(const pb::HloInstructionProto& inst) {
  std::vector<int64_t> ids(inst.operand_ids().begin(), inst.operand_ids().end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string describe(const pb::HloInstructionProto& inst, const pb::HloComputationProto& comp) {
  return fmt::format("'{}' (id {}) in computation '{}'", inst.name(), inst.id(), comp.name());
}

HloGraph encode_module(const pb::HloModuleProto& module) {
  ModuleIndex index(module);
  HloGraph g;
  g.num_nodes = index.num_nodes();
  g.node_feat.resize(static_cast<size_t>(g.num_nodes) * kNodeFeatDim);
  g.node_opcode.reserve(static_cast<size_t>(g.num_nodes));
  std::vector<std::pair<int64_t, int64_t>> edges;
  int64_t u = 0;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp.instructions()) {
      g.node_opcode.push_back(opcode_id(inst.opcode()));
      instruction_features(inst, comp, g.node_feat.data() + u * kNodeFeatDim);
      add_edges(inst, comp, u, index, edges);
      ++u;
    }
  }
  g.edge_index = sorted_edge_rows(std::move(edges));
  g.node_splits = computation_splits(module);
  return g;
}

}  // namespace tpuperf::featurize
