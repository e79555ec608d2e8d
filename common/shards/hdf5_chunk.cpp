#include "common/shards/hdf5_chunk.h"

#include <libdeflate.h>

#include <cstring>

#include "common/base/error.h"

namespace tpuperf::h5 {

struct ChunkEncoder::Compressor {
  libdeflate_compressor* c;
  explicit Compressor(int level) : c(libdeflate_alloc_compressor(level)) {
    if (!c) throw Error("cannot allocate a libdeflate compressor at level " + std::to_string(level));
  }
  ~Compressor() { libdeflate_free_compressor(c); }
};

ChunkEncoder::ChunkEncoder(int level) : level_(level) {
  if (level < 0 || level > 9) throw Error("deflate level " + std::to_string(level) + " is not in 0..9");
  if (level > 0) compressor_ = std::make_unique<Compressor>(level);
}

ChunkEncoder::~ChunkEncoder() = default;

const std::vector<uint8_t>& ChunkEncoder::encode(const uint8_t* data, size_t n, size_t elem_size) {
  size_t body = n;
  if (level_ == 0) {
    out_.resize(n + 4);
    std::memcpy(out_.data(), data, n);
  } else {
    const uint8_t* src = data;
    if (elem_size > 1) {
      shuffled_.resize(n);
      shuffle_bytes(data, n, elem_size, shuffled_.data());
      src = shuffled_.data();
    }
    out_.resize(libdeflate_zlib_compress_bound(compressor_->c, n) + 4);
    body = libdeflate_zlib_compress(compressor_->c, src, n, out_.data(), out_.size() - 4);
    if (body == 0) throw Error("libdeflate could not compress a chunk of " + std::to_string(n) + " bytes");
  }
  // The checksum covers the bytes as stored, little-endian after them (UINT32ENCODE).
  const uint32_t sum = fletcher32(out_.data(), body);
  for (int i = 0; i < 4; ++i) out_[body + i] = static_cast<uint8_t>(sum >> (8 * i));
  out_.resize(body + 4);
  return out_;
}

uint32_t fletcher32(const uint8_t* p, size_t n) {
  uint32_t a = 0, b = 0;
  // 360 words keep both sums below 2^32 between folds (HDF5 folds at the same points,
  // which matters: the folded sums are what it compares).
  size_t words = n / 2;
  while (words > 0) {
    size_t run = words < 360 ? words : 360;
    words -= run;
    for (; run > 0; --run, p += 2) {
      a += (static_cast<uint32_t>(p[0]) << 8) | p[1];
      b += a;
    }
    a = (a & 0xffff) + (a >> 16);
    b = (b & 0xffff) + (b >> 16);
  }
  if (n % 2) {
    a += static_cast<uint32_t>(p[0]) << 8;
    b += a;
    a = (a & 0xffff) + (a >> 16);
    b = (b & 0xffff) + (b >> 16);
  }
  a = (a & 0xffff) + (a >> 16);
  b = (b & 0xffff) + (b >> 16);
  return (b << 16) | a;
}

void shuffle_bytes(const uint8_t* in, size_t n, size_t elem_size, uint8_t* out) {
  const size_t count = n / elem_size;
  for (size_t i = 0; i < count; ++i)
    for (size_t byte = 0; byte < elem_size; ++byte) out[byte * count + i] = in[i * elem_size + byte];
  std::memcpy(out + count * elem_size, in + count * elem_size, n - count * elem_size);
}

}  // namespace tpuperf::h5
