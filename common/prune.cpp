#include "common/prune.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace tpuperf {

namespace {

// Undirected adjacency in CSR form: neighbours of u are adj[offset[u] .. offset[u+1]).
struct Csr {
  std::vector<int64_t> offset, adj;
};

Csr undirected_csr(int64_t n, const std::vector<int64_t>& edge_index) {
  const size_t m = edge_index.size() / 2;
  Csr g;
  g.offset.assign(static_cast<size_t>(n) + 1, 0);
  for (int64_t x : edge_index) {
    if (x < 0 || x >= n)
      throw Error("edge endpoint " + std::to_string(x) + " outside [0, " + std::to_string(n) + ")",
                  "", "edge_index");
    ++g.offset[x + 1];
  }
  for (int64_t u = 0; u < n; ++u) g.offset[u + 1] += g.offset[u];
  g.adj.resize(2 * m);
  std::vector<int64_t> fill(g.offset.begin(), g.offset.end() - 1);
  for (size_t e = 0; e < m; ++e) {
    int64_t u = edge_index[2 * e], v = edge_index[2 * e + 1];
    g.adj[fill[u]++] = v;
    g.adj[fill[v]++] = u;
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

}  // namespace

std::vector<uint8_t> nodes_within_hops(int64_t num_nodes, const std::vector<int64_t>& edge_index,
                                       const std::vector<int64_t>& seeds, int hops) {
  if (hops < 0) return std::vector<uint8_t>(static_cast<size_t>(num_nodes), 1);
  const Csr csr = undirected_csr(num_nodes, edge_index);
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

PrunedGraph prune_layout(const LayoutGraph& g, int hops) {
  if (hops < kNoPruning)
    throw Error("prune hops must be >= -1, got " + std::to_string(hops), g.name,
                "preprocess.prune_hops");
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
