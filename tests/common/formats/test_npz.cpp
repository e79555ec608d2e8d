// NpzReader and NpzWriter: round trips, zip64, and every kind of damaged input. Hostile
// archives come from a small zip builder below, written independently of the library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/formats/npz_reader.h"
#include "common/formats/npz_writer.h"

using namespace tpuperf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// ---- a minimal zip builder for crafted archives ----

void le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>(i < 8 ? (v >> (8 * i)) & 0xFF : 0);
}

std::string raw_deflate(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

uint32_t crc_of(const std::string& s) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

struct RawMember {
  std::string name;
  std::string content;  // uncompressed bytes
  bool deflate = false;
  bool zip64 = false;  // central directory sizes and offset via the zip64 extra field
  std::optional<uint64_t> usize;  // lies to tell in the central directory
  std::optional<uint32_t> crc;
  std::optional<uint64_t> csize;
};

// Local headers carry zeros for crc and sizes, as a streaming writer would: readers must
// take them from the central directory.
std::string build_zip(const std::vector<RawMember>& members, bool zip64_end = false) {
  std::string out, cd;
  for (const RawMember& m : members) {
    std::string data = m.deflate ? raw_deflate(m.content) : m.content;
    uint64_t offset = out.size();
    le(out, 0x04034b50, 4);
    le(out, 20, 2);
    le(out, 0, 2);
    le(out, m.deflate ? 8 : 0, 2);
    le(out, 0, 4);  // time, date
    le(out, 0, 12);
    le(out, m.name.size(), 2);
    le(out, 0, 2);
    out += m.name + data;
    uint64_t usize = m.usize.value_or(m.content.size());
    std::string extra;
    if (m.zip64) {
      le(extra, 0x0001, 2);
      le(extra, 24, 2);
      le(extra, usize, 8);
      le(extra, data.size(), 8);
      le(extra, offset, 8);
    }
    le(cd, 0x02014b50, 4);
    le(cd, 45, 2);
    le(cd, 45, 2);
    le(cd, 0, 2);
    le(cd, m.deflate ? 8 : 0, 2);
    le(cd, 0, 4);
    le(cd, m.crc.value_or(crc_of(m.content)), 4);
    le(cd, m.zip64 ? 0xFFFFFFFF : m.csize.value_or(data.size()), 4);
    le(cd, m.zip64 ? 0xFFFFFFFF : usize, 4);
    le(cd, m.name.size(), 2);
    le(cd, extra.size(), 2);
    le(cd, 0, 6);  // comment length, disk, internal attributes
    le(cd, 0, 4);
    le(cd, m.zip64 ? 0xFFFFFFFF : offset, 4);
    cd += m.name + extra;
  }
  uint64_t cd_offset = out.size();
  out += cd;
  if (zip64_end) {
    uint64_t z = out.size();
    le(out, 0x06064b50, 4);
    le(out, 44, 8);
    le(out, 45, 2);
    le(out, 45, 2);
    le(out, 0, 8);
    le(out, members.size(), 8);
    le(out, members.size(), 8);
    le(out, cd.size(), 8);
    le(out, cd_offset, 8);
    le(out, 0x07064b50, 4);
    le(out, 0, 4);
    le(out, z, 8);
    le(out, 1, 4);
  }
  le(out, 0x06054b50, 4);
  le(out, 0, 4);
  le(out, zip64_end ? 0xFFFF : members.size(), 2);
  le(out, zip64_end ? 0xFFFF : members.size(), 2);
  le(out, zip64_end ? 0xFFFFFFFF : cd.size(), 4);
  le(out, zip64_end ? 0xFFFFFFFF : cd_offset, 4);
  le(out, 0, 2);
  return out;
}

template <typename T>
std::string npy_bytes(const std::vector<T>& v, const std::vector<int64_t>& shape) {
  std::string s = make_npy_header(dtype_of<T>(), shape);
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  return s;
}

std::string npy_dict(const std::string& dict, const std::string& payload) {
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\0';
  std::string body = dict + std::string(64 - (10 + dict.size() + 1) % 64, ' ') + "\n";
  le(s, body.size(), 2);
  return s + body + payload;
}

class NpzTest : public ::testing::Test {
 protected:

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::string slurp(const std::string& p) const {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // "<path>: key '<key>': " is how every member error begins.
  static std::string prefix(const std::string& p, const std::string& key) {
    return p + ": key '" + key + "': ";
  }

  TempDir tmp_{"npz"};
  std::string dir_ = tmp_.path();
};

// Deterministic values of every dtype, written by NpzWriter and compared after reading.
void write_all_types(NpzWriter& w) {
  std::vector<uint8_t> ops(300);
  for (size_t i = 0; i < ops.size(); ++i) ops[i] = static_cast<uint8_t>(i % 121);
  w.add("node_opcode", ops, {300});
  w.add("flags", std::vector<bool>{true, false, false, true}, {2, 2});
  std::vector<int32_t> i4(24);
  for (int i = 0; i < 24; ++i) i4[i] = i * 7 - 50;
  w.add("i4", i4, {2, 3, 4});
  w.add("node_splits", std::vector<int64_t>{0, 5, 9, 1LL << 40}, {1, 4});
  std::vector<float> f4(12);
  for (int i = 0; i < 12; ++i) f4[i] = i * 0.25f - 1;
  w.add("f4", f4, {3, 4});
  w.add("f8", std::vector<double>{1.0 / 3, -2.5, 1e300}, {3});
  w.add("empty", std::vector<float>{}, {0, 140});
  w.add("scalar", std::vector<double>{3.5}, {});
}

void check_all_types(NpzReader& r) {
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"node_opcode", "flags", "i4", "node_splits", "f4",
                                                "f8", "empty", "scalar"}));
  NpyArray ops = r.read("node_opcode");
  EXPECT_EQ(ops.dtype, DType::U1);
  EXPECT_EQ(ops.shape, (std::vector<int64_t>{300}));
  for (int i = 0; i < 300; ++i) ASSERT_EQ(ops.as<uint8_t>()[i], i % 121);
  NpyArray flags = r.read("flags");
  EXPECT_EQ(flags.dtype, DType::B1);
  EXPECT_EQ(flags.data, (std::vector<uint8_t>{1, 0, 0, 1}));
  NpyArray i4 = r.read("i4");
  EXPECT_EQ(i4.shape, (std::vector<int64_t>{2, 3, 4}));
  for (int i = 0; i < 24; ++i) ASSERT_EQ(i4.as<int32_t>()[i], i * 7 - 50);
  NpyArray splits = r.read("node_splits");
  EXPECT_EQ(splits.dtype, DType::I8);
  EXPECT_EQ(splits.shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(splits.to_int64(), (std::vector<int64_t>{0, 5, 9, 1LL << 40}));
  NpyArray f4 = r.read("f4");
  for (int i = 0; i < 12; ++i) ASSERT_EQ(f4.as<float>()[i], i * 0.25f - 1);
  NpyArray f8 = r.read("f8");
  EXPECT_EQ(f8.as<double>()[0], 1.0 / 3);
  EXPECT_EQ(f8.as<double>()[2], 1e300);
  NpyArray empty = r.read("empty");
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 140}));
  EXPECT_TRUE(empty.data.empty());
  NpyArray scalar = r.read("scalar");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.as<double>()[0], 3.5);
  NpyHeader h = r.header("i4");
  EXPECT_EQ(h.dtype, DType::I4);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3, 4}));
}

}  // namespace

