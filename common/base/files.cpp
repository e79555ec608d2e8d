#include "common/base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/base/error.h"

namespace tpuperf {

namespace fs = std::filesystem;

static std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

static void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: some filesystems refuse fsync on directories
    ::close(fd);
  }
}

void rename_durable(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw Error(sys_error("cannot rename " + from + " to it"), to);
  fsync_dir(fs::path(to).parent_path().string());
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(sys_error("cannot create"), tmp);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string msg = sys_error("write failed");
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(msg, tmp);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string msg = sys_error("write failed");
    ::unlink(tmp.c_str());
    throw Error(msg, tmp);
  }
  rename_durable(tmp, path);
}

static bool is_atomic_temporary(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0 || at + 5 == name.size()) return false;
  return name.find_first_not_of("0123456789", at + 5) == std::string::npos;
}

int remove_stale_temporaries(const std::string& dir, bool recursive) {
  std::vector<fs::path> stale;
  std::error_code ec;
  const auto note = [&](const fs::directory_entry& e) {
    if (e.is_regular_file(ec) && is_atomic_temporary(e.path().filename().string())) stale.push_back(e.path());
  };
  if (!fs::is_directory(dir, ec)) return 0;
  if (recursive) {
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) note(e);
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) note(e);
  }
  int removed = 0;
  for (const auto& p : stale) removed += fs::remove(p, ec) ? 1 : 0;  // best effort: a next run retries
  return removed;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(sys_error("cannot open"), path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw Error("cannot create directory: " + ec.message(), path);
}

}  // namespace tpuperf
