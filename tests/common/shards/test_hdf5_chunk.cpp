// Chunks encoded by h5::ChunkEncoder and written with H5Dwrite_chunk read back through
// HDF5's own filters (fletcher32 verified, zlib inflate, unshuffle); without deflate the
// stored bytes equal what HDF5's pipeline stores, byte for byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/base/error.h"
#include "common/shards/hdf5.h"
#include "common/shards/hdf5_chunk.h"
#include "tests/test_util.h"

namespace tpuperf {
namespace {

using ::testing::HasSubstr;

struct Dataset {
  h5::Handle file, dset;
};

// A chunked rank-2 float32 dataset of `cols` columns with the shards' pipeline.
Dataset make_dataset(const std::string& path, hsize_t chunk_rows, hsize_t cols, int deflate) {
  Dataset d;
  d.file = h5::create_file(path, path);
  h5::DatasetLayout l;
  l.rank = 2;
  l.dims[1] = cols;
  l.max_dims[0] = H5S_UNLIMITED;
  l.max_dims[1] = cols;
  l.chunk[0] = chunk_rows;
  l.chunk[1] = cols;
  l.deflate = deflate;
  d.dset = h5::create_dataset(d.file.get(), "x", H5T_IEEE_F32LE, l, path);
  return d;
}

std::vector<float> values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) * 0.5f - 3.f;
  return v;
}

std::vector<float> read_all(hid_t dset, hsize_t rows, hsize_t cols, const std::string& path) {
  std::vector<float> out(rows * cols);
  h5::RowReader r(dset, H5T_NATIVE_FLOAT, path, "x");
  r.read(0, rows, out.data());
  return out;
}

TEST(Hdf5Chunk, DirectChunksReadBackThroughHdf5Filters) {
  TempDir dir("h5chunk");
  for (int level : {0, 1, 4, 9}) {
    const std::string path = dir.file("l" + std::to_string(level) + ".h5");
    const hsize_t chunk = 100, cols = 7, rows = 250;  // two whole chunks and a short one
    Dataset d = make_dataset(path, chunk, cols, level);
    std::vector<float> v = values(rows * cols);
    h5::ChunkEncoder enc(level);
    h5::set_rows(d.dset.get(), rows, cols, path, "x");
    for (hsize_t r = 0; r < rows; r += chunk) {
      std::vector<float> c(chunk * cols, 0.f);  // the short chunk padded, as ShardWriter does
      std::copy(v.begin() + r * cols, v.begin() + std::min(rows, r + chunk) * cols, c.begin());
      const auto& stored = enc.encode(reinterpret_cast<const uint8_t*>(c.data()), c.size() * 4, 4);
      h5::write_chunk(d.dset.get(), r, stored.data(), stored.size(), path, "x");
    }
    EXPECT_EQ(read_all(d.dset.get(), rows, cols, path), v) << "level " << level;
  }
}

