// Interoperability with real numpy (Debian's, only under /usr/bin/python3): numpy writes
// what NpzReader must read, and numpy must load what NpzWriter writes. Both sides
// compute the expected values independently from the same arange-based formulas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/test_util.h"
#include "common/graph/graph.h"
#include "common/formats/npz_reader.h"
#include "common/formats/npz_writer.h"

using namespace tpuperf;
namespace fs = std::filesystem;

namespace {

// Runs a Python script with Debian's python; returns its exit status.
int run_python(const std::string& dir, const std::string& name, const std::string& script) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << script;
  std::string cmd = "/usr/bin/python3 " + path + " " + dir + " > " + path + ".log 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream log(path + ".log");
    ADD_FAILURE() << name << " failed:\n" << std::string(std::istreambuf_iterator<char>(log), {});
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The arrays both languages build; keep the two definitions in step.
const char* kPythonArrays = R"PY(
import sys, numpy as np
def arrays():
    return {
        'node_opcode': (np.arange(300) % 121).astype(np.uint8),
        'flags': (np.arange(10) % 3 == 0),
        'i4': (np.arange(24, dtype=np.int32) * 7 - 50).reshape(2, 3, 4),
        'node_splits': (np.arange(5, dtype=np.int64) * 1000000007).reshape(1, 5),
        'node_feat': (np.arange(12, dtype=np.float32) * 0.25 - 1).reshape(3, 4),
        'f8': np.arange(7, dtype=np.float64) / 3,
        'empty': np.zeros((0, 140), np.float32),
        'scalar': np.array(3.5),
        'big': np.arange(300000, dtype=np.int64) * 3 - 1,
    }
)PY";

template <typename T>
void expect_values(const NpyArray& a, DType dtype, std::vector<int64_t> shape,
                   const std::function<T(int64_t)>& value) {
  ASSERT_EQ(a.dtype, dtype);
  ASSERT_EQ(a.shape, shape);
  ASSERT_EQ(a.data.size(), a.count() * sizeof(T));
  for (int64_t i = 0; i < a.count(); ++i) ASSERT_EQ(a.as<T>()[i], value(i)) << "at " << i;
}

void check_python_arrays(NpzReader& r) {
  EXPECT_EQ(r.keys().size(), 9u);
  expect_values<uint8_t>(r.read("node_opcode"), DType::U1, {300}, [](int64_t i) { return i % 121; });
  expect_values<uint8_t>(r.read("flags"), DType::B1, {10}, [](int64_t i) { return i % 3 == 0; });
  expect_values<int32_t>(r.read("i4"), DType::I4, {2, 3, 4}, [](int64_t i) { return i * 7 - 50; });
  expect_values<int64_t>(r.read("node_splits"), DType::I8, {1, 5},
                         [](int64_t i) { return i * 1000000007; });
  expect_values<float>(r.read("node_feat"), DType::F4, {3, 4},
                       [](int64_t i) { return static_cast<float>(i) * 0.25f - 1; });
  expect_values<double>(r.read("f8"), DType::F8, {7}, [](int64_t i) { return i / 3.0; });
  expect_values<float>(r.read("empty"), DType::F4, {0, 140}, [](int64_t) { return 0.f; });
  expect_values<double>(r.read("scalar"), DType::F8, {}, [](int64_t) { return 3.5; });
  expect_values<int64_t>(r.read("big"), DType::I8, {300000}, [](int64_t i) { return i * 3 - 1; });
}

class NumpyTest : public ::testing::Test {
 protected:
  TempDir tmp_{"numpy"};
  std::string dir_ = tmp_.path();
};

}  // namespace

TEST_F(NumpyTest, DebianNumpyIsAvailable) {
  // A missing numpy is a broken test environment, not a reason to skip.
  ASSERT_EQ(run_python(dir_, "import.py", "import numpy\n"), 0)
      << "/usr/bin/python3 cannot import numpy (install python3-numpy)";
}

TEST_F(NumpyTest, ReadsWhatNumpyWrites) {
  std::string script = std::string(kPythonArrays) + R"PY(
d = sys.argv[1]
np.savez(d + '/stored.npz', **arrays())
np.savez_compressed(d + '/deflated.npz', **arrays())
)PY";
  ASSERT_EQ(run_python(dir_, "write.py", script), 0);
  for (const char* name : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(name);
    NpzReader r(dir_ + "/" + name);
    check_python_arrays(r);
    NpyHeader h = r.header("node_splits");
    EXPECT_EQ(h.shape, (std::vector<int64_t>{1, 5}));
  }
}