TEST_F(NpzTest, RoundTripStoredAndDeflated) {
  for (bool compress : {false, true}) {
    std::string p = path(compress ? "deflated.npz" : "stored.npz");
    NpzWriter w(p, compress);
    write_all_types(w);
    EXPECT_FALSE(fs::exists(p));  // only the temporary exists until close
    w.close();
    EXPECT_TRUE(fs::exists(p));
    EXPECT_FALSE(fs::exists(p + ".tmp"));
    NpzReader r(p);
    EXPECT_TRUE(r.has("f4"));
    EXPECT_FALSE(r.has("f4.npy"));
    check_all_types(r);
    // Stored members hold the .npy bytes verbatim.
    std::string bytes = slurp(p);
    EXPECT_EQ(bytes.find("{'descr': '<i4'") != std::string::npos, !compress);
  }
}

TEST_F(NpzTest, LargeMembersStreamInChunks) {
  // 3 MiB of int64: several 1 MiB chunks in both directions.
  std::vector<int64_t> v(3 << 17);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * i) - 7;
  for (bool compress : {false, true}) {
    std::string p = path("large.npz");
    {
      NpzWriter w(p, compress);
      w.add("v", v, {static_cast<int64_t>(v.size())});
      w.close();
    }
    NpzReader r(p);
    NpyArray a = r.read("v");
    ASSERT_EQ(a.data.size(), v.size() * 8);
    EXPECT_EQ(std::memcmp(a.data.data(), v.data(), a.data.size()), 0);
    std::vector<uint8_t> joined;
    size_t calls = 0;
    r.read_chunks(
        "v", [&](const NpyHeader& h) { EXPECT_EQ(h.count(), static_cast<int64_t>(v.size())); },
        [&](const uint8_t* d, size_t n) {
          EXPECT_EQ(n % 8, 0u);
          EXPECT_LE(n, 1u << 20);
          joined.insert(joined.end(), d, d + n);
          ++calls;
        });
    EXPECT_EQ(calls, 3u);
    EXPECT_EQ(joined, a.data);
  }
}

