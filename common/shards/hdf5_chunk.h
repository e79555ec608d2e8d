// Chunks encoded as HDF5's own filter pipeline stores them, for direct chunk writes
// (H5Dwrite_chunk): shuffle, deflate in the zlib format, fletcher32, the pipeline that
// h5::create_dataset sets (HDF5 1.10 numbers and formats). Any HDF5 reader, h5py
// included, reads such chunks with its stock filters; the deflate itself is libdeflate's,
// 2-3x the speed of the zlib inside HDF5's deflate filter at the same level.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tpuperf::h5 {

class ChunkEncoder {
 public:
  // level 0: the pipeline holds only fletcher32 (no shuffle, no deflate); 1..9 as zlib's
  // levels (libdeflate's level of the same number: a similar ratio).
  explicit ChunkEncoder(int level);
  ~ChunkEncoder();
  ChunkEncoder(const ChunkEncoder&) = delete;
  ChunkEncoder& operator=(const ChunkEncoder&) = delete;

  // The stored bytes of one chunk of n bytes holding elements of elem_size bytes; valid
  // until the next call.
  const std::vector<uint8_t>& encode(const uint8_t* data, size_t n, size_t elem_size);

 private:
  struct Compressor;
  int level_;
  std::unique_ptr<Compressor> compressor_;
  std::vector<uint8_t> shuffled_, out_;
};

// HDF5's fletcher32: Fletcher's checksum over big-endian 16-bit words, an odd last byte
// taken as the high byte of a word, both sums folded to 16 bits.
uint32_t fletcher32(const uint8_t* p, size_t n);

// HDF5's byte shuffle: byte b of element i goes to b * count + i (count = n / elem_size);
// bytes past the last whole element stay at the end.
void shuffle_bytes(const uint8_t* in, size_t n, size_t elem_size, uint8_t* out);

}  // namespace tpuperf::h5
