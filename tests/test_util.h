// Helpers shared by the GoogleTest files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "common/base/error.h"

namespace tpuperf {

// The message of the Error fn throws (it names the file and key); a test failure and
// "no Error thrown" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no Error thrown";
  return "no Error thrown";
}

// A fresh directory under /tmp, removed with everything in it when the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string tmpl = "/tmp/tpuperf_" + tag + "_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;  // never throw from a destructor
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace tpuperf