TEST_F(NumpyTest, HeadersMatchNumpyByteForByte) {
  std::string script = R"PY(
import sys, numpy as np
d = sys.argv[1]
for t in ['u1', 'b1', 'i4', 'i8', 'f4', 'f8']:
    dt = np.dtype('?' if t == 'b1' else t)
    for shape in [(), (0,), (3,), (2, 3, 4), (1, 12345)]:
        name = t + '_' + '_'.join(map(str, shape))
        np.save(d + '/' + name + '.npy', np.zeros(shape, dt))
)PY";
  ASSERT_EQ(run_python(dir_, "headers.py", script), 0);
  const std::vector<std::pair<const char*, DType>> types = {
      {"u1", DType::U1}, {"b1", DType::B1}, {"i4", DType::I4},
      {"i8", DType::I8}, {"f4", DType::F4}, {"f8", DType::F8}};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 3, 4}, {1, 12345}};
  for (const auto& [tname, dtype] : types) {
    for (const auto& shape : shapes) {
      std::string name = tname;
      name += "_";
      for (size_t i = 0; i < shape.size(); ++i) name += (i ? "_" : "") + std::to_string(shape[i]);
      std::ifstream in(dir_ + "/" + name + ".npy", std::ios::binary);
      std::string file(std::istreambuf_iterator<char>(in), {});
      std::string mine = make_npy_header(dtype, shape);
      ASSERT_GE(file.size(), mine.size()) << name;
      EXPECT_EQ(file.substr(0, mine.size()), mine) << name;
      NpyHeader h = parse_npy_header(reinterpret_cast<const uint8_t*>(file.data()), file.size());
      EXPECT_EQ(h.header_len + h.nbytes(), file.size()) << name;
    }
  }
}

TEST_F(NumpyTest, NumpyLoadsWhatNpzWriterWrites) {
  auto write = [&](const std::string& name, bool compress, bool zip64) {
    NpzWriter w(dir_ + "/" + name, compress);
    w.force_zip64_for_testing(zip64);
    std::vector<uint8_t> ops(300);
    for (int i = 0; i < 300; ++i) ops[i] = static_cast<uint8_t>(i % 121);
    w.add("node_opcode", ops, {300});
    std::vector<bool> flags(10);
    for (int i = 0; i < 10; ++i) flags[i] = i % 3 == 0;
    w.add("flags", flags, {10});
    std::vector<int32_t> i4(24);
    for (int i = 0; i < 24; ++i) i4[i] = i * 7 - 50;
    w.add("i4", i4, {2, 3, 4});
    std::vector<int64_t> splits(5);
    for (int i = 0; i < 5; ++i) splits[i] = i * 1000000007LL;
    w.add("node_splits", splits, {1, 5});
    std::vector<float> feat(12);
    for (int i = 0; i < 12; ++i) feat[i] = i * 0.25f - 1;
    w.add("node_feat", feat, {3, 4});
    std::vector<double> f8(7);
    for (int i = 0; i < 7; ++i) f8[i] = i / 3.0;
    w.add("f8", f8, {7});
    w.add("empty", std::vector<float>{}, {0, 140});
    w.add("scalar", std::vector<double>{3.5}, {});
    std::vector<int64_t> big(300000);
    for (int64_t i = 0; i < 300000; ++i) big[i] = i * 3 - 1;
    w.add("big", big, {300000});
    w.close();
  };
  write("stored.npz", false, false);
  write("deflated.npz", true, false);
  write("stored64.npz", false, true);
  write("deflated64.npz", true, true);
  std::string script = std::string(kPythonArrays) + R"PY(
import zipfile
d = sys.argv[1]
want = arrays()
for name, method in [('stored', zipfile.ZIP_STORED), ('deflated', zipfile.ZIP_DEFLATED),
                     ('stored64', zipfile.ZIP_STORED), ('deflated64', zipfile.ZIP_DEFLATED)]:
    path = d + '/' + name + '.npz'
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None, name
        assert all(i.compress_type == method for i in z.infolist()), name
        assert [i.filename for i in z.infolist()] == [k + '.npy' for k in want], name
    got = np.load(path)
    assert sorted(got.files) == sorted(want), (name, got.files)
    for k, v in want.items():
        g = got[k]
        assert g.dtype == v.dtype, (name, k, g.dtype, v.dtype)
        assert g.shape == v.shape, (name, k, g.shape, v.shape)
        assert np.array_equal(g, v), (name, k)
print('ok')
)PY";
  EXPECT_EQ(run_python(dir_, "load.py", script), 0);
  // And the reader agrees with itself on all four.
  for (const char* name : {"stored.npz", "deflated.npz", "stored64.npz", "deflated64.npz"}) {
    SCOPED_TRACE(name);
    NpzReader r(dir_ + "/" + name);
    check_python_arrays(r);
  }
}

