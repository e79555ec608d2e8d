// The one error type of tpuperf: a reason plus the context needed to act on it
// (which file, which key inside it, which MPI rank). Code that knows more context
// catches, adds it and rethrows, so the final message names everything.
#pragma once

#include <stdexcept>
#include <string>

namespace tpuperf {

class Error : public std::exception {
 public:
  explicit Error(std::string reason, std::string file = "", std::string key = "");

  // Context is filled in by whoever knows it; an already-set field is kept,
  // because the innermost code knows it most precisely.
  Error& with_file(const std::string& file);
  Error& with_key(const std::string& key);
  Error& with_rank(int rank);

  const std::string& reason() const { return reason_; }
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  int rank() const { return rank_; }

  // "<file>: key '<key>': <reason> [rank N]", omitting the parts that are unknown.
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  void rebuild();
  std::string reason_, file_, key_, message_;
  int rank_ = -1;
};

// Throws Error(reason) when cond is false. For checks of input data, not of program logic.
inline void require(bool cond, const std::string& reason) {
  if (!cond) throw Error(reason);
}

}  // namespace tpuperf
