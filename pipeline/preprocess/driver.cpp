#include "pipeline/preprocess/driver.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "common/graph/collection.h"
#include "common/mpi/collectives.h"
#include "common/base/error.h"
#include "common/base/fault.h"
#include "common/base/files.h"
#include "common/graph/graph.h"
#include "common/base/hash.h"
#include "common/base/log.h"
#include "common/base/phase_clock.h"
#include "common/shards/manifest.h"
#include "common/base/progress.h"
#include "common/shards/shard_writer.h"
#include "common/cli/tool_main.h"
#include "pipeline/preprocess/convert.h"
#include "pipeline/preprocess/merge.h"
#include "pipeline/preprocess/phase_table.h"
#include "pipeline/preprocess/folds.h"
#include "pipeline/preprocess/plan.h"
#include "pipeline/preprocess/rank_memory.h"
#include "pipeline/preprocess/settings.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

// The open shard of each (collection, split) on this rank. Valid and test shards are
// closed as soon as they reach the target size; train shards stay open until the folds
// are known (folds need every rank's rejections), then get their folds and are closed.
class ShardSet {
 public:
  ShardSet(const PreprocessSettings& s, int rank, int generation, Manifest& out)
      : s_(s), rank_(rank), gen_(generation), out_(out) {}

  // Adds a graph and records it in the partial manifest.
  void add(const ProcessedGraph& g) {
    std::string unit = unit_key(g.collection, g.split);
    auto& open = open_[unit];
    if (!open || (g.split != "train" && open->bytes_added() >= s_.shard_bytes)) {
      if (open) close(std::move(open), g.collection, g.split);
      open = start(g.collection, g.split);
    } else if (g.split == "train" && open->bytes_added() >= s_.shard_bytes) {
      parked_.push_back({std::move(open), g.collection, g.split});
      open = start(g.collection, g.split);
    }
    open->add(g);
    ManifestGraph mg;
    mg.collection = g.collection;
    mg.split = g.split;
    mg.name = g.name;
    mg.shard = relative(open->path());
    mg.index = open->num_graphs() - 1;
    mg.fold = g.fold;
    mg.num_nodes = g.num_nodes;
    mg.num_edges = g.num_edges();
    mg.num_configs = g.num_configs();
    mg.configs_before = g.configs_before;
    mg.nodes_before = g.nodes_before;
    mg.edges_before = g.edges_before;
    out_.graphs.push_back(mg);
  }

  // Closes valid/test shards; train shards wait for close_train().
  void close_eval() {
    for (auto& [unit, w] : open_) {
      if (!w) continue;
      std::string coll = unit.substr(0, unit.find('|')), split = unit.substr(unit.find('|') + 1);
      if (split == "train")
        parked_.push_back({std::move(w), coll, split});
      else
        close(std::move(w), coll, split);
    }
    open_.clear();
  }

  // Sets each train graph's fold (by collection and name), then closes the train shards.
  void close_train(const std::map<std::string, std::map<std::string, int>>& folds) {
    for (auto& mg : out_.graphs)
      if (mg.split == "train") mg.fold = folds.at(mg.collection).at(mg.name);
    for (auto& p : parked_) {
      std::string file = relative(p.writer->path());
      for (const auto& mg : out_.graphs)
        if (mg.shard == file) p.writer->set_fold(mg.index, mg.fold);
      close(std::move(p.writer), p.collection, p.split);
    }
    parked_.clear();
  }

 private:
  struct Parked {
    std::unique_ptr<ShardWriter> writer;
    std::string collection, split;
  };

  std::unique_ptr<ShardWriter> start(const std::string& collection, const std::string& split) {
    int index = next_index_[unit_key(collection, split)]++;
    std::string dir = s_.out_dir + "/" + collection_dir(collection) + "/" + split;
    make_dirs(dir);
    char name[64];
    std::snprintf(name, sizeof name, "/g%d-r%d-%05d.h5", gen_, rank_, index);
    return std::make_unique<ShardWriter>(dir + name, collection, split, s_.deflate);
  }

  void close(std::unique_ptr<ShardWriter> w, const std::string& collection, const std::string& split) {
    w->close();
    ManifestShard sh;
    sh.file = relative(w->path());
    sh.collection = collection;
    sh.split = split;
    sh.rank = rank_;
    sh.num_graphs = w->num_graphs();
    sh.size_bytes = static_cast<int64_t>(fs::file_size(w->path()));
    ScopedPhase phase("hash");
    sh.hash = hash_file(w->path());
    std::string base = sh.file.substr(sh.file.rfind('-') + 1);
    sh.index = std::atoi(base.c_str());
    out_.shards.push_back(sh);
  }

  std::string relative(const std::string& path) const {
    return fs::relative(path, s_.out_dir).string();
  }

