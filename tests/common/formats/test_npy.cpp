// The .npy header codec and NpyArray conversions, against hand-written headers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "common/base/error.h"
#include "common/formats/npy.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

namespace {

const std::vector<DType> kAllTypes = {DType::U1, DType::B1, DType::I4,
                                      DType::I8, DType::F4, DType::F8};

// A preamble around an arbitrary dict text, padded like numpy pads (to 64 bytes).
std::string npy_with_dict(const std::string& dict, int version = 1) {
  size_t len_bytes = version == 1 ? 2 : 4;
  size_t unpadded = 8 + len_bytes + dict.size() + 1;
  size_t pad = (64 - unpadded % 64) % 64;
  size_t field = dict.size() + pad + 1;
  std::string s = "\x93NUMPY";
  s += static_cast<char>(version);
  s += '\0';
  for (size_t i = 0; i < len_bytes; ++i) s += static_cast<char>((field >> (8 * i)) & 0xFF);
  return s + dict + std::string(pad, ' ') + "\n";
}

NpyHeader parse(const std::string& s) {
  return parse_npy_header(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string parse_error(const std::string& dict) {
  return error_of([&] { parse(npy_with_dict(dict)); });
}

}  // namespace

TEST(NpyHeader, RoundTripsEveryDtypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 3, 4}};
  const std::vector<size_t> sizes = {1, 1, 4, 8, 4, 8};
  for (size_t t = 0; t < kAllTypes.size(); ++t) {
    EXPECT_EQ(dtype_size(kAllTypes[t]), sizes[t]);
    for (const auto& shape : shapes) {
      std::string h = make_npy_header(kAllTypes[t], shape);
      SCOPED_TRACE(h);
      EXPECT_EQ(h.size() % 64, 0u);
      EXPECT_EQ(h.back(), '\n');
      NpyHeader p = parse(h);
      EXPECT_EQ(p.dtype, kAllTypes[t]);
      EXPECT_EQ(p.shape, shape);
      EXPECT_EQ(p.header_len, h.size());
      EXPECT_EQ(p.version, 1);
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      EXPECT_EQ(p.count(), count);
      EXPECT_EQ(p.nbytes(), static_cast<uint64_t>(count) * sizes[t]);
    }
  }
}

TEST(NpyHeader, WritesNumpysExactText) {
  // As numpy 1.24 writes np.zeros((3, 4), np.float32): 20 spaces of growth room, then
  // padding to 128 bytes.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  std::string h = make_npy_header(DType::F4, {3, 4});
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<uint8_t>(h[8]) | (static_cast<uint8_t>(h[9]) << 8), 118);
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.substr(10 + dict.size()), std::string(128 - 11 - dict.size(), ' ') + "\n");
  EXPECT_EQ(format_shape({}), "()");
  EXPECT_EQ(format_shape({5}), "(5,)");
  EXPECT_EQ(format_shape({1, 7}), "(1, 7)");
}

TEST(NpyHeader, Version2And3) {
  for (int v : {2, 3}) {
    std::string h = make_npy_header(DType::I8, {1, 9}, v);
    EXPECT_EQ(h[6], static_cast<char>(v));
    EXPECT_EQ(h.size() % 64, 0u);
    NpyHeader p = parse(h);
    EXPECT_EQ(p.version, v);
    EXPECT_EQ(p.dtype, DType::I8);
    EXPECT_EQ(p.shape, (std::vector<int64_t>{1, 9}));
    EXPECT_EQ(p.header_len, h.size());
  }
  // A dict longer than 65535 bytes does not fit version 1: the writer moves to 2.0.
  std::vector<int64_t> many(25000, 1);
  std::string h = make_npy_header(DType::U1, many);
  EXPECT_EQ(h[6], 2);
  NpyHeader p = parse(h);
  EXPECT_EQ(p.shape.size(), 25000u);
  EXPECT_EQ(p.header_len, h.size());
}

