// Writing .npz archives that numpy's load reads: zip files of .npy members, stored or
// deflated, with zip64 records where sizes or offsets need them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/base/error.h"
#include "common/formats/npy.h"

namespace tpuperf {

// Writes an archive under "<path>.tmp" and renames it to path on close(), so a reader
// never sees a partial file. Uses zip64 records only where sizes or offsets need them.
class NpzWriter {
 public:
  NpzWriter(const std::string& path, bool compress);
  ~NpzWriter();  // an unclosed writer removes its temporary file
  NpzWriter(const NpzWriter&) = delete;
  NpzWriter& operator=(const NpzWriter&) = delete;

  void add(const std::string& key, const NpyArray& array);
  // data holds the shape's elements of dtype, C order, little-endian; written without a copy.
  void add(const std::string& key, DType dtype, const std::vector<int64_t>& shape,
           const void* data);
  template <typename T>
  void add(const std::string& key, const std::vector<T>& values, std::vector<int64_t> shape) {
    if constexpr (std::is_same_v<T, bool>) {
      add(key, NpyArray::from(values, std::move(shape)));  // vector<bool> has no data()
    } else {
      if (static_cast<uint64_t>(shape_count(shape)) != values.size())
        throw Error(std::to_string(values.size()) + " values do not fill shape " +
                        format_shape(shape), path_, key);
      add(key, dtype_of<T>(), shape, values.data());
    }
  }

  // A member written piece by piece, for data converted on the fly (never held whole):
  // begin_member, write_data until exactly the shape's bytes are written, end_member.
  void begin_member(const std::string& key, DType dtype, const std::vector<int64_t>& shape);
  void write_data(const void* data, size_t n);
  void end_member();

  void close();

  // For tests of readers: write zip64 extra fields and end records even when nothing
  // needs them. Call before the first add.
  void force_zip64_for_testing(bool on) { force_zip64_ = on; }

 private:
  struct Entry;
  struct Deflater;
  void write_bytes(const void* data, size_t n);
  void write_raw_at(uint64_t offset, const std::string& bytes);
  void emit(const void* data, size_t n);  // member payload: compress or store
  void write_central_directory();
  [[noreturn]] void fail(const std::string& reason, const std::string& key = "");

  std::string path_, tmp_path_;
  bool compress_;
  bool force_zip64_ = false;
  bool in_member_ = false;
  FILE* file_ = nullptr;
  uint64_t offset_ = 0;  // bytes written so far
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unique_ptr<Deflater> deflater_;
};

}  // namespace tpuperf
