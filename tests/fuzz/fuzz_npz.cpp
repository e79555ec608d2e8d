// libFuzzer target for the .npz/.npy readers (issue #6): every input is an archive as
// tpuperf-preprocess would meet it. It goes through the npy header parser on its own, the
// NpzReader (directory, headers, whole members, streamed members, conversions) and the
// TpuGraphs loaders with their validation. Any tpuperf::Error is a correct rejection; a
// crash, a sanitizer report, a leak, an exception of another type or an allocation
// beyond libFuzzer's -malloc_limit_mb is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/formats/npy.h"
#include "common/formats/npz_reader.h"

namespace {

// The readers take a path: the input lives in an anonymous in-memory file, reached
// through /proc, so that fuzzing does no disk I/O and leaves no files behind.
const std::string& input_path(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz.npz", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 ||
      (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)))
    __builtin_trap();  // the harness itself failed, not the code under test
  return path;
}

template <typename Fn>
void rejects_cleanly(Fn&& fn) {
  try {
    fn();
  } catch (const tpuperf::Error&) {
  }
}

void read_members(const std::string& path) {
  tpuperf::NpzReader r(path);
  for (const std::string& key : r.keys()) {
    rejects_cleanly([&] { r.header(key); });
    rejects_cleanly([&] {
      tpuperf::NpyArray a = r.read(key);
      a.to_float();
      a.to_int64();
    });
    rejects_cleanly([&] {
      size_t total = 0;
      r.read_chunks(key, nullptr, [&](const uint8_t*, size_t n) { total += n; });
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rejects_cleanly([&] { tpuperf::parse_npy_header(data, size); });
  const std::string& path = input_path(data, size);
  rejects_cleanly([&] { read_members(path); });
  rejects_cleanly([&] { tpuperf::load_tile_graph(path); });
  rejects_cleanly([&] { tpuperf::load_layout_graph(path); });
  return 0;
}
