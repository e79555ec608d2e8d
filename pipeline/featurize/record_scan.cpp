#include "pipeline/featurize/record_scan.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/base/error.h"

namespace tpuperf::featurize {

namespace {

constexpr int kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5;

// Reads a base-128 varint at data[pos]; false when it runs past `size` or past 10 bytes.
bool read_varint(const uint8_t* data, size_t size, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= size) return false;
    uint8_t byte = data[pos++];
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (byte < 0x80) return true;
  }
  return false;
}

// Reads one field at pos into f; returns "" or why it could not (pos then names where).
std::string read_field(const uint8_t* data, size_t size, size_t& pos, WireField& f) {
  f = WireField{};
  f.offset = pos;
  uint64_t key = 0, value = 0;
  if (!read_varint(data, size, pos, key)) return "cut inside a field tag";
  f.number = static_cast<uint32_t>(key >> 3);
  f.wire_type = static_cast<int>(key & 7);
  if (f.number == 0 || key >> 32 != 0) return fmt::format("invalid field number {}", key >> 3);
  switch (f.wire_type) {
    case kVarint:
      if (!read_varint(data, size, pos, value)) return "cut inside a varint";
      return "";
    case kFixed64:
    case kFixed32: {
      size_t n = f.wire_type == kFixed64 ? 8 : 4;
      if (size - pos < n) return fmt::format("{}-byte value cut after {} bytes", n, size - pos);
      pos += n;
      return "";
    }
    case kLength:
      if (!read_varint(data, size, pos, value)) return "cut inside a length";
      f.payload = pos;
      f.size = static_cast<size_t>(std::min<uint64_t>(value, size - pos));
      if (value > size - pos)
        return fmt::format("declares {} bytes, the file ends {} bytes later", value, size - pos);
      pos += f.size;
      return "";
    default:
      return fmt::format("wire type {} (groups or garbage)", f.wire_type);
  }
}

// Field numbers and wire types of a payload's fields, as far as they can be read.
std::vector<WireField> fields_of(const uint8_t* data, size_t size) {
  std::vector<WireField> out;
  size_t pos = 0;
  WireField f;
  while (pos < size) {
    bool ok = read_field(data, size, pos, f).empty();
    if (f.number != 0) out.push_back(f);
    if (!ok) break;
  }
  return out;
}

}  // namespace

const char* kind_name(RecordKind kind) { return kind == RecordKind::Tile ? "tile" : "layout"; }

TopLevel scan_top_level(const uint8_t* data, size_t size) {
  TopLevel top;
  size_t pos = 0;
  while (pos < size) {
    WireField f;
    std::string why = read_field(data, size, pos, f);
    if (!why.empty()) {
      top.damaged = true;
      top.broken = f;
      top.damage = fmt::format("field {} at byte {}: {}", f.number, f.offset, why);
      break;
    }
    top.fields.push_back(f);
  }
  return top;
}

RecordKind detect_kind(const uint8_t* data, const TopLevel& top) {
  std::vector<WireField> all = top.fields;
  if (top.damaged && top.broken.number != 0) all.push_back(top.broken);
  if (all.empty()) throw Error("empty record: neither a TuningData nor a ModuleTuningData");
  for (const WireField& f : all)
    if (f.number != 1) return RecordKind::Layout;
  if (all.size() > 1) return RecordKind::Tile;
  const WireField& only = all[0];
  if (only.wire_type == kLength) {
    std::vector<WireField> inner = fields_of(data + only.payload, only.size);
    for (const WireField& f : inner)
      if ((f.number == 2 && f.wire_type == kLength) || f.number >= 5) return RecordKind::Layout;
    for (const WireField& f : inner)
      if (f.number == 2 && f.wire_type == kVarint) return RecordKind::Tile;
  }
  throw Error("cannot tell a TuningData (tile) from a ModuleTuningData (layout): the record "
              "holds a single field 1 without the fields that differ (pass --kind tile|layout)");
}

}  // namespace tpuperf::featurize
