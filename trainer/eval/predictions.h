// The scores that fold models give the configs of one graph, and their flat binary form
// for moving them between MPI ranks (MPI_Gatherv of raw bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// Scores follow the project's convention (common/metrics/metrics.h): LOWER = predicted FASTER.
struct GraphScores {
  std::string collection;  // collection id, e.g. "tile:xla", "layout:nlp:random"
  std::string split;       // "valid" or "test" (or "train" for diagnostics)
  std::string name;        // file stem
  int model = -1;          // fold index of the model that produced it; -1 for the ensemble
  std::vector<int64_t> config_index;  // which configs of the graph were scored
  std::vector<double> score;          // score[i] belongs to config_index[i]

  std::string key() const { return collection + ":" + split + ":" + name; }
};

// Flat little-endian-host bytes: magic, version, count, then the records. The buffers of
// several ranks concatenated (as MPI_Gatherv leaves them) deserialize to the concatenated
// vectors, so the gatherer needs no displacements to parse them.
// Throws Error when a record's config_index and score sizes differ.
std::string serialize_scores(const std::vector<GraphScores>& scores);
// Throws Error (naming the byte offset) on a bad magic, an unknown version, or a
// truncated or over-long buffer.
std::vector<GraphScores> deserialize_scores(const std::string& bytes);

}  // namespace tpuperf
