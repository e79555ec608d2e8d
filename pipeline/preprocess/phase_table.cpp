#include "pipeline/preprocess/phase_table.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "common/base/log.h"
#include "common/mpi/collectives.h"

namespace tpuperf {

namespace {

std::string encode(const PhaseTotals& totals) {
  std::string text;
  for (const auto& [name, t] : totals) text += fmt::format("{}\t{:.6f}\t{:.6f}\n", name, t.wall_s, t.cpu_s);
  return text;
}

PhaseTotals decode(std::string_view text) {
  PhaseTotals out;
  std::stringstream ss{std::string(text)};
  for (std::string line; std::getline(ss, line);) {
    const size_t cpu_tab = line.rfind('\t'), wall_tab = line.rfind('\t', cpu_tab - 1);
    out.emplace_back(line.substr(0, wall_tab),
                     PhaseTime{std::stod(line.substr(wall_tab + 1)), std::stod(line.substr(cpu_tab + 1))});
  }
  return out;
}

std::string row(const std::string& name, const std::vector<PhaseTime>& per_rank) {
  std::string wall, cpu;
  for (const PhaseTime& t : per_rank) {
    wall += fmt::format(" {:.3f}", t.wall_s);
    cpu += fmt::format(" {:.3f}", t.cpu_s);
  }
  return "phase " + name + ": wall" + wall + " s, cpu" + cpu + " s";
}

}  // namespace

std::vector<std::string> phase_table_lines(const std::vector<PhaseTotals>& per_rank) {
  std::vector<std::string> names;
  for (const auto& totals : per_rank)
    for (const auto& [name, t] : totals)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::vector<std::string> lines;
  std::vector<PhaseTime> sum(per_rank.size());
  for (const auto& name : names) {
    std::vector<PhaseTime> of(per_rank.size());
    for (size_t r = 0; r < per_rank.size(); ++r)
      for (const auto& [n, t] : per_rank[r])
        if (n == name) of[r] = t;
    for (size_t r = 0; r < per_rank.size(); ++r) {
      sum[r].wall_s += of[r].wall_s;
      sum[r].cpu_s += of[r].cpu_s;
    }
    lines.push_back(row(name, of));
  }
  lines.push_back(row("total", sum));
  return lines;
}

void log_phase_table(int rank, MPI_Comm comm) {
  const RankBytes all = gather_bytes(encode(phase_totals()), 0, comm);
  if (rank != 0) return;
  std::vector<PhaseTotals> per_rank;
  for (int r = 0; r < all.ranks(); ++r) per_rank.push_back(decode(all.of(r)));
  spdlog::info("time per phase, per rank (rank 0, 1, ...), exclusive (a nested phase is not counted "
               "in the enclosing one):");
  for (const auto& line : phase_table_lines(per_rank)) spdlog::info("{}", line);
}

}  // namespace tpuperf