  const PreprocessSettings& s_;
  int rank_, gen_;
  Manifest& out_;
  std::map<std::string, std::unique_ptr<ShardWriter>> open_;
  std::vector<Parked> parked_;
  std::map<std::string, int> next_index_;
};

// Loads, validates and converts one source file. Any tpuperf::Error here means the file
// is bad: it is rejected and the run goes on. Shards hold re-padded but untransformed node
// features: the transform is fitted after all ranks have seen the train split and is
// applied when graphs are read, the same way for train, valid, test and new data.
ProcessedGraph convert(const SourceFile& src, const PreprocessSettings& s) {
  if (src.is_directory) throw Error("is a directory, not an .npz file", src.abs_path);
  // A rank reads file after file: one buffer for all their members, so that memory is
  // page-faulted once, not per file (it keeps the largest member's size for the run).
  static NpzBuffer buffer;
  return convert_source(src.abs_path, src.collection, src.split, kFoldTest, s, &buffer);
}

int fold_of_split(const std::string& split) {
  if (split == "valid") return kFoldValid;
  if (split == "test") return kFoldTest;
  return 0;  // train: assigned once every rank's rejections are known
}

// Processes this rank's share of the files (balanced by their inflated size, largest
// first); records sources and
// rejections in `partial` (graphs and shards are recorded by ShardSet) and returns this
// rank's train statistics per collection.
std::map<std::string, FeatureStats> process_my_files(const Plan& plan, const PreprocessSettings& s,
                                                     const MpiContext& ctx, ShardSet& shards,
                                                     Manifest& partial) {
  std::map<std::string, FeatureStats> stats;
  std::vector<size_t> todo;
  std::vector<int64_t> unpacked;
  {
    ScopedPhase phase("plan");
    for (size_t i = 0; i < plan.sources.size(); ++i)
      if (plan.process[i]) {
        todo.push_back(i);
        unpacked.push_back(unpacked_size(plan.sources[i]));
      }
  }
  const std::vector<size_t> mine = share_largest_first(unpacked, ctx.size, ctx.rank);
  int64_t my_bytes = 0;
  for (size_t j : mine) my_bytes += plan.sources[todo[j]].size;
  if (!mine.empty()) reserve_working_memory(unpacked[mine.front()]);
  Progress progress("preprocess", static_cast<int64_t>(mine.size()), my_bytes);
  for (size_t j : mine) {
    const SourceFile& src = plan.sources[todo[j]];
    ManifestSource ms;
    ms.file = src.rel_path;
    ms.collection = src.collection;
    ms.split = src.split;
    ms.size_bytes = src.size;
    ms.mtime_ns = src.mtime_ns;
    ProcessedGraph g;
    try {
      g = convert(src, s);
      ScopedPhase phase("hash");
      ms.hash = hash_file(src.abs_path);
    } catch (const Error& e) {
      ms.status = kSourceRejected;
      ms.reason = e.what();
      partial.rejected.push_back({src.rel_path, e.key(), e.reason()});
      partial.sources.push_back(ms);
      spdlog::warn("rejected {}", e.what());
      progress.tick(src.size);
      continue;
    }
    g.fold = fold_of_split(src.split);
    if (src.split == "train") {
      ScopedPhase phase("normalization statistics");
      stats[src.collection].add_graph(g.node_feat, g.num_nodes);
    }
    shards.add(g);  // a failure here (disk full, ...) is fatal, not a bad input
    partial.sources.push_back(ms);
    progress.tick(src.size);
    fault_point("preprocess.file_done");
  }
  progress.finish();
  return stats;
}

// Gathers every rank's partial manifest on rank 0 (as YAML text: one serialization).
std::vector<Manifest> gather_partials(const Manifest& mine, const MpiContext& ctx) {
  ScopedPhase phase("manifest");
  const std::string text = manifest_to_yaml(mine);
  const RankBytes all = [&] {
    ScopedPhase waiting(kCollectives);
    return gather_bytes(text, 0, ctx.world);
  }();
  std::vector<Manifest> out;
  if (ctx.rank == 0)
    for (int r = 0; r < ctx.size; ++r)
      out.push_back(manifest_from_yaml(std::string(all.of(r)), "rank " + std::to_string(r)));
  return out;
}

// Every rank learns which train sources were rejected anywhere, so all compute the same
// folds over the accepted graphs (a bad file must not move good graphs between folds).
std::set<std::string> allgather_rejected(const Manifest& mine, const MpiContext& ctx) {
  std::string text;
  for (const auto& s : mine.sources)
    if (!s.ok()) text += s.file + "\n";
  std::set<std::string> rejected;
  ScopedPhase waiting(kCollectives);
  std::stringstream ss(allgather_bytes(text, ctx.world).bytes);
  for (std::string line; std::getline(ss, line);) rejected.insert(line);
  return rejected;
}

