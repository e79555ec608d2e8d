// Reader bugs found by the fuzzer (issue #6). An .npy version 1.0 header whose length
// field is 0 or 1 ends inside the 12 preamble bytes the reader takes first; the reader
// copied all 12 into a header buffer of 10 or 11 bytes and then asked the member stream
// for (len - 12) bytes, i.e. ~2^64: a heap overflow (ASan: heap-buffer-overflow in
// NpzReader::open_member) and, for deflated members, inflation past the buffer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/formats/npy.h"
#include "common/formats/npz_reader.h"
#include "common/formats/npz_writer.h"

namespace tpuperf {
namespace {

using ::testing::HasSubstr;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A stored archive of one float array whose npy header length field is replaced: stored
// members lie in the file verbatim, so the field is found by the npy magic.
std::string archive_with_header_length(const TempDir& dir, int version, uint32_t length) {
  const std::string path = dir.file("v" + std::to_string(version) + "_" + std::to_string(length) + ".npz");
  {
    NpzWriter w(path, false);
    w.add("x", std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {8});
    w.close();
  }
  std::string bytes = slurp(path);
  const size_t at = bytes.find("\x93NUMPY");
  EXPECT_NE(at, std::string::npos);
  bytes[at + 6] = static_cast<char>(version);
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) bytes[at + 8 + i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(NpzFaults, HeaderLengthEndingInsideThePreambleIsMalformed) {
  TempDir dir;
  for (uint32_t length : {0u, 1u}) {
    const std::string p = archive_with_header_length(dir, 1, length);
    NpzReader r(p);
    EXPECT_THAT(error_of([&] { r.header("x"); }), HasSubstr(p + ": key 'x': malformed header")) << length;
    EXPECT_THAT(error_of([&] { r.read("x"); }), HasSubstr(p + ": key 'x': malformed header")) << length;
    EXPECT_THAT(error_of([&] { r.read_chunks("x", nullptr, [](const uint8_t*, size_t) {}); }),
                HasSubstr(p + ": key 'x': malformed header"))
        << length;
  }
}

// The shortest lengths that do reach past the preamble: an empty or one-byte dict.
TEST(NpzFaults, EmptyHeaderDictIsMalformed) {
  TempDir dir;
  for (auto [version, length] : {std::pair<int, uint32_t>{1, 2}, {2, 0}, {3, 1}}) {
    const std::string p = archive_with_header_length(dir, version, length);
    NpzReader r(p);
    EXPECT_THAT(error_of([&] { r.read("x"); }), HasSubstr(p + ": key 'x': malformed header")) << version;
  }
}

TEST(NpzFaults, ParserAloneRejectsAnEmptyDict) {
  const std::string v1 = std::string("\x93NUMPY\x01\x00\x00\x00", 10) + "{}";
  EXPECT_THAT(error_of([&] { parse_npy_header(reinterpret_cast<const uint8_t*>(v1.data()), v1.size()); }),
              HasSubstr("malformed header dict"));
}

}  // namespace
}  // namespace tpuperf
