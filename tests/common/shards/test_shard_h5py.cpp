// The shard format as other tools see it: h5py (Debian's, under /usr/bin/python3) opens
// shards written by ShardWriter and checks names, shapes, dtypes, filters, CSR offsets and
// values recomputed from the same formulas in Python.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/graph/graph.h"
#include "common/shards/shard_writer.h"

namespace tpuperf {
namespace {

namespace fs = std::filesystem;

constexpr int kF = 5;

// Every value follows a formula the Python side repeats; all are exact in float32.
ProcessedGraph formula_graph(const std::string& collection, int gi, const std::string& name,
                             int64_t n, int64_t e, int64_t c) {
  ProcessedGraph g;
  g.collection = collection;
  g.split = "valid";
  g.name = name;
  g.fold = gi - 1;
  g.num_nodes = n;
  g.num_node_feat = kF;
  for (int64_t r = 0; r < n; ++r) {
    for (int j = 0; j < kF; ++j) g.node_feat.push_back(static_cast<float>(gi * 1000 + r % 4096) + j * 0.25f);
    g.node_opcode.push_back(static_cast<uint8_t>((gi * 7 + r) % 121));
  }
  for (int64_t k = 0; k < e; ++k) {
    g.edge_index.push_back(static_cast<int32_t>((k + 1) % n));
    g.edge_index.push_back(static_cast<int32_t>(k % n));
  }
  for (int64_t k = 0; k < c; ++k) g.config_runtime.push_back(10000000000LL * gi + 3 * k + 1);
  g.configs_before = c + gi;
  g.nodes_before = n + 2 * gi;
  g.edges_before = e + 3 * gi;
  return g;
}

ProcessedGraph tile_graph(int gi, const std::string& name, int64_t n, int64_t e, int64_t c) {
  ProcessedGraph g = formula_graph("tile:xla", gi, name, n, e, c);
  for (int64_t k = 0; k < c; ++k) {
    g.config_runtime_normalizers.push_back(k + 1);
    for (int j = 0; j < kTileConfigDim; ++j) g.config_feat.push_back(static_cast<float>(k % 1024) + j / 8.f);
  }
  return g;
}

ProcessedGraph layout_graph(int gi, const std::string& name, int64_t n, int64_t e, int64_t c,
                            int64_t nc) {
  ProcessedGraph g = formula_graph("layout:xla:default", gi, name, n, e, c);
  for (int64_t k = 0; k < nc; ++k) g.node_config_ids.push_back(static_cast<int32_t>((3 * k) % n));
  for (int64_t cfg = 0; cfg < c; ++cfg)
    for (int64_t k = 0; k < nc; ++k) {
      int8_t v[18];
      for (int j = 0; j < 18; ++j) v[j] = static_cast<int8_t>((cfg + k + j) % 7 - 1);
      g.node_config_packed.push_back(pack_layout_values(v));
    }
  g.node_splits = {0, n / 2, n};
  return g;
}

const char* kScript = R"PY(
import sys
import h5py
import numpy as np

F = 5
ROOT = {"name", "fold", "num_nodes", "num_edges", "num_configs", "num_config_nodes",
        "configs_before", "nodes_before", "edges_before", "node_offsets", "edge_offsets",
        "config_offsets", "config_node_offsets", "packed_offsets", "split_offsets",
        "node_feat", "node_opcode", "edge_index", "config_runtime", "config_feat",
        "config_runtime_normalizers", "node_config_ids", "node_config_packed", "node_splits"}
DTYPES = {"fold": "int32", "node_feat": "float32", "node_opcode": "uint8",
          "edge_index": "int32", "config_runtime": "int64", "config_feat": "float32",
          "config_runtime_normalizers": "int64", "node_config_ids": "int32",
          "node_config_packed": "uint64", "node_splits": "int64"}
OFFSETS = [("node_offsets", "num_nodes", ["node_feat", "node_opcode"]),
           ("edge_offsets", "num_edges", ["edge_index"]),
           ("config_offsets", "num_configs", ["config_runtime"]),
           ("config_node_offsets", "num_config_nodes", ["node_config_ids"])]


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def check_common(f, collection, names, sizes):
    assert set(f.keys()) == ROOT, sorted(f.keys())
    assert int(f.attrs["schema_version"]) == 2
    assert text(f.attrs["collection"]) == collection, f.attrs["collection"]
    assert text(f.attrs["split"]) == "valid"
    assert text(f.attrs["created_by"]) == "tpuperf-preprocess"
    G = len(names)
    assert int(f.attrs["num_graphs"]) == G
    assert [text(x) for x in f["name"][()]] == names, f["name"][()]
    for k, dt in DTYPES.items():
        assert f[k].dtype == np.dtype(dt), (k, f[k].dtype)
    for k in ["num_nodes", "num_edges", "num_configs", "num_config_nodes", "configs_before",
              "nodes_before", "edges_before"] + [o for o, _, _ in OFFSETS] + ["packed_offsets",
                                                                             "split_offsets"]:
        assert f[k].dtype == np.int64, (k, f[k].dtype)
        assert f[k].shape == ((G + 1,) if k.endswith("_offsets") else (G,)), (k, f[k].shape)
    for name, ds in f.items():
        if isinstance(ds, h5py.Dataset):
            assert ds.chunks is not None and ds.fletcher32, name
            assert ds.compression == "gzip" and ds.shuffle, (name, ds.compression)
    assert list(f["fold"][()]) == [gi - 1 for gi in range(G)]
    for gi, (n, e, c) in enumerate(sizes):
        assert (f["num_nodes"][gi], f["num_edges"][gi], f["num_configs"][gi]) == (n, e, c)
        assert f["configs_before"][gi] == c + gi and f["nodes_before"][gi] == n + 2 * gi
        assert f["edges_before"][gi] == e + 3 * gi
    for off, count, datasets in OFFSETS:
        o = f[off][()]
        assert o[0] == 0 and (np.diff(o) == f[count][()]).all(), off
        for d in datasets:
            assert f[d].shape[0] == o[-1], (d, f[d].shape, o[-1])
    assert f["node_feat"].shape[1] == F and f["edge_index"].shape[1] == 2

