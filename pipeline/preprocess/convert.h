// One source file -> one ProcessedGraph, exactly as tpuperf-preprocess stores it: loaded
// and validated, deduplicated (train/valid), pruned (layout), re-padded, configs packed.
// Node features stay untransformed (the fitted transform is applied when graphs are
// read), so a stored graph can be recomputed from its source and compared.
#pragma once

#include <string>

#include "common/formats/npz_reader.h"
#include "common/graph/processed_graph.h"
#include "pipeline/preprocess/settings.h"

namespace tpuperf {

// Throws Error (file, key, reason) when the source is bad. fold is stored as given.
// buffer: where members are inflated (NpzBuffer, common/formats/npz_reader.h); none: memory freed on return.
ProcessedGraph convert_source(const std::string& path, const std::string& collection,
                              const std::string& split, int fold, const PreprocessSettings& s,
                              NpzBuffer* buffer = nullptr);

// Names of the fields in which two processed graphs differ (empty: identical).
std::vector<std::string> diff_graphs(const ProcessedGraph& a, const ProcessedGraph& b);

}  // namespace tpuperf