// collection -> graph name -> fold, for the train units redone in this run. Every rank
// computes the same folds; `say` ranks log the rule's note.
std::map<std::string, std::map<std::string, int>> compute_folds(const Plan& plan, const PreprocessSettings& s,
                                                                const std::set<std::string>& rejected, bool say) {
  std::map<std::string, std::map<std::string, int>> folds;
  std::map<std::string, std::vector<const SourceFile*>> train;
  for (const auto& src : plan.sources)
    if (src.split == "train" && plan.redo_units.count(unit_key(src.collection, "train")) &&
        !rejected.count(src.rel_path))
      train[src.collection].push_back(&src);
  for (const auto& [coll, files] : train) {
    std::vector<std::string> names;
    std::vector<int64_t> sizes;
    for (const auto* f : files) names.push_back(f->stem), sizes.push_back(f->size);
    const FoldAssignment a = assign_folds(names, sizes, s.folds, s.seed, s.fold_by);
    if (say && !a.note.empty()) spdlog::warn("{}: {}", coll, a.note);
    for (size_t i = 0; i < names.size(); ++i) folds[coll][names[i]] = a.folds[i];
  }
  return folds;
}

// A rerun with unchanged inputs and settings: no file is read or written, except the
// manifest when some source was only touched (new mtime, same content).
int report_nothing_to_do(const Config& cfg, const PreprocessSettings& s, const Plan& plan,
                         const Manifest* previous, const MpiContext& ctx) {
  int code = kExitOk;
  if (ctx.rank == 0) {
    bool touched = false;
    std::map<std::string, int64_t> mtime;
    for (const auto& src : previous->sources) mtime[src.file] = src.mtime_ns;
    for (const auto& src : plan.sources) touched |= mtime[src.rel_path] != src.mtime_ns;
    if (touched) {
      code = finish_on_rank0(cfg, s, plan, previous, {}, {});
      spdlog::info("nothing to reprocess: some sources were touched but unchanged; manifest updated");
    } else {
      collect_garbage(s.out_dir, *previous);  // what a killed run may have left
      code = previous->rejected.empty() ? kExitOk : kExitRejected;
      spdlog::info("nothing to do: {} sources and the settings are unchanged since {} (--force redoes all)",
                   plan.sources.size(), previous->created);
    }
  }
  check_mpi(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world), "MPI_Bcast");
  return code;
}

}  // namespace

int run_preprocess(const Config& cfg, const MpiContext& ctx, bool force) {
  ScopedPhase run("other");  // whatever no inner phase claims
  PreprocessSettings s(cfg);
  std::unique_ptr<Manifest> previous;
  Plan plan;
  if (ctx.rank == 0) {
    ScopedPhase phase("plan");
    cfg.log();
    std::string manifest_path = s.out_dir + "/" + kManifestFileName;
    if (fs::exists(manifest_path)) {
      try {
        previous = std::make_unique<Manifest>(read_manifest(manifest_path));
      } catch (const Error& e) {
        spdlog::warn("previous manifest unusable, redoing everything: {}", e.what());
      }
    }
    plan = make_plan(cfg, s.out_dir, previous.get(), force);
    for (const auto& r : plan.reasons) spdlog::info("redo {}", r);
  }
  {
    ScopedPhase waiting(kCollectives);
    broadcast_plan(plan, ctx.rank, ctx.world);
  }
  if (plan.nothing_to_do()) return report_nothing_to_do(cfg, s, plan, previous.get(), ctx);

  Manifest partial;
  std::map<std::string, FeatureStats> stats;
  if (!plan.redo_units.empty()) {
    ShardSet shards(s, ctx.rank, plan.generation, partial);
    auto my_stats = process_my_files(plan, s, ctx, shards, partial);
    shards.close_eval();
    auto rejected = allgather_rejected(partial, ctx);
    shards.close_train(compute_folds(plan, s, rejected, ctx.rank == 0));
    // Statistics of the redone train splits, summed over ranks (exact: see features.h).
    for (const auto& coll : plan.refit) {
      if (!plan.redo_units.count(unit_key(coll, "train"))) continue;
      FeatureStats& st = stats[coll];
      if (my_stats.count(coll)) st = my_stats[coll];
      ScopedPhase waiting(kCollectives);
      st.mpi_allreduce(ctx.world);
    }
  }
  spdlog::info("peak memory of this rank: {:.0f} MB", peak_rss_mb());
  std::vector<Manifest> partials = gather_partials(partial, ctx);
  int code = kExitOk;
  if (ctx.rank == 0) {
    ScopedPhase phase("manifest");
    code = finish_on_rank0(cfg, s, plan, previous.get(), partials, stats);
  }
  {
    ScopedPhase waiting(kCollectives);
    check_mpi(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world), "MPI_Bcast");
  }
  log_phase_table(ctx.rank, ctx.world);
  return code;
}

}  // namespace tpuperf
