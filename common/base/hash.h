// A stable, fast 64-bit content hash (not cryptographic): identifies settings and input
// files in manifests, so that reruns can tell what changed. Stable across runs, machines
// and builds; streaming, so large files hash in constant memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tpuperf {

class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0);
  void update(const void* data, size_t n);
  void update(const std::string& s) { update(s.data(), s.size()); }
  uint64_t digest() const;
  std::string hex() const;  // 16 lowercase hex digits

 private:
  void mix_block(const uint8_t* p);
  uint64_t lanes_[4];
  uint8_t tail_[32];
  size_t tail_len_ = 0;
  uint64_t total_ = 0;
};

std::string hash_hex(const std::string& s);
// Hashes a whole file in 1 MiB reads; throws Error naming the file.
std::string hash_file(const std::string& path);

}  // namespace tpuperf
