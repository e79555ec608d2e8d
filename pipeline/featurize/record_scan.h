// The top level of a tuning record read at the wire level, without parsing it: which
// message it is (TuningData or ModuleTuningData, the file does not say) and where each
// top-level field lies, so a tile file's kernels can be parsed one by one and a cut or
// garbled file still yields the kernels before the damage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf::featurize {

enum class RecordKind { Tile, Layout };
const char* kind_name(RecordKind kind);  // "tile", "layout"

struct WireField {
  uint32_t number = 0;
  int wire_type = 0;      // 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit
  size_t offset = 0;      // of the tag
  size_t payload = 0;     // offset of a length-delimited field's bytes
  size_t size = 0;        // its byte count (what is left of it when truncated)
};

struct TopLevel {
  std::vector<WireField> fields;  // complete fields, in file order
  // Set when the scan stopped early: the field it stopped in (its bytes up to the end of
  // the file, for a length-delimited one) and why, with the byte offset.
  bool damaged = false;
  WireField broken;
  std::string damage;
};

// Never throws: damage is reported in the result.
TopLevel scan_top_level(const uint8_t* data, size_t size);

// Tells TuningData (tile) from ModuleTuningData (layout), as upstream's records carry no
// type: any top-level field but 1 means ModuleTuningData; several fields 1 mean
// TuningData; a single field 1 is told by its payload (an HloModuleProto has a string
// field 2 or fields >= 5, a ModuleTuningData a varint field 2). A damaged field takes
// part with what is left of it. Throws Error when the record is empty or the kind cannot
// be told (the caller then needs --kind).
RecordKind detect_kind(const uint8_t* data, const TopLevel& top);

}  // namespace tpuperf::featurize