TEST_F(NpzTest, StreamedMemberWriting) {
  std::string p = path("streamed.npz");
  NpzWriter w(p, true);
  w.begin_member("x", DType::F4, {4, 3});
  for (int row = 0; row < 4; ++row) {
    float vals[3] = {row * 1.f, row * 2.f, row * 3.f};
    w.write_data(vals, sizeof(vals));
  }
  w.end_member();
  w.close();
  NpzReader r(p);
  EXPECT_EQ(r.read("x").to_float(),
            (std::vector<float>{0, 0, 0, 1, 2, 3, 2, 4, 6, 3, 6, 9}));
}

TEST_F(NpzTest, WriterRejectsMisuse) {
  std::string p = path("misuse.npz");
  {
    NpzWriter w(p, false);
    w.add("a", std::vector<int32_t>{1, 2}, {2});
    EXPECT_THAT(error_of([&] { w.add("a", std::vector<int32_t>{1}, {1}); }),
                HasSubstr(prefix(p, "a") + "duplicate key"));
    EXPECT_THAT(error_of([&] { w.add("b", std::vector<int32_t>{1, 2, 3}, {2}); }),
                HasSubstr(prefix(p, "b") + "3 values do not fill shape (2,)"));
    w.begin_member("c", DType::I8, {2});
    EXPECT_THAT(error_of([&] { w.write_data("0123456789abcdefXYZ", 17); }),
                HasSubstr("exceed the shape's"));
    w.write_data("01234567", 8);
    EXPECT_THAT(error_of([&] { w.end_member(); }),
                HasSubstr(prefix(p, "c") + "member has 136 bytes, its shape needs 144"));
    // never closed: the destructor removes the temporary and leaves no archive
  }
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(NpzTest, ForcedZip64RoundTrip) {
  for (bool compress : {false, true}) {
    std::string p = path("zip64.npz");
    NpzWriter w(p, compress);
    w.force_zip64_for_testing(true);
    write_all_types(w);
    w.close();
    std::string bytes = slurp(p);
    EXPECT_NE(bytes.find(std::string("PK\x06\x06", 4)), std::string::npos);  // zip64 end record
    EXPECT_NE(bytes.find(std::string("PK\x06\x07", 4)), std::string::npos);  // its locator
    // The end record's 32-bit fields are saturated: only the zip64 record can be used.
    EXPECT_EQ(bytes.substr(bytes.size() - 14, 12), std::string(12, '\xff'));
    NpzReader r(p);
    check_all_types(r);
  }
}

TEST_F(NpzTest, ReadsHandBuiltZip64Archive) {
  std::vector<float> f = {1.5f, -2.f, 8.f};
  std::vector<int64_t> ids = {3, 1, 4, 1, 5};
  std::string p = write("hand64.npz", build_zip({{"f.npy", npy_bytes(f, {3}), false, true},
                                                 {"ids.npy", npy_bytes(ids, {1, 5}), true, true}},
                                                /*zip64_end=*/true));
  NpzReader r(p);
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"f", "ids"}));
  EXPECT_EQ(r.read("f").to_float(), f);
  EXPECT_EQ(r.read("ids").to_int64(), ids);
  EXPECT_EQ(r.read("ids").shape, (std::vector<int64_t>{1, 5}));
}

