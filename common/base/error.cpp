#include "common/base/error.h"

namespace tpuperf {

Error::Error(std::string reason, std::string file, std::string key)
    : reason_(std::move(reason)), file_(std::move(file)), key_(std::move(key)) {
  rebuild();
}

Error& Error::with_file(const std::string& file) {
  if (file_.empty()) file_ = file;
  rebuild();
  return *this;
}

Error& Error::with_key(const std::string& key) {
  if (key_.empty()) key_ = key;
  rebuild();
  return *this;
}

Error& Error::with_rank(int rank) {
  if (rank_ < 0) rank_ = rank;
  rebuild();
  return *this;
}

void Error::rebuild() {
  message_.clear();
  if (!file_.empty()) message_ += file_ + ": ";
  if (!key_.empty()) message_ += "key '" + key_ + "': ";
  message_ += reason_;
  if (rank_ >= 0) message_ += " [rank " + std::to_string(rank_) + "]";
}

}  // namespace tpuperf
