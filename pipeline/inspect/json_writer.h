// A minimal streaming JSON writer for machine-readable tool output (--json).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tpuperf {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& v);
  JsonWriter& value(const char* v) { return value(std::string(v)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& int_array(const std::vector<int64_t>& v);
  std::string str() const { return out_.str(); }

 private:
  void separate();
  std::ostringstream out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_escape(const std::string& s);

}  // namespace tpuperf