TEST_F(NpzTest, ReadsArchivesWithoutZip64) {
  std::vector<int32_t> v = {7, 8, 9};
  std::string p = write("plain.npz", build_zip({{"v.npy", npy_bytes(v, {3})},
                                                {"w.npy", npy_bytes(v, {3}), true}}));
  NpzReader r(p);
  EXPECT_EQ(r.read("v").to_int64(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(r.read("w").to_int64(), (std::vector<int64_t>{7, 8, 9}));
}

// ---- damaged input ----

TEST_F(NpzTest, TruncatedFile) {
  std::string p = path("cut.npz");
  {
    NpzWriter w(p, false);
    write_all_types(w);
    w.close();
  }
  std::string bytes = slurp(p);
  write("cut.npz", bytes.substr(0, bytes.size() * 6 / 10));
  EXPECT_THAT(error_of([&] { NpzReader r(p); }),
              HasSubstr(p + ": not a zip archive: no end-of-central-directory record"));
}

TEST_F(NpzTest, MemberDataPastEndOfFile) {
  // The directory claims a stored member far larger than the bytes in the file.
  std::string body = npy_bytes(std::vector<float>{1, 2}, {2});
  uint64_t claimed = body.size() + 1000000;
  std::string p = write("short.npz", build_zip({{"x.npy", body, false, false, claimed, {}, claimed}}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("x"); }),
              HasSubstr(prefix(p, "x") + "member data (1000136 bytes at offset 35) extends past the end"));
}

TEST_F(NpzTest, CorruptedDeflateStream) {
  std::vector<float> f(1000, 2.f);
  std::string zip = build_zip({{"node_feat.npy", npy_bytes(f, {1000}), true}});
  zip[30 + std::strlen("node_feat.npy")] = 0x07;  // final block with the reserved type 3
  std::string p = write("badflate.npz", zip);
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("node_feat"); }),
              HasSubstr(prefix(p, "node_feat") + "corrupt or truncated deflate data: its "));
}

TEST_F(NpzTest, WrongCrc) {
  std::string body = npy_bytes(std::vector<float>{1, 2, 3}, {3});
  std::string p = write("crc.npz", build_zip({{"node_feat.npy", body, true, false, {}, 0x12345678u}}));
  NpzReader r(p);
  char computed[16];
  std::snprintf(computed, sizeof(computed), "0x%08x", crc_of(body));
  EXPECT_THAT(error_of([&] { r.read("node_feat"); }),
              HasSubstr(prefix(p, "node_feat") + "CRC mismatch (stored 0x12345678, computed " +
                        computed + ")"));
  // The header alone does not need the CRC.
  EXPECT_EQ(r.header("node_feat").shape, (std::vector<int64_t>{3}));
}

TEST_F(NpzTest, FlippedStoredByteFailsCrc) {
  std::string p = path("flip.npz");
  {
    NpzWriter w(p, false);
    w.add("edge_index", std::vector<int64_t>{1, 0, 2, 1}, {2, 2});
    w.close();
  }
  std::string bytes = slurp(p);
  size_t at = bytes.find(std::string("\x02\0\0\0\0\0\0\0", 8));
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 3;
  write("flip.npz", bytes);
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("edge_index"); }), HasSubstr(prefix(p, "edge_index") + "CRC mismatch"));
}

TEST_F(NpzTest, MissingMember) {
  std::string p = write("keys.npz", build_zip({{"a.npy", npy_bytes(std::vector<int32_t>{1}, {1})}}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("config_runtime"); }),
              HasSubstr(prefix(p, "config_runtime") + "no such member in the archive (it holds: a)"));
  EXPECT_THAT(error_of([&] { r.header("config_runtime"); }), HasSubstr("no such member"));
}

