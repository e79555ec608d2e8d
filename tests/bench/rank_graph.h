// The bench binaries' one conversion: a release file's graph (common/graph/graph.h) as the
// ranker library's RankGraph (its arrays copied; node_splits left empty, which the library
// reads as one computation).
#pragma once

#include <tpuperf/ranker.h>

#include "common/graph/graph.h"

inline tpuperf::RankGraph rank_graph(const tpuperf::GraphBase& g) {
  tpuperf::RankGraph r;
  r.name = g.name;
  r.num_nodes = g.num_nodes;
  r.node_feat = g.node_feat;
  r.node_opcode = g.node_opcode;
  r.edge_index = g.edge_index;
  return r;
}
