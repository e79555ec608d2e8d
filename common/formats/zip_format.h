// The zip format's records as .npz archives use them (numpy's savez writes zip files of
// .npy members): signatures, fixed record lengths and little-endian field access. Shared
// by the reader (npz_reader.cpp) and the writer (npz_writer.cpp) only.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace tpuperf::zip {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraTag = 0x0001;
constexpr size_t kLocalLen = 30, kCentralLen = 46, kEndLen = 22;
constexpr size_t kZip64EndLen = 56, kZip64LocatorLen = 20;
constexpr uint32_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr size_t kChunk = 1 << 20;  // members are read and written in 1 MiB pieces

inline uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get32(const uint8_t* p) {
  return get16(p) | (static_cast<uint32_t>(get16(p + 2)) << 16);
}
inline uint64_t get64(const uint8_t* p) {
  return get32(p) | (static_cast<uint64_t>(get32(p + 4)) << 32);
}

inline void put16(std::string& s, uint16_t v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>(v >> 8);
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, static_cast<uint16_t>(v & 0xFFFF));
  put16(s, static_cast<uint16_t>(v >> 16));
}
inline void put64(std::string& s, uint64_t v) {
  put32(s, static_cast<uint32_t>(v & kMax32));
  put32(s, static_cast<uint32_t>(v >> 32));
}

inline std::string errno_text() { return std::strerror(errno); }

// A member's key: its name without the ".npy" suffix.
inline std::string member_key(const std::string& name) {
  const std::string ext = ".npy";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    return name.substr(0, name.size() - ext.size());
  return name;
}

}  // namespace tpuperf::zip