TEST_F(NpzTest, UnknownDtypeFortranOrderBigEndian) {
  std::string p = write(
      "dtypes.npz",
      build_zip({{"i1.npy", npy_dict("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "ab")},
                 {"fo.npy", npy_dict("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", "adbecf")},
                 {"be.npy", npy_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd")}}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("i1"); }), HasSubstr(prefix(p, "i1") + "unsupported dtype '|i1'"));
  // Converted on load: Fortran order to C order, big-endian to little-endian.
  NpyArray fo = r.read("fo");
  EXPECT_EQ(std::string(fo.data.begin(), fo.data.end()), "abcdef");
  EXPECT_TRUE(r.header("fo").fortran_order);
  NpyArray be = r.read("be");
  EXPECT_EQ(be.dtype, DType::F4);
  EXPECT_EQ(std::string(be.data.begin(), be.data.end()), "dcba");
  EXPECT_EQ(r.header("be").descr(), ">f4");
  std::string streamed;
  r.read_chunks("fo", nullptr, [&](const uint8_t* d, size_t n) { streamed.append(d, d + n); });
  EXPECT_EQ(streamed, "abcdef");
  streamed.clear();
  r.read_chunks("be", nullptr, [&](const uint8_t* d, size_t n) { streamed.append(d, d + n); });
  EXPECT_EQ(streamed, "dcba");
}

TEST_F(NpzTest, HeaderShapeNotMatchingMemberSize) {
  // The header promises 10 floats, the member holds 2.
  std::string npy = make_npy_header(DType::F4, {10}) + std::string(8, '\0');
  std::string p = write("size.npz", build_zip({{"x.npy", npy}, {"y.npy", npy, true}}));
  NpzReader r(p);
  for (const char* key : {"x", "y"})
    EXPECT_THAT(error_of([&] { r.read(key); }),
                HasSubstr(prefix(p, key) + "header says shape (10,) of <f4 (40 data bytes + 128 "
                                           "header bytes), but the member holds 136 bytes"));
}

TEST_F(NpzTest, MultiTerabyteShapeFailsBeforeAllocating) {
  // 8 PB declared in the header; the member holds 16 bytes. Allocating would abort the
  // test, so reaching the assertion shows that the size check came first.
  std::string npy =
      npy_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000, 1000), }",
               std::string(16, '\0'));
  std::string p = write("huge.npz", build_zip({{"node_config_feat.npy", npy, true}}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("node_config_feat"); }),
              HasSubstr(prefix(p, "node_config_feat") +
                        "header says shape (1000000, 1000000, 1000) of <f8 (8000000000000000 data bytes"));
  // A directory that also lies about the uncompressed size is caught by the ratio check.
  std::string p2 = write("huge2.npz", build_zip({{"node_config_feat.npy", npy, true, /*zip64=*/true,
                                                   8000000000000128ULL}}));
  NpzReader r2(p2);
  EXPECT_THAT(error_of([&] { r2.read("node_config_feat"); }),
              HasSubstr(prefix(p2, "node_config_feat") + "declared size of 8000000000000128 "
                                                         "bytes is impossible"));
}

TEST_F(NpzTest, CentralDirectoryPastEndOfFile) {
  std::string zip = build_zip({{"a.npy", npy_bytes(std::vector<int32_t>{1}, {1})}});
  uint64_t real_offset = zip.size() - 22 - 51;  // one 51-byte directory entry
  zip[zip.size() - 3] = '\x7f';  // the end record's directory offset, high byte
  std::string p = write("cd.npz", zip);
  EXPECT_THAT(error_of([&] { NpzReader r(p); }),
              HasSubstr(p + ": central directory (offset " + std::to_string(real_offset + 0x7f000000) +
                        ", 51 bytes) points past the end of the file (" + std::to_string(zip.size()) +
                        " bytes)"));
}

TEST_F(NpzTest, EmptyFileDirectoryMissingFileNotAZip) {
  std::string empty = write("empty.npz", "");
  EXPECT_THAT(error_of([&] { NpzReader r(empty); }),
              HasSubstr(empty + ": empty file (0 bytes), not an .npz archive"));
  fs::create_directory(path("x.npz"));
  EXPECT_THAT(error_of([&] { NpzReader r(path("x.npz")); }),
              HasSubstr(path("x.npz") + ": is a directory"));
  EXPECT_THAT(error_of([&] { NpzReader r(path("nope.npz")); }),
              HasSubstr(path("nope.npz") + ": file not found"));
  std::string text = write("text.npz", "this is not a zip archive at all, just some words\n");
  EXPECT_THAT(error_of([&] { NpzReader r(text); }),
              HasSubstr(text + ": not a zip archive: no end-of-central-directory record"));
}

TEST_F(NpzTest, ZeroByteMemberAndTruncatedNpyHeader) {
  std::string npy = make_npy_header(DType::F4, {3});
  std::string p = write("zero.npz", build_zip({{"empty.npy", ""},
                                               {"short.npy", npy.substr(0, 40)},
                                               {"tiny.npy", npy.substr(0, 5), true}}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("empty"); }),
              HasSubstr(prefix(p, "empty") + "member is empty (0 bytes): not an .npy array"));
  EXPECT_THAT(error_of([&] { r.read("short"); }),
              HasSubstr(prefix(p, "short") + "truncated header: member holds 40 bytes, header needs " +
                        std::to_string(npy.size())));
  EXPECT_THAT(error_of([&] { r.header("tiny"); }), HasSubstr(prefix(p, "tiny") + "truncated header"));
}

TEST_F(NpzTest, DeflateStreamShorterThanDeclared) {
  // Directory and header agree on 3 floats; the deflate stream holds only 2.
  std::string full = npy_bytes(std::vector<float>{1, 2, 3}, {3});
  RawMember m{"x.npy", full.substr(0, full.size() - 4), true, false, full.size()};
  std::string p = write("shortflate.npz", build_zip({m}));
  NpzReader r(p);
  EXPECT_THAT(error_of([&] { r.read("x"); }),
              HasSubstr(prefix(p, "x") + "deflate stream ends after 136 bytes, but the member declares 140"));
}

TEST_F(NpzTest, DeflateStreamLongerThanDeclared) {
  // The directory records 4 bytes fewer than the member inflates to: the whole-buffer
  // inflate is sized by that record, so the stream overruns it.
  std::string full = npy_bytes(std::vector<float>{1, 2, 3}, {3});
  RawMember m{"x.npy", full, true, false, full.size() - 4};
  std::string p = write("longflate.npz", build_zip({m}));
  NpzReader r(p);
  const std::string want = prefix(p, "x") + "deflate stream holds more than the declared 136 bytes";
  EXPECT_THAT(error_of([&] { r.read("x"); }), HasSubstr(want));
  EXPECT_THAT(error_of([&] { r.read_chunks("x", nullptr, [](const uint8_t*, size_t) {}); }),
              HasSubstr(want));
}

TEST_F(NpzTest, TruncatedDeflateStream) {
  // The compressed bytes end half-way (the directory's compressed size says where): an
  // error naming file and member, never a partial array.
  std::vector<float> f(4096);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i * 7 % 1000);
  std::string npy = npy_bytes(f, {4096});
  uint64_t csize = raw_deflate(npy).size();
  RawMember m{"node_feat.npy", npy, true, false, {}, {}, csize / 2};
  std::string p = write("cutflate.npz", build_zip({m}));
  NpzReader r(p);
  const std::string want = prefix(p, "node_feat") +
                           fmt::format("corrupt or truncated deflate data: its {} compressed bytes do "
                                       "not inflate to the declared {} bytes",
                                       csize / 2, npy.size());
  EXPECT_THAT(error_of([&] { r.read("node_feat"); }), HasSubstr(want));
  bool chunk_seen = false;
  EXPECT_THAT(error_of([&] { r.read_chunks("node_feat", nullptr, [&](const uint8_t*, size_t) { chunk_seen = true; }); }),
              HasSubstr(want));
  EXPECT_FALSE(chunk_seen);  // nothing of a bad member reaches the consumer
  // The header is still readable: it lies in the part that is there.
  EXPECT_EQ(r.header("node_feat").shape, (std::vector<int64_t>{4096}));
}

TEST_F(NpzTest, RandomCorruptionOnlyEverThrowsError) {
  // Whatever bytes get damaged, the reader reports an Error: it never crashes, never
  // allocates what a lying header asks for, and never throws anything else.
  std::vector<std::string> originals;
  for (int variant = 0; variant < 3; ++variant) {
    std::string p = path("orig.npz");
    NpzWriter w(p, variant != 0);
    w.force_zip64_for_testing(variant == 2);
    write_all_types(w);
    w.close();
    originals.push_back(slurp(p));
  }
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  int errors = 0;
  for (int round = 0; round < 600; ++round) {
    std::string bytes = originals[round % originals.size()];
    int flips = 1 + static_cast<int>(next() % 4);
    for (int f = 0; f < flips; ++f) bytes[next() % bytes.size()] = static_cast<char>(next());
    std::string p = write("fuzz.npz", bytes);
    try {
      NpzReader r(p);
      for (const std::string& k : r.keys()) {
        try {
          r.read(k);
        } catch (const Error&) {
          ++errors;
        }
      }
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);  // most damage is detected (CRC, headers, directory)
}
