#include "pipeline/inspect/json_writer.h"

#include <cmath>
#include <cstdio>

namespace tpuperf {

std::string json_escape(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ << ", ";
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ << "{";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_ << "}";
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ << "[";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_ << "]";
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(const std::string& k) {
  separate();
  out_ << json_escape(k) << ": ";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& v) {
  separate();
  out_ << json_escape(v);
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  out_ << v;
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  separate();
  if (std::isfinite(v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ << buf;
  } else {
    out_ << "null";  // JSON has no NaN/inf
  }
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_ << (v ? "true" : "false");
  return *this;
}
JsonWriter& JsonWriter::int_array(const std::vector<int64_t>& v) {
  begin_array();
  for (int64_t x : v) value(x);
  return end_array();
}

}  // namespace tpuperf
