// The inflate limit of preprocessing, for tests/bench/bench_preprocess.sh: how fast the
// deflated members of an npz tree inflate, with zlib (the reference) and with libdeflate
// (through common/formats/inflate.h, as tpuperf's reader does), on THREADS threads:
//   inflate_limit ROOT THREADS REPEATS
// prints one JSON object: members, compressed and inflated bytes, then per method
// ("zlib", "libdeflate", and each with the CRC-32 the reader also computes) the wall seconds
// and the CPU seconds (user + system of all threads: what a shared machine's other jobs
// disturb less) of every repeat, and the inflated MB/s of the best one.
// Members are read into memory first and every thread inflates into buffers allocated and
// touched before the clock starts, so the figures are inflation alone: no file reads, no
// page faults. Threads take members balanced by inflated size (largest first to the least
// loaded).
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/error.h"
#include "common/formats/inflate.h"
#include "common/formats/npz_reader.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Member {
  std::vector<uint8_t> deflated;
  size_t inflated = 0;
};

std::vector<Member> load_members(const std::string& root) {
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".npz") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<Member> out;
  for (const std::string& p : paths) {
    tpuperf::NpzReader r(p);
    for (const std::string& key : r.keys()) {
      if (r.entry(key).method != 8) continue;  // stored members need no inflating
      out.push_back({r.read_stored(key), static_cast<size_t>(r.entry(key).uncompressed_size)});
    }
  }
  return out;
}

// Member indices per thread, balanced by inflated bytes.
std::vector<std::vector<size_t>> deal(const std::vector<Member>& members, int threads) {
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return members[a].inflated > members[b].inflated; });
  std::vector<std::vector<size_t>> out(static_cast<size_t>(threads));
  std::vector<size_t> load(out.size(), 0);
  for (size_t i : order) {
    size_t t = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[t].push_back(i);
    load[t] += members[i].inflated;
  }
  return out;
}

// zlib as a whole-buffer inflater too (one inflate call per 4 GiB), so that the two
// libraries differ only in their inflate loops.
void zlib_inflate(const Member& m, uint8_t* out) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  if (inflateInit2(&z, -15) != Z_OK) throw tpuperf::Error("cannot initialize zlib inflate");
  z.next_in = const_cast<uint8_t*>(m.deflated.data());
  z.avail_in = static_cast<uInt>(m.deflated.size());
  size_t done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = out + done;
    z.avail_out = static_cast<uInt>(std::min<size_t>(m.inflated - done, UINT32_MAX));
    size_t before = z.avail_out;
    rc = ::inflate(&z, Z_FINISH);
    done += before - z.avail_out;
    if (rc == Z_BUF_ERROR && done < m.inflated) rc = Z_OK;  // more room was needed
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || done != m.inflated) throw tpuperf::Error("zlib could not inflate a member");
}

void libdeflate_inflate(const Member& m, uint8_t* out) {
  tpuperf::inflate_exact(m.deflated.data(), m.deflated.size(), out, m.inflated);
}

uint32_t zlib_crc(const uint8_t* p, size_t n) {
  uint32_t crc = 0;
  for (size_t at = 0; at < n; at += UINT32_MAX)
    crc = static_cast<uint32_t>(::crc32(crc, p + at, static_cast<uInt>(std::min<size_t>(n - at, UINT32_MAX))));
  return crc;
}

using Inflate = std::function<void(const Member&, uint8_t*)>;
using Crc = std::function<uint32_t(const uint8_t*, size_t)>;

// User + system seconds of the whole process (every thread) so far.
double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

struct Timing {
  double wall, cpu;  // cpu: summed over the threads, which waiting for a core does not count
};

// Time for every thread to inflate its members (and CRC them when crc is set).
Timing run(const std::vector<Member>& members, const std::vector<std::vector<size_t>>& work,
           std::vector<std::vector<uint8_t>>& buffers, const Inflate& inflate, const Crc& crc) {
  std::vector<uint32_t> sink(work.size(), 0);
  const double cpu0 = process_cpu_seconds();
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < work.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t i : work[t]) {
        inflate(members[i], buffers[t].data());
        if (crc) sink[t] ^= crc(buffers[t].data(), members[i].inflated);
      }
    });
  for (auto& th : threads) th.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count() + (sink[0] == 1 ? 1e-12 : 0);
  return {wall, process_cpu_seconds() - cpu0};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: inflate_limit ROOT THREADS REPEATS\n");
    return 2;
  }
  try {
    const int threads = std::max(1, std::atoi(argv[2])), repeats = std::max(1, std::atoi(argv[3]));
    std::vector<Member> members = load_members(argv[1]);
    size_t deflated = 0, inflated = 0;
    for (const Member& m : members) deflated += m.deflated.size(), inflated += m.inflated;
    auto work = deal(members, threads);
    std::vector<std::vector<uint8_t>> buffers(work.size());
    for (size_t t = 0; t < work.size(); ++t) {
      size_t most = 0;
      for (size_t i : work[t]) most = std::max(most, members[i].inflated);
      buffers[t].assign(most, 1);  // touched now, so no page faults are timed
    }
    struct Method {
      const char* name;
      Inflate inflate;
      Crc crc;
    };
    const Method methods[] = {
        {"zlib", zlib_inflate, nullptr},
        {"libdeflate", libdeflate_inflate, nullptr},
        {"zlib+crc32", zlib_inflate, zlib_crc},
        {"libdeflate+crc32", libdeflate_inflate, [](const uint8_t* p, size_t n) { return tpuperf::crc32_of(p, n); }},
    };
    std::printf("{\"members\": %zu, \"deflated_bytes\": %zu, \"inflated_bytes\": %zu, \"threads\": %d",
                members.size(), deflated, inflated, threads);
    for (const Method& m : methods) {
      std::vector<double> secs, cpus;
      for (int r = 0; r < repeats; ++r) {
        const Timing t = run(members, work, buffers, m.inflate, m.crc);
        secs.push_back(t.wall);
        cpus.push_back(t.cpu);
      }
      double best = *std::min_element(secs.begin(), secs.end());
      double best_cpu = *std::min_element(cpus.begin(), cpus.end());
      std::printf(", \"%s\": {\"seconds\": [", m.name);
      for (size_t i = 0; i < secs.size(); ++i) std::printf("%s%.3f", i ? ", " : "", secs[i]);
      std::printf("], \"cpu_seconds\": [");
      for (size_t i = 0; i < cpus.size(); ++i) std::printf("%s%.3f", i ? ", " : "", cpus[i]);
      std::printf("], \"best_seconds\": %.3f, \"best_cpu_seconds\": %.3f, \"mb_per_s\": %.1f}", best,
                  best_cpu, inflated / 1e6 / best);
    }
    std::printf("}\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inflate_limit: %s\n", e.what());
    return 2;
  }
}
