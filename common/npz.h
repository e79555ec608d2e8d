// .npz archives: zip files of .npy members, as numpy's savez / savez_compressed write them.
// Members may be stored or deflated and may carry zip64 extra fields.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/npy.h"

namespace tpuperf {

// Reads members on demand: opening parses only the central directory; read(key)
// inflates that one member straight into the array's buffer (no second copy of the
// archive, no decompression of other members) and verifies its CRC-32.
// Every error names the file and, where there is one, the key.
class NpzReader {
 public:
  explicit NpzReader(const std::string& path);
  ~NpzReader();
  NpzReader(const NpzReader&) = delete;
  NpzReader& operator=(const NpzReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }

  // Member names without the ".npy" suffix, in archive order.
  std::vector<std::string> keys() const;
  bool has(const std::string& key) const;

  // Header only: inflates just the first bytes of the member.
  NpyHeader header(const std::string& key);
  // The whole member; checks that the data size matches the header's shape and the CRC.
  NpyArray read(const std::string& key);

  struct Member {
    std::string name;
    uint16_t method = 0;  // 0 stored, 8 deflated
    uint32_t crc32 = 0;
    uint64_t compressed_size = 0, uncompressed_size = 0, local_header_offset = 0;
  };

 private:
  const Member& member(const std::string& key) const;
  uint64_t data_offset(const Member& m);
  void read_at(uint64_t offset, void* buf, size_t n);
  void parse_central_directory();

  std::string path_;
  FILE* file_ = nullptr;
  uint64_t file_size_ = 0;
  std::vector<Member> members_;
  std::map<std::string, size_t> index_;
};

// Writes an archive under "<path>.tmp" and renames it to path on close(), so a reader
// never sees a partial file. Uses zip64 records only where sizes or offsets need them.
class NpzWriter {
 public:
  NpzWriter(const std::string& path, bool compress);
  ~NpzWriter();  // an unclosed writer removes its temporary file
  NpzWriter(const NpzWriter&) = delete;
  NpzWriter& operator=(const NpzWriter&) = delete;

  void add(const std::string& key, const NpyArray& array);
  template <typename T>
  void add(const std::string& key, const std::vector<T>& values, std::vector<int64_t> shape) {
    add(key, NpyArray::from(values, std::move(shape)));
  }
  void close();

 private:
  struct Entry;
  std::string path_, tmp_path_;
  bool compress_;
  FILE* file_ = nullptr;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace tpuperf
