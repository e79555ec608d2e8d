// The .npy array format (numpy/lib/format.py): magic "\x93NUMPY", version 1.0/2.0/3.0,
// a little-endian header length (2 bytes in v1, 4 in v2/v3), a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a
// multiple of 64 bytes and ending in '\n', then the raw data. numpy writes C order unless
// the array was Fortran-ordered, and the dtype's byte order as it was ('>f4' for
// big-endian): the readers accept both and convert on load, so that every array in memory
// is C order and little-endian (this machine's order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// The dtypes TpuGraphs uses, in either byte order. Any other descr is rejected.
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
  DType dtype = DType::U1;    // the element type as it is once loaded (little-endian)
  std::vector<int64_t> shape;
  bool big_endian = false;     // the file stores elements big-endian ('>i8', '>f4', ...)
  bool fortran_order = false;  // the file stores the array in Fortran (column-major) order
  size_t header_len = 0;  // bytes before the data (magic + version + length + dict)
  int version = 1;

  // Number of elements; throws Error on overflow (a header may lie about its shape).
  int64_t count() const;
  // Data size in bytes; throws Error on overflow.
  uint64_t nbytes() const;
  // The descr as the file spells it: "<f4", or ">f4" for big-endian data.
  std::string descr() const;
  // True when the stored order differs from C order: Fortran order with two or more
  // dimensions above 1 (otherwise both orders lay the elements out alike).
  bool needs_transpose() const;
};

// Parses the preamble from the first `avail` bytes. Throws Error (reason only, the caller
// adds file and key) when the header is incomplete, malformed or of an unsupported dtype.
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

// Turns an array's stored bytes, as `h` describes them, into C order and little-endian
// byte order in place (a transpose needs one temporary copy of the array).
void to_native_layout(const NpyHeader& h, std::vector<uint8_t>& data);
// Reverses the bytes of each `elem_size`-byte element of data[0..n) (n a multiple of it).
void swap_element_bytes(uint8_t* data, size_t n, size_t elem_size);

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
