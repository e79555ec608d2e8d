// The .npy array format (numpy/lib/format.py): magic "\x93NUMPY", version 1.0/2.0/3.0,
// a little-endian header length (2 bytes in v1, 4 in v2/v3), a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a
// multiple of 64 bytes and ending in '\n', then the raw C-order data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// The dtypes TpuGraphs uses. Big-endian and any other descr are rejected.
enum class DType { U1, B1, I4, I8, F4, F8 };

size_t dtype_size(DType t);
std::string dtype_descr(DType t);  // "|u1", "|b1", "<i4", "<i8", "<f4", "<f8"

template <typename T> DType dtype_of();
template <> inline DType dtype_of<uint8_t>() { return DType::U1; }
template <> inline DType dtype_of<bool>() { return DType::B1; }
template <> inline DType dtype_of<int32_t>() { return DType::I4; }
template <> inline DType dtype_of<int64_t>() { return DType::I8; }
template <> inline DType dtype_of<float>() { return DType::F4; }
template <> inline DType dtype_of<double>() { return DType::F8; }

struct NpyHeader {
  DType dtype = DType::U1;
  std::vector<int64_t> shape;
  size_t header_len = 0;  // bytes before the data (magic + version + length + dict)
  int version = 1;

  // Number of elements; throws Error on overflow (a header may lie about its shape).
  int64_t count() const;
  // Data size in bytes; throws Error on overflow.
  uint64_t nbytes() const;
};

// Parses the preamble from the first `avail` bytes. Throws Error (reason only, the caller
// adds file and key) when the header is incomplete, malformed, fortran-ordered,
// big-endian or of an unsupported dtype.
NpyHeader parse_npy_header(const uint8_t* data, size_t avail);

// Total preamble length (the data offset) read from the magic, version and length
// fields. Returns 0 when `avail` is too short to tell (12 bytes always suffice); throws
// Error on a bad magic, an unknown version or an implausibly long header.
size_t npy_header_len(const uint8_t* data, size_t avail);

// Builds a version-1.0 preamble (version 2.0 when the dict does not fit in 65535 bytes),
// padded so that the data starts at a multiple of 64, exactly as numpy writes it.
// min_version (1, 2 or 3) forces a later version, for tests of readers.
std::string make_npy_header(DType dtype, const std::vector<int64_t>& shape,
                            int min_version = 1);

// "(2, 3)", "(3,)", "()": Python's spelling, for messages.
std::string format_shape(const std::vector<int64_t>& shape);
// Product of the dimensions; throws Error on a negative dimension or int64 overflow.
int64_t shape_count(const std::vector<int64_t>& shape);

// An array held in memory: dtype, shape and the raw little-endian C-order bytes.
struct NpyArray {
  DType dtype = DType::U1;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t count() const;
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
  template <typename T> T* as() { return reinterpret_cast<T*>(data.data()); }

  // Element-wise conversions (any supported dtype). to_int64 throws Error when a
  // floating value is not an integer.
  std::vector<float> to_float() const;
  std::vector<int64_t> to_int64() const;

  template <typename T>
  static NpyArray from(const std::vector<T>& values, std::vector<int64_t> shape);
};

}  // namespace tpuperf