// open_dataset's chunk cache: the bytes asked for but at most the dataset's chunks, ~100
// hash slots per chunk that fits (a prime), and the same rows read through it; HDF5's
// default cache without it.
TEST(Hdf5Chunk, OpenWithAChunkCacheSizesItByTheChunk) {
  TempDir dir("h5cache");
  const std::string path = dir.file("c.h5");
  const hsize_t chunk = 100, cols = 7, rows = 250;  // chunks of 2,800 bytes
  const std::vector<float> v = values(rows * cols);
  {
    Dataset d = make_dataset(path, chunk, cols, 4);
    h5::set_rows(d.dset.get(), rows, cols, path, "x");
    ASSERT_GE(H5Dwrite(d.dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  }
  h5::Handle file = h5::open_file_readonly(path);
  auto cache_of = [&](hid_t dset) {
    h5::Handle dapl(H5Dget_access_plist(dset), H5Pclose);
    size_t slots = 0, bytes = 0;
    double w0 = 0;
    EXPECT_GE(H5Pget_chunk_cache(dapl.get(), &slots, &bytes, &w0), 0);
    return std::make_pair(slots, bytes);
  };
  // (asked bytes, expected bytes, expected slots): 2 chunks; 10 chunks, capped at the
  // dataset's 3 (250 rows); 211 and 307 are the primes after 200 and 300.
  for (const auto& [asked, want_bytes, want_slots] :
       {std::tuple<size_t, size_t, size_t>{5600, 5600, 211}, {28000, 8400, 307}}) {
    const h5::Handle cached = h5::open_dataset(file.get(), "x", path, asked);
    const auto [slots, bytes] = cache_of(cached.get());
    EXPECT_EQ(bytes, want_bytes) << asked;
    EXPECT_EQ(slots, want_slots) << asked;
    EXPECT_EQ(read_all(cached.get(), rows, cols, path), v);
  }
  // Closed first: HDF5 hands a second open of a dataset that is still open the first's cache.
  const h5::Handle plain = h5::open_dataset(file.get(), "x", path);
  EXPECT_EQ(cache_of(plain.get()).second, size_t{1} << 20);  // HDF5's default: 1 MiB
  EXPECT_EQ(read_all(plain.get(), rows, cols, path), v);
  EXPECT_THROW(h5::open_dataset(file.get(), "missing", path, 28000), Error);
}

TEST(Hdf5Chunk, WithoutDeflateTheStoredBytesAreHdf5s) {
  // Odd sizes and more than 360 words exercise fletcher32's odd byte and its folds.
  TempDir dir("h5chunk");
  for (hsize_t rows : {1, 3, 181, 1001}) {
    const std::string path = dir.file("f" + std::to_string(rows) + ".h5");
    h5::Handle file = h5::create_file(path, path);
    h5::DatasetLayout l;
    l.dims[0] = rows;
    l.max_dims[0] = rows;
    l.chunk[0] = rows;
    h5::Handle dset = h5::create_dataset(file.get(), "b", H5T_STD_U8LE, l, path);
    std::vector<uint8_t> v(rows);
    for (hsize_t i = 0; i < rows; ++i) v[i] = static_cast<uint8_t>(i * 37 + 11);
    h5::write_rows(dset.get(), H5T_NATIVE_UINT8, 1, 0, rows, 1, v.data(), path, "b");
    hsize_t offset[1] = {0};
    hsize_t stored_size = 0;
    ASSERT_GE(H5Dget_chunk_storage_size(dset.get(), offset, &stored_size), 0);
    std::vector<uint8_t> theirs(stored_size);
    uint32_t mask = 0;
    ASSERT_GE(H5Dread_chunk(dset.get(), H5P_DEFAULT, offset, &mask, theirs.data()), 0);
    h5::ChunkEncoder enc(0);
    EXPECT_EQ(enc.encode(v.data(), v.size(), 1), theirs) << rows << " bytes";
  }
}

TEST(Hdf5Chunk, ShuffleIsHdf5s) {
  const std::vector<uint8_t> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // two 4-byte elements + 1
  std::vector<uint8_t> out(in.size());
  h5::shuffle_bytes(in.data(), in.size(), 4, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 5, 2, 6, 3, 7, 4, 8, 9}));
}

TEST(Hdf5Chunk, DamagedStoredChunkFailsItsChecksum) {
  TempDir dir("h5chunk");
  const std::string path = dir.file("bad.h5");
  Dataset d = make_dataset(path, 50, 3, 4);
  std::vector<float> v = values(150);
  h5::ChunkEncoder enc(4);
  std::vector<uint8_t> stored = enc.encode(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4, 4);
  stored[stored.size() / 2] ^= 0x40;
  h5::set_rows(d.dset.get(), 50, 3, path, "x");
  h5::write_chunk(d.dset.get(), 0, stored.data(), stored.size(), path, "x");
  try {
    read_all(d.dset.get(), 50, 3, path);
    ADD_FAILURE() << "a damaged chunk was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checksum/read failure"));
  }
}

}  // namespace
}  // namespace tpuperf