TEST(NpyHeader, AcceptsNumpyVariants) {
  // Double quotes, Python 2 longs, keys in another order, no trailing comma.
  NpyHeader p = parse(npy_with_dict("{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"|b1\"}"));
  EXPECT_EQ(p.dtype, DType::B1);
  EXPECT_EQ(p.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(parse(npy_with_dict("{'descr': '<i4', 'fortran_order': False, 'shape': (), }")).count(), 1);
}

TEST(NpyHeader, ReadsFortranOrder) {
  NpyHeader h = parse(npy_with_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"));
  EXPECT_TRUE(h.fortran_order);
  EXPECT_TRUE(h.needs_transpose());
  // With at most one dimension above 1 (or no elements) both orders are the same bytes.
  for (const char* shape : {"(6,)", "(1, 6)", "(6, 1, 1)", "(0, 3)", "()"})
    EXPECT_FALSE(parse(npy_with_dict(std::string("{'descr': '<f4', 'fortran_order': True, 'shape': ") + shape +
                                     ", }"))
                     .needs_transpose())
        << shape;
  EXPECT_TRUE(parse(npy_with_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1, 2), }")).needs_transpose());
}

TEST(NpyHeader, ReadsBigEndian) {
  const std::vector<std::pair<const char*, DType>> types = {
      {">i4", DType::I4}, {">i8", DType::I8}, {">f4", DType::F4}, {">f8", DType::F8}};
  for (const auto& [d, t] : types) {
    NpyHeader h = parse(npy_with_dict(std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (2,), }"));
    EXPECT_EQ(h.dtype, t) << d;
    EXPECT_TRUE(h.big_endian) << d;
    EXPECT_EQ(h.descr(), d);
  }
  NpyHeader le = parse(npy_with_dict("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }"));
  EXPECT_FALSE(le.big_endian);
  EXPECT_EQ(le.descr(), "<i8");
}

TEST(NpyLayout, FortranBigEndianBecomesCOrderLittleEndian) {
  // value(i, j, k) = 100 i + 10 j + k for shape (2, 3, 4); the file holds it in Fortran
  // order (i fastest) with every int32 big-endian.
  NpyHeader h = parse(npy_with_dict("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3, 4), }"));
  std::vector<uint8_t> data;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) {
        uint32_t v = 100 * i + 10 * j + k;
        for (int b = 3; b >= 0; --b) data.push_back(static_cast<uint8_t>(v >> (8 * b)));
      }
  to_native_layout(h, data);
  std::vector<int32_t> got(24);
  std::memcpy(got.data(), data.data(), data.size());
  std::vector<int32_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(100 * i + 10 * j + k);
  EXPECT_EQ(got, want);
}

TEST(NpyLayout, SwapsEachElement) {
  std::vector<uint8_t> d = {1, 2, 3, 4, 5, 6, 7, 8};
  swap_element_bytes(d.data(), d.size(), 4);
  EXPECT_EQ(d, (std::vector<uint8_t>{4, 3, 2, 1, 8, 7, 6, 5}));
  swap_element_bytes(d.data(), d.size(), 8);
  EXPECT_EQ(d, (std::vector<uint8_t>{5, 6, 7, 8, 1, 2, 3, 4}));
}

TEST(NpyHeader, RejectsUnknownDtypes) {
  for (const char* d : {"|i1", "<u1", ">u1", ">b1", "<f2", ">f2", "<c8", ">c8", "|O", "<U10", "f4", "=f4"})
    EXPECT_THAT(parse_error(std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (2,), }"),
                HasSubstr(std::string("unsupported dtype '") + d + "'"));
  EXPECT_THAT(parse_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"),
              HasSubstr("structured dtypes are not supported"));
}

TEST(NpyHeader, RejectsMalformedDicts) {
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, }"), HasSubstr("no 'shape'"));
  EXPECT_THAT(parse_error("{'fortran_order': False, 'shape': (2,), }"), HasSubstr("no 'descr'"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'shape': (2,), }"), HasSubstr("no 'fortran_order'"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"),
              HasSubstr("unexpected key 'x'"));
  EXPECT_THAT(parse_error("descr: <f4"), HasSubstr("malformed header dict"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)"),
              HasSubstr("malformed header dict"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}"),
              HasSubstr("expected True or False"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x)}"),
              HasSubstr("malformed header dict"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),
              HasSubstr("negative dimension"));
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk"),
              HasSubstr("unexpected text after"));
}