// numpy keeps an array's order and byte order when it saves it: Fortran-order arrays
// (np.asfortranarray, transposes) and big-endian dtypes ('>f4', from other machines or
// astype) are what np.load reads back as the same values. The reader converts them on
// load, in read() and in the streamed read_chunks() the graph loaders use, so a graph
// saved that way loads equal to the same graph saved plainly.
TEST_F(NumpyTest, ReadsFortranOrderAndBigEndianLikeNumpy) {
  std::string script = R"PY(
import sys, numpy as np
d = sys.argv[1]
n = 2000  # node_feat of 2000 x 140 float32 is 1.1 MB: more than one 1 MiB chunk
odd = dict(
    node_feat=np.asfortranarray((np.arange(n * 140, dtype=np.float32) * 0.5 - 7).reshape(n, 140)),
    node_opcode=(np.arange(n) % 121).astype(np.uint8),
    edge_index=np.stack([np.arange(1, n), np.arange(n - 1)], 1).astype('>i8'),
    config_feat=np.asfortranarray((np.arange(5 * 24) * 3 - 11).astype('>f4').reshape(5, 24)),
    config_runtime=np.array([50, 20, 30, 90, 40], dtype='>i8'),
    config_runtime_normalizers=np.full(5, 10, dtype='>i4'),
)
for k, a in odd.items():
    assert k in ('node_opcode',) or not a.flags.c_contiguous or a.dtype.byteorder == '>', k
np.savez(d + '/odd.npz', **odd)
np.savez_compressed(d + '/odd_deflated.npz', **odd)
plain = {k: np.ascontiguousarray(a, dtype=a.dtype.newbyteorder('<')) for k, a in odd.items()}
np.savez(d + '/plain.npz', **plain)
cube = np.asfortranarray((np.arange(3 * 1 * 4, dtype=np.float64) / 8).reshape(3, 1, 4)).astype('>f8')
np.savez(d + '/cube.npz', cube=cube)
for name in ('odd', 'odd_deflated'):  # numpy itself reads them as the plain arrays
    got = np.load(d + '/' + name + '.npz')
    assert all(np.array_equal(got[k], plain[k]) for k in plain), name
)PY";
  ASSERT_EQ(run_python(dir_, "odd.py", script), 0);
  TileGraph want = load_tile_graph(dir_ + "/plain.npz");
  for (const char* name : {"odd.npz", "odd_deflated.npz"}) {
    SCOPED_TRACE(name);
    NpzReader r(dir_ + "/" + name);
    EXPECT_TRUE(r.header("node_feat").fortran_order);
    EXPECT_EQ(r.header("edge_index").descr(), ">i8");
    NpzReader plain(dir_ + "/plain.npz");
    for (const char* key : {"node_feat", "edge_index", "config_feat", "config_runtime_normalizers"})
      EXPECT_EQ(r.read(key).data, plain.read(key).data) << key;
    TileGraph g = load_tile_graph(dir_ + "/" + name);  // streamed: read_chunks
    EXPECT_EQ(g.node_feat, want.node_feat);
    EXPECT_EQ(g.edge_index, want.edge_index);
    EXPECT_EQ(g.config_feat, want.config_feat);
    EXPECT_EQ(g.config_runtime, want.config_runtime);
    EXPECT_EQ(g.config_runtime_normalizers, want.config_runtime_normalizers);
  }
  NpzReader r(dir_ + "/cube.npz");
  expect_values<double>(r.read("cube"), DType::F8, {3, 1, 4}, [](int64_t i) { return i / 8.0; });
}
