#include "common/graph/config_dedup.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/base/error.h"
#include "common/base/hash.h"

namespace tpuperf {

DedupPolicy parse_dedup_policy(const std::string& name) {
  if (name == "min") return DedupPolicy::Min;
  if (name == "mean") return DedupPolicy::Mean;
  if (name == "first") return DedupPolicy::First;
  throw Error("unknown dedup policy '" + name + "' (expected min, mean or first)", "",
              "preprocess.dedup");
}

const char* dedup_policy_name(DedupPolicy policy) {
  switch (policy) {
    case DedupPolicy::Min: return "min";
    case DedupPolicy::Mean: return "mean";
    case DedupPolicy::First: return "first";
  }
  return "?";
}

namespace {

// Running merge of one group of identical rows.
struct Group {
  int64_t first_row;
  uint64_t hash;
  int64_t first_runtime, min_runtime, sum_runtime, count;
};

int64_t rounded_mean(int64_t sum, int64_t count) {
  if (sum >= 0) return (sum + count / 2) / count;
  return -((-sum + count / 2) / count);
}

int64_t merged_runtime(const Group& g, DedupPolicy policy) {
  switch (policy) {
    case DedupPolicy::Min: return g.min_runtime;
    case DedupPolicy::Mean: return rounded_mean(g.sum_runtime, g.count);
    case DedupPolicy::First: return g.first_runtime;
  }
  return g.first_runtime;
}

void add_to_group(Group& g, int64_t runtime) {
  g.min_runtime = std::min(g.min_runtime, runtime);
  // Sums of real runtimes (ns, <= 1e5 copies) stay far below 2^63; overflow means bad data.
  if (__builtin_add_overflow(g.sum_runtime, runtime, &g.sum_runtime))
    throw Error("sum of duplicate runtimes overflows int64", "", "config_runtime");
  ++g.count;
}

uint64_t hash_row(const uint8_t* row, size_t row_bytes) {
  Hasher h;
  h.update(row, row_bytes);
  return h.digest();
}

// The open-addressing table of distinct rows: a power of two at least this large.
constexpr size_t kMinTableSlots = 16;

size_t table_capacity(int64_t num_rows) {
  size_t cap = kMinTableSlots;
  // Load factor <= 1/2 keeps linear probing short.
  while (cap < 2 * static_cast<size_t>(num_rows)) cap *= 2;
  return cap;
}

}  // namespace

DedupResult dedup_rows(const void* rows, size_t row_bytes, int64_t num_rows,
                       const int64_t* runtime, DedupPolicy policy) {
  const auto* base = static_cast<const uint8_t*>(rows);
  const size_t cap = table_capacity(num_rows);
  const size_t mask = cap - 1;
  std::vector<int64_t> slots(cap, -1);  // group index per slot, -1 = empty
  std::vector<Group> groups;
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = base + static_cast<size_t>(r) * row_bytes;
    const uint64_t h = hash_row(row, row_bytes);
    size_t s = static_cast<size_t>(h) & mask;
    for (;; s = (s + 1) & mask) {
      int64_t gi = slots[s];
      if (gi < 0) {
        slots[s] = static_cast<int64_t>(groups.size());
        groups.push_back({r, h, runtime[r], runtime[r], runtime[r], 1});
        break;
      }
      Group& g = groups[gi];
      // Equal hashes are confirmed bytewise: a collision never merges different configs.
      if (g.hash == h &&
          std::memcmp(base + static_cast<size_t>(g.first_row) * row_bytes, row, row_bytes) == 0) {
        add_to_group(g, runtime[r]);
        break;
      }
    }
  }
  DedupResult out;
  out.kept.reserve(groups.size());
  out.runtime.reserve(groups.size());
  for (const Group& g : groups) {
    out.kept.push_back(g.first_row);
    out.runtime.push_back(merged_runtime(g, policy));
  }
  out.removed = num_rows - static_cast<int64_t>(groups.size());
  return out;
}

DedupResult dedup_tile(const TileGraph& g, DedupPolicy policy) {
  const int64_t c = g.num_configs();
  if (g.config_feat.size() != static_cast<size_t>(c) * kTileConfigDim ||
      g.config_runtime_normalizers.size() != static_cast<size_t>(c))
    throw Error("config arrays disagree on the number of configs", g.name, "config_feat");
  DedupResult out = dedup_rows(g.config_feat.data(), kTileConfigDim * sizeof(float), c,
                               g.config_runtime.data(), policy);
  out.normalizers.reserve(out.kept.size());
  // Copies carry equal normalizers in the real files; the kept row's stands for all.
  for (int64_t k : out.kept) out.normalizers.push_back(g.config_runtime_normalizers[k]);
  return out;
}

DedupResult dedup_layout(const LayoutGraph& g, DedupPolicy policy) {
  const int64_t c = g.num_configs();
  const size_t row_bytes = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
  if (g.node_config_feat.size() != static_cast<size_t>(c) * row_bytes)
    throw Error("node_config_feat size does not match configs x nc x 18", g.name,
                "node_config_feat");
  return dedup_rows(g.node_config_feat.data(), row_bytes, c, g.config_runtime.data(), policy);
}

DedupResult identity_dedup(const std::vector<int64_t>& runtime) {
  DedupResult out;
  out.kept.resize(runtime.size());
  for (size_t i = 0; i < runtime.size(); ++i) out.kept[i] = static_cast<int64_t>(i);
  out.runtime = runtime;
  return out;
}

}  // namespace tpuperf
