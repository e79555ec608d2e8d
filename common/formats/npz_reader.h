// Reading .npz archives: zip files of .npy members, as numpy's savez / savez_compressed
// write them. Members may be stored or deflated and may carry zip64 extra fields.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/formats/npy.h"

namespace tpuperf {

// Memory for inflated members, reusable from reader to reader: memory fresh from the
// kernel costs a page fault and zeroing per 4 KiB page, about as much time as inflating,
// so a loop over many files (a preprocessing rank) gives all its readers one buffer. It
// grows to the largest member read and keeps that size until destroyed.
class NpzBuffer {
 public:
  uint8_t* get(size_t n);  // n bytes, not initialized

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

// Reads members on demand: opening parses only the central directory; read(key)
// inflates that one member whole, in one libdeflate call into a buffer of the size its
// directory entry records (no decompression of other members), and verifies its CRC-32.
// Every error names the file and, where there is one, the key.
class NpzReader {
 public:
  // buffer: where read_chunks inflates members (see NpzBuffer); none: the reader's own,
  // freed with it.
  explicit NpzReader(const std::string& path, NpzBuffer* buffer = nullptr);
  ~NpzReader();
  NpzReader(const NpzReader&) = delete;
  NpzReader& operator=(const NpzReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }

  // Member names without the ".npy" suffix, in archive order.
  std::vector<std::string> keys() const;
  bool has(const std::string& key) const;

  // Header only: inflates just the first bytes of the member (zlib, streaming: the one
  // place a member is not inflated whole), without checking the CRC.
  NpyHeader header(const std::string& key);
  // The whole member; checks that the data size matches the header's shape and the CRC.
  // Big-endian and Fortran-order members come back little-endian and in C order.
  NpyArray read(const std::string& key);

  // Hands a member out in pieces, for consumers that convert as they go (into a smaller
  // type: the converted result is all they keep): the member is inflated whole, its
  // header checked against the member size and its CRC checked, then on_header runs,
  // then on_chunk receives the data in order (C order, little-endian, as read()
  // returns it), in chunks of at most 1 MiB that always hold whole elements. Peak memory
  // is the largest member plus the consumer's result; the member is inflated into the
  // reader's NpzBuffer. Errors thrown by the callbacks get the file and key added.
  using HeaderSink = std::function<void(const NpyHeader&)>;
  using ChunkSink = std::function<void(const uint8_t* data, size_t n)>;
  NpyHeader read_chunks(const std::string& key, const HeaderSink& on_header,
                        const ChunkSink& on_chunk);

  struct Member {
    std::string name;
    uint16_t method = 0;  // 0 stored, 8 deflated
    uint16_t flags = 0;   // general purpose bits; bit 0 = encrypted
    uint32_t crc32 = 0;
    uint64_t compressed_size = 0, uncompressed_size = 0, local_header_offset = 0;
  };

  // A member's directory entry and its bytes as stored (deflate data or the stored npy),
  // checked to lie in the file: for measuring inflaters (tests/bench/inflate_limit.cpp).
  const Member& entry(const std::string& key) const { return member(key); }
  std::vector<uint8_t> read_stored(const std::string& key);

 private:
  class MemberStream;
  // Gives exactly the next n bytes of a member.
  using ByteSource = std::function<void(uint8_t* dst, size_t n)>;
  const Member& member(const std::string& key) const;
  uint64_t data_offset(const Member& m);
  void read_at(uint64_t offset, void* buf, size_t n);
  void parse_central_directory();
  void parse_entries(uint64_t cd_offset, uint64_t cd_size, uint64_t count);
  // Gives memory for n bytes.
  using Room = std::function<uint8_t*(size_t n)>;
  // The member's bytes (npy header and data), inflated whole into out (its size).
  void inflate_member(const Member& m, uint64_t start, uint8_t* out);
  // Reads and checks the npy header from the member's first bytes.
  NpyHeader parse_member_header(const Member& m, const ByteSource& next);
  // Inflates the whole member into memory from room (*bytes points to it), checks its
  // CRC; returns its checked header.
  NpyHeader open_whole(const std::string& key, const Room& room, uint8_t** bytes);

  std::string path_;
  FILE* file_ = nullptr;
  uint64_t file_size_ = 0;
  std::vector<Member> members_;
  std::map<std::string, size_t> index_;
  std::unique_ptr<NpzBuffer> own_buffer_;
  NpzBuffer* buffer_;              // inflated members (read_chunks)
  NpzBuffer compressed_;           // a deflated member's bytes while it is inflated
};

}  // namespace tpuperf