    no, eo, co = f["node_offsets"][()], f["edge_offsets"][()], f["config_offsets"][()]
    for gi, (n, e, c) in enumerate(sizes):
        r = np.arange(n)
        want = (gi * 1000 + r % 4096)[:, None] + np.arange(F)[None, :] * 0.25
        assert np.array_equal(f["node_feat"][no[gi]:no[gi + 1]], want.astype(np.float32)), gi
        assert np.array_equal(f["node_opcode"][no[gi]:no[gi + 1]], (gi * 7 + r) % 121), gi
        k = np.arange(e)
        assert np.array_equal(f["edge_index"][eo[gi]:eo[gi + 1]],
                              np.stack([(k + 1) % n, k % n], axis=1)), gi
        assert np.array_equal(f["config_runtime"][co[gi]:co[gi + 1]],
                              10000000000 * gi + 3 * np.arange(c) + 1), gi


def check_tile(path, names, sizes):
    with h5py.File(path, "r") as f:
        check_common(f, "tile:xla", names, sizes)
        co = f["config_offsets"][()]
        assert f["config_feat"].shape == (co[-1], 24)
        assert f["config_runtime_normalizers"].shape == (co[-1],)
        for k in ["node_config_ids", "node_config_packed", "node_splits"]:
            assert f[k].shape == (0,), (k, f[k].shape)
        assert list(f["packed_offsets"][()]) == [0] * (len(names) + 1)
        for gi, (n, e, c) in enumerate(sizes):
            k = np.arange(c)
            want = (k % 1024)[:, None] + np.arange(24)[None, :] / 8.0
            assert np.array_equal(f["config_feat"][co[gi]:co[gi + 1]], want.astype(np.float32))
            assert np.array_equal(f["config_runtime_normalizers"][co[gi]:co[gi + 1]], k + 1)


def check_layout(path, names, sizes, ncs):
    with h5py.File(path, "r") as f:
        check_common(f, "layout:xla:default", names, sizes)
        assert f["config_feat"].shape == (0, 24)
        assert f["config_runtime_normalizers"].shape == (0,)
        cno, po, so = (f["config_node_offsets"][()], f["packed_offsets"][()],
                       f["split_offsets"][()])
        assert list(f["num_config_nodes"][()]) == ncs
        for gi, ((n, e, c), nc) in enumerate(zip(sizes, ncs)):
            assert po[gi + 1] - po[gi] == c * nc
            assert np.array_equal(f["node_config_ids"][cno[gi]:cno[gi + 1]], (3 * np.arange(nc)) % n)
            assert list(f["node_splits"][so[gi]:so[gi + 1]]) == [0, n // 2, n]
            packed = f["node_config_packed"][po[gi]:po[gi + 1]].reshape(c, nc).astype(object)
            for cfg in [0, c // 2, c - 1]:
                for kk in [0, nc - 1]:
                    p = int(packed[cfg, kk])
                    got = [(p // 7 ** j) % 7 - 1 for j in range(18)]
                    assert got == [(cfg + kk + j) % 7 - 1 for j in range(18)], (gi, cfg, kk)
        assert po[-1] == f["node_config_packed"].shape[0]


tile_names = sys.argv[3].split(",")
layout_names = sys.argv[4].split(",")
check_tile(sys.argv[1], tile_names, [(4, 3, 5), (1, 0, 1), (3000, 5000, 700)])
check_layout(sys.argv[2], layout_names, [(6, 5, 3), (2, 0, 1), (2000, 3000, 900)], [2, 1, 10])
print("h5py checks passed")
)PY";

TEST(ShardH5py, H5pyReadsWhatShardWriterWrote) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null"), 0)
      << "h5py/numpy are missing for /usr/bin/python3 (Debian python3-h5py)";
  char tmpl[] = "/tmp/tpuperf_test_h5py_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string tile = dir + "/tile.h5", layout = dir + "/layout.h5", script = dir + "/check.py";
  const std::string long_name = "bert_en_cased_L-12_H-768_A-12_batch_size_16_test";
  {
    ShardWriter w(tile, "tile:xla", "valid", 4);
    w.add(tile_graph(0, "a", 4, 3, 5));
    w.add(tile_graph(1, long_name, 1, 0, 1));
    w.add(tile_graph(2, "resnet50.4x4.fp16", 3000, 5000, 700));
    w.close();
  }
  {
    ShardWriter w(layout, "layout:xla:default", "valid", 4);
    w.add(layout_graph(0, "x", 6, 5, 3, 2));
    w.add(layout_graph(1, "y", 2, 0, 1, 1));
    w.add(layout_graph(2, long_name, 2000, 3000, 900, 10));
    w.close();
  }
  std::ofstream(script) << kScript;
  const std::string cmd = "/usr/bin/python3 " + script + " " + tile + " " + layout + " a," +
                          long_name + ",resnet50.4x4.fp16 x,y," + long_name;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the h5py checks failed (see the traceback above)";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tpuperf