TEST(NpyHeader, RejectsBadPreamble) {
  std::string good = make_npy_header(DType::F4, {3});
  std::string bad = good;
  bad[1] = 'X';
  EXPECT_THAT(error_of([&] { parse(bad); }), HasSubstr("bad magic"));
  bad = good;
  bad[6] = 4;
  EXPECT_THAT(error_of([&] { parse(bad); }), HasSubstr("unsupported .npy version 4.0"));
  // A version-2 length field claiming 256 MiB of header.
  std::string huge = std::string("\x93NUMPY\x02\x00", 8) + std::string("\x00\x00\x00\x10", 4);
  EXPECT_THAT(error_of([&] { parse(huge); }), HasSubstr("exceeds"));
}

TEST(NpyHeader, RejectsTruncatedHeaders) {
  std::string h = make_npy_header(DType::F4, {3, 4});
  EXPECT_THAT(error_of([&] { parse(h.substr(0, h.size() - 5)); }),
              HasSubstr("truncated header: 123 bytes available, 128 needed"));
  EXPECT_THAT(error_of([&] { parse(h.substr(0, 7)); }), HasSubstr("truncated header"));
  EXPECT_EQ(npy_header_len(reinterpret_cast<const uint8_t*>(h.data()), 9), 0u);
  EXPECT_EQ(npy_header_len(reinterpret_cast<const uint8_t*>(h.data()), 10), 128u);
}

TEST(NpyHeader, RejectsShapeOverflow) {
  EXPECT_THAT(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }"),
              HasSubstr("overflows a 64-bit element count"));
  // Fits as an element count, not as bytes.
  EXPECT_THAT(parse_error("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }"),
              HasSubstr("overflows a 64-bit byte count"));
  EXPECT_THAT(parse_error("{'descr': '<f8', 'fortran_order': False, 'shape': (123456789012345678901234,), }"),
              HasSubstr("dimension too large"));
  // A zero dimension makes the rest harmless.
  NpyHeader p = parse(npy_with_dict(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904), }"));
  EXPECT_EQ(p.nbytes(), 0u);
}

TEST(NpyArray, FromKeepsBytesAndShape) {
  NpyArray a = NpyArray::from(std::vector<int32_t>{1, -2, 300}, {3});
  EXPECT_EQ(a.dtype, DType::I4);
  ASSERT_EQ(a.data.size(), 12u);
  EXPECT_EQ(a.data[4], 0xFE);  // -2 little-endian
  EXPECT_EQ(a.as<int32_t>()[2], 300);
  NpyArray b = NpyArray::from(std::vector<bool>{true, false, true}, {1, 3});
  EXPECT_EQ(b.dtype, DType::B1);
  EXPECT_EQ(b.data, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(b.count(), 3);
  EXPECT_THAT(error_of([] { NpyArray::from(std::vector<float>{1, 2, 3}, {2, 2}); }),
              HasSubstr("3 values do not fill shape (2, 2)"));
}

TEST(NpyArray, ConvertsToFloatAndInt64) {
  EXPECT_EQ(NpyArray::from(std::vector<int64_t>{-5, 0, 1 << 20}, {3}).to_float(),
            (std::vector<float>{-5.f, 0.f, 1048576.f}));
  EXPECT_EQ(NpyArray::from(std::vector<uint8_t>{0, 255}, {2}).to_int64(),
            (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(NpyArray::from(std::vector<double>{-3.0, 7.0, 1e15}, {3}).to_int64(),
            (std::vector<int64_t>{-3, 7, 1000000000000000}));
  EXPECT_EQ(NpyArray::from(std::vector<bool>{true, false}, {2}).to_float(), (std::vector<float>{1, 0}));
  EXPECT_EQ(NpyArray::from(std::vector<float>{}, {0, 140}).to_int64().size(), 0u);
}

TEST(NpyArray, ToInt64RejectsNonIntegers) {
  EXPECT_THAT(error_of([] { NpyArray::from(std::vector<float>{1.f, 0.5f}, {2}).to_int64(); }),
              HasSubstr("value 0.5 at index 1 is not an integer"));
  EXPECT_THAT(error_of([] {
                NpyArray::from(std::vector<double>{std::nan("")}, {1}).to_int64();
              }),
              HasSubstr("at index 0 is not an integer"));
  EXPECT_THAT(error_of([] {
                NpyArray::from(std::vector<double>{std::numeric_limits<double>::infinity()}, {1}).to_int64();
              }),
              HasSubstr("is not an integer"));
  EXPECT_THAT(error_of([] { NpyArray::from(std::vector<float>{1e30f}, {1}).to_int64(); }),
              HasSubstr("is not an integer"));
}
