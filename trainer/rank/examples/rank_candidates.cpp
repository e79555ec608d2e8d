// How an autotuner asks a trained tpuperf run which configs to measure first.
//
//   rank_candidates RUN_DIR COLLECTION FILE.npz   ranks a release-format file's configs
//   rank_candidates RUN_DIR tile:xla               ranks candidates built in memory
//
// Prints the configs best first, one per line: "<config> <score>".
#include <tpuperf/ranker.h>

#include <cstdio>
#include <exception>

namespace {

// A three-node kernel (parameter -> convolution -> root) with four candidate tile sizes,
// as a compiler would hand them over: the release's 140 node features per node, HLO
// opcode ids, edges [consumer, producer] and 24 config features per candidate.
tpuperf::Ranking rank_in_memory(const tpuperf::Ranker& ranker) {
  tpuperf::RankGraph graph;
  graph.name = "my_conv_fusion";
  graph.num_nodes = 3;
  graph.node_feat.assign(3 * 140, 0.0f);
  for (int node = 0; node < 3; ++node) graph.node_feat[node * 140 + 21] = 128.0f;  // an output dimension
  graph.node_opcode = {63, 26, 63};  // parameter, convolution, parameter (HLO opcode ids)
  graph.edge_index = {1, 0, 1, 2};   // the convolution reads both parameters
  tpuperf::TileCandidates candidates;
  for (float tile : {8.0f, 16.0f, 32.0f, 64.0f})
    for (int f = 0; f < 24; ++f) candidates.config_feat.push_back(f < 6 ? tile : 1.0f);
  return ranker.rank(graph, candidates);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s RUN_DIR COLLECTION [FILE.npz]\n", argv[0]);
    return 2;
  }
  try {
    const tpuperf::Ranker ranker(argv[1], argv[2]);
    const tpuperf::Ranking r = argc == 4 ? ranker.rank_file(argv[3]) : rank_in_memory(ranker);
    std::fprintf(stderr, "%s: %zu configs ranked by %d fold models of %s\n", r.name.c_str(), r.order.size(),
                 r.folds, r.collection.c_str());
    for (int64_t c : r.order) std::printf("%lld %.6f\n", static_cast<long long>(c), r.score[c]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 2;
  }
  return 0;
}
