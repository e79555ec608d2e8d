#include "common/graph/prune.h"

#include <algorithm>
#include <string>

#include "common/base/error.h"

namespace tpuperf {

namespace {

// Adjacency in CSR form: neighbours of u are adj[offset[u] .. offset[u+1]).
struct Csr {
  std::vector<int64_t> offset, adj;
};

// undirected: each row [u, v] makes u and v neighbours; else v is a neighbour of u only
// (u's producers, in edge order).
Csr csr_of(int64_t n, const std::vector<int64_t>& edge_index, bool undirected) {
  const size_t m = edge_index.size() / 2;
  Csr g;
  g.offset.assign(static_cast<size_t>(n) + 1, 0);
  for (size_t i = 0; i < 2 * m; ++i) {
    const int64_t x = edge_index[i];
    if (x < 0 || x >= n)
      throw Error("edge endpoint " + std::to_string(x) + " outside [0, " + std::to_string(n) + ")",
                  "", "edge_index");
    if (undirected || i % 2 == 0) ++g.offset[x + 1];
  }
  for (int64_t u = 0; u < n; ++u) g.offset[u + 1] += g.offset[u];
  g.adj.resize(g.offset.back());
  std::vector<int64_t> fill(g.offset.begin(), g.offset.end() - 1);
  for (size_t e = 0; e < m; ++e) {
    const int64_t u = edge_index[2 * e], v = edge_index[2 * e + 1];
    g.adj[fill[u]++] = v;
    if (undirected) g.adj[fill[v]++] = u;
  }
  return g;
}

template <typename T>
std::vector<T> gather_rows(const std::vector<T>& src, const std::vector<int64_t>& rows,
                           size_t width) {
  std::vector<T> out(rows.size() * width);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(src.begin() + static_cast<ptrdiff_t>(rows[i] * width), width,
                out.begin() + static_cast<ptrdiff_t>(i * width));
  return out;
}

void check_shapes(const LayoutGraph& g) {
  const size_t n = static_cast<size_t>(g.num_nodes);
  if (g.node_feat.size() != n * kNodeFeatDim)
    throw Error("node_feat has " + std::to_string(g.node_feat.size()) + " values, expected " +
                    std::to_string(n * kNodeFeatDim), g.name, "node_feat");
  if (g.node_opcode.size() != n)
    throw Error("node_opcode length differs from the number of nodes", g.name, "node_opcode");
  if (g.edge_index.size() % 2 != 0)
    throw Error("edge_index does not hold pairs", g.name, "edge_index");
}

// Appends to `out` the bridges of kept node u: a BFS over u's pruned producers, at most
// max_pruned deep, stopping at kept nodes. seen[x] == u + 1 marks what u's search reached
// (its direct producers first, so a pair already joined by an edge gets no bridge).
void bridges_of(int64_t u, const Csr& producers, const std::vector<uint8_t>& keep, int max_pruned,
                std::vector<int64_t>& seen, std::vector<int64_t>& out) {
  const int64_t mark = u + 1;
  std::vector<std::pair<int64_t, int>> queue;  // (pruned node, pruned nodes on its path)
  std::vector<int64_t> found;
  seen[u] = mark;
  for (int64_t k = producers.offset[u]; k < producers.offset[u + 1]; ++k) {
    const int64_t v = producers.adj[k];
    if (seen[v] == mark) continue;
    seen[v] = mark;
    if (!keep[v]) queue.emplace_back(v, 1);
  }
  // Breadth first, so a node is first reached by its shortest pruned path.
  for (size_t head = 0; head < queue.size(); ++head) {
    const auto [x, depth] = queue[head];
    for (int64_t k = producers.offset[x]; k < producers.offset[x + 1]; ++k) {
      const int64_t y = producers.adj[k];
      if (seen[y] == mark || (!keep[y] && depth == max_pruned)) continue;
      seen[y] = mark;
      if (keep[y])
        found.push_back(y);
      else
        queue.emplace_back(y, depth + 1);
    }
  }
  std::sort(found.begin(), found.end());
  for (int64_t y : found) {
    out.push_back(u);
    out.push_back(y);
  }
}

}  // namespace

std::vector<int64_t> bridge_edges(int64_t num_nodes, const std::vector<int64_t>& edge_index,
                                  const std::vector<uint8_t>& keep, int max_pruned) {
  if (keep.size() != static_cast<size_t>(num_nodes))
    throw Error("keep marks " + std::to_string(keep.size()) + " nodes, expected " + std::to_string(num_nodes));
  std::vector<int64_t> out;
  if (max_pruned <= 0) return out;
  const Csr producers = csr_of(num_nodes, edge_index, false);
  std::vector<int64_t> seen(static_cast<size_t>(num_nodes), 0);
  for (int64_t u = 0; u < num_nodes; ++u)
    if (keep[u]) bridges_of(u, producers, keep, max_pruned, seen, out);
  return out;
}

std::vector<uint8_t> nodes_within_hops(int64_t num_nodes, const std::vector<int64_t>& edge_index,
                                       const std::vector<int64_t>& seeds, int hops) {
  if (hops < 0) return std::vector<uint8_t>(static_cast<size_t>(num_nodes), 1);
  const Csr csr = csr_of(num_nodes, edge_index, true);
  std::vector<int> dist(static_cast<size_t>(num_nodes), -1);
  std::vector<int64_t> queue;
  queue.reserve(static_cast<size_t>(num_nodes));
  for (int64_t s : seeds) {
    if (s < 0 || s >= num_nodes)
      throw Error("configurable node " + std::to_string(s) + " outside [0, " +
                      std::to_string(num_nodes) + ")", "", "node_config_ids");
    if (dist[s] < 0) {
      dist[s] = 0;
      queue.push_back(s);
    }
  }
  // Multi-source BFS: a node's first visit is at its distance to the nearest seed.
  for (size_t head = 0; head < queue.size(); ++head) {
    const int64_t u = queue[head];
    if (dist[u] >= hops) continue;
    for (int64_t k = csr.offset[u]; k < csr.offset[u + 1]; ++k) {
      const int64_t v = csr.adj[k];
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  std::vector<uint8_t> keep(static_cast<size_t>(num_nodes));
  for (int64_t u = 0; u < num_nodes; ++u) keep[u] = dist[u] >= 0;
  return keep;
}

PrunedGraph prune_layout(const LayoutGraph& g, const PruneRule& rule) {
  const int hops = rule.hops;
  if (hops < kNoPruning)
    throw Error("prune hops must be >= -1, got " + std::to_string(hops), g.name,
                "preprocess.prune_hops");
  if (rule.bridges < 0)
    throw Error("prune bridges must be >= 0, got " + std::to_string(rule.bridges), g.name,
                "preprocess.prune_bridges");
  if (hops >= 0 && g.node_config_ids.empty())
    throw Error("no configurable node: pruning would remove every node", g.name,
                "node_config_ids");
  check_shapes(g);
  const int64_t n = g.num_nodes;
  std::vector<uint8_t> keep;
  try {
    keep = nodes_within_hops(n, g.edge_index, g.node_config_ids, hops);
  } catch (Error& e) {
    e.with_file(g.name);
    throw;
  }

  PrunedGraph out;
  out.nodes_before = n;
  out.edges_before = g.num_edges();
  // new_index[u] = kept nodes before u; also the split mapping for boundary u.
  std::vector<int64_t> new_index(static_cast<size_t>(n) + 1, 0);
  for (int64_t u = 0; u < n; ++u) {
    new_index[u + 1] = new_index[u] + keep[u];
    if (keep[u]) out.kept_nodes.push_back(u);
  }
  out.num_nodes = static_cast<int64_t>(out.kept_nodes.size());
  out.node_feat = gather_rows(g.node_feat, out.kept_nodes, kNodeFeatDim);
  out.node_opcode = gather_rows(g.node_opcode, out.kept_nodes, 1);

  for (size_t e = 0; e < g.edge_index.size(); e += 2) {
    const int64_t u = g.edge_index[e], v = g.edge_index[e + 1];
    if (keep[u] && keep[v]) {
      out.edge_index.push_back(new_index[u]);
      out.edge_index.push_back(new_index[v]);
    }
  }
  if (hops >= 1) {
    const std::vector<int64_t> bridges = bridge_edges(n, g.edge_index, keep, rule.bridges);
    for (int64_t x : bridges) out.edge_index.push_back(new_index[x]);
    out.bridges = static_cast<int64_t>(bridges.size() / 2);
  }
  out.node_config_ids.reserve(g.node_config_ids.size());
  for (int64_t id : g.node_config_ids) out.node_config_ids.push_back(new_index[id]);
  out.node_splits.reserve(g.node_splits.size());
  for (int64_t b : g.node_splits) {
    if (b < 0 || b > n)
      throw Error("node split " + std::to_string(b) + " outside [0, " + std::to_string(n) + "]",
                  g.name, "node_splits");
    out.node_splits.push_back(new_index[b]);
  }
  return out;
}

}  // namespace tpuperf
