#include "common/base/hash.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/base/error.h"

namespace tpuperf {

namespace {
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
// hash_file reads in pieces this large: constant memory, few system calls.
constexpr size_t kHashReadBytes = size_t{1} << 20;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (x86-64, aarch64), which is all tpuperf targets
}
// Final avalanche so that nearby inputs give unrelated digests.
uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}
}  // namespace

Hasher::Hasher(uint64_t seed) {
  for (int i = 0; i < 4; ++i) lanes_[i] = seed + kP1 * static_cast<uint64_t>(i + 1);
}

// Four independent lanes keep the multiplies pipelined: ~several GB/s per core.
void Hasher::mix_block(const uint8_t* p) {
  for (int i = 0; i < 4; ++i) lanes_[i] = rotl(lanes_[i] + load64(p + 8 * i) * kP2, 31) * kP1;
}

void Hasher::update(const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (tail_len_ > 0) {
    size_t take = std::min(n, 32 - tail_len_);
    std::memcpy(tail_ + tail_len_, p, take);
    tail_len_ += take;
    p += take;
    n -= take;
    if (tail_len_ < 32) return;
    mix_block(tail_);
    tail_len_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) mix_block(p);
  std::memcpy(tail_, p, n);
  tail_len_ = n;
}

uint64_t Hasher::digest() const {
  uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
  h ^= total_ * kP3;
  for (size_t i = 0; i < tail_len_; ++i) h = rotl(h ^ (tail_[i] * kP1), 11) * kP2;
  return avalanche(h);
}

std::string Hasher::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest()));
  return buf;
}

std::string hash_hex(const std::string& s) {
  Hasher h;
  h.update(s);
  return h.hex();
}

std::string hash_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(std::string("cannot open for hashing: ") + std::strerror(errno), path);
  Hasher h;
  std::vector<uint8_t> buf(kHashReadBytes);
  size_t got;
  while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), got);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw Error("read error while hashing", path);
  return h.hex();
}

}  // namespace tpuperf
