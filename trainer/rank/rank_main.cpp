// tpuperf-rank: rank the configs of graphs a run has never seen with its fold models, as
// an autotuner would. No MPI and no processed tree: the run directory and the inputs.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

#include "common/cli/cli.h"
#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/formats/json.h"
#include "common/base/log.h"
#include "common/formats/npz_reader.h"
#include "common/graph/graph.h"
#include "trainer/eval/scoring.h"
#include "common/base/progress.h"
#include "common/cli/tool_main.h"
#include "tpuperf/ranker.h"

using namespace tpuperf;

static const char* kEpilog =
    "INPUT is a TpuGraphs .npz in the release's format (its runtimes, if any, are not used).\n"
    "Its collection is --collection, else its place in a release-style tree\n"
    "(.../tile/xla/test/x.npz, .../layout/nlp/random/test/x.npz), else the run's only\n"
    "collection of the file's kind (tile: config_feat; layout: node_config_feat).\n\n"
    "It applies what the run applied: each fold checkpoint's feature transform and model,\n"
    "the pruning its data was preprocessed with, the fold ensemble (output.ensemble) and\n"
    "for tile output.tile_keep_default; identical configs share one score.\n\n"
    "output (stdout):\n"
    "  text    per input a '# INPUT: ...' line, then 'rank config score' rows best first;\n"
    "          score is the ensemble's predicted cost relative to the graph's other configs\n"
    "          (output.ensemble units, e.g. mean z-score); lower = predicted faster\n"
    "  --csv   a submission's format, rows sorted by ID (ID = <collection>:<file stem>):\n"
    "          tile the 5 best, layout every config (or --top K)\n"
    "  --json  {\"run\", \"results\": [{\"input\", \"collection\", \"id\", \"configs\",\n"
    "          \"distinct_configs\", \"folds\", \"ms\", \"order\", \"score\"}], \"rejected\": [{\"input\", \"error\"}]}\n"
    "          (score[i] belongs to order[i]); when the input holds measured runtimes (not all\n"
    "          zero), a result also has \"score_vs_runtimes\" (the competition score of the\n"
    "          ranking: tile top-5 slowdown score, layout Kendall tau) and \"slowdown\":\n"
    "          {\"top1\", \"top5\", \"top10\"} (the best runtime among the k best ranked\n"
    "          configs over the best of all), as tpuperf-score computes them\n\n"
    "--adapt MEASURED.npz: MEASURED is the INPUTs' graph with runtimes of the configs an\n"
    "autotuner measured (config_runtime, for tile over config_runtime_normalizers; 0 = not\n"
    "measured; at least two). Copies of the fold models are fine-tuned on them with the\n"
    "run's loss: --adapt-steps AdamW steps, no weight decay, on slates of the run's\n"
    "train.tile_slate / train.layout_slate measured configs drawn with --seed. They rank the\n"
    "INPUTs, which must be that graph (another is rejected); the run's files are not changed.\n"
    "Seconds on one core for hundreds of measured configs; the same --seed, the same ranking.\n\n"
    "examples:\n"
    "  tpuperf-rank --run runs/demo data/npz_all/npz/tile/xla/test/*.npz --top 5\n"
    "  tpuperf-rank --run runs/demo --collection layout:xla:random --json my_graph.npz\n"
    "  tpuperf-rank --run runs/demo --adapt measured.npz --top 5 candidates.npz\n\n"
    "exit codes: 0 done, 2 error (usage, run directory), 3 some inputs rejected (each named on stderr).";

namespace {

struct Settings {
  std::string run;
  std::optional<std::string> collection;
  int64_t top = 0;  // 0: every config
  enum class Format { Text, Csv, Json } format = Format::Text;
  RankerOptions ranker;
  std::optional<std::string> adapt;  // --adapt MEASURED.npz
  AdaptOptions adapt_options;
  std::vector<std::string> inputs;
};

Settings parse_settings(int argc, char** argv) {
  Cli cli("tpuperf-rank", "Rank the configs of TpuGraphs-format graphs with a training run's fold models.");
  cli.option("run", "DIR", "the training run's directory (tpuperf-train's output.dir)")
      .option("collection", "C", "whose models rank every input, e.g. tile:xla, layout:nlp:random")
      .option("top", "K", "print only the K configs predicted best")
      .flag("csv", "print the submission's format (ID,TopConfigs)")
      .flag("json", "print JSON (format below)")
      .option("threads", "N", "LibTorch threads (default 1)")
      .flag("plain", "score with plain LibTorch ops instead of the fused kernels (the same ranking)")
      .option("adapt", "MEASURED.npz", "fine-tune the fold models on MEASURED's measured configs first (below)")
      .option("adapt-steps", "N",
              "--adapt: optimizer steps per fold model (default " + std::to_string(kDefaultAdaptSteps) + ")")
      .option("adapt-lr", "X",
              "--adapt: learning rate (default the run's train.lr x " + fmt::format("{:g}", kDefaultAdaptLrFraction) + ")")
      .option("seed", "S", "--adapt: seed of the slates and dropout (default 0)")
      .positionals("INPUT...", ".npz files to rank", 1)
      .epilog(kEpilog);
  cli.parse(argc, argv);
  Settings s;
  if (!cli.has("run")) throw UsageError("--run DIR is required (the training run's output.dir)");
  if (cli.has("csv") && cli.has("json")) throw UsageError("--csv and --json exclude each other");
  s.run = cli.get("run");
  if (cli.has("collection"))
    as_usage_check([&] { s.collection = Collection::parse(cli.get("collection")).id(); });
  s.top = cli.get_int<int64_t>("top", 0, 1);
  s.format = cli.has("csv") ? Settings::Format::Csv : cli.has("json") ? Settings::Format::Json : Settings::Format::Text;
  s.ranker.threads = cli.get_int("threads", 1, 1);
  s.ranker.fused = !cli.has("plain");
  for (const char* option : {"adapt-steps", "adapt-lr", "seed"})
    if (cli.has(option) && !cli.has("adapt")) throw UsageError(std::string("--") + option + " needs --adapt MEASURED.npz");
  if (cli.has("adapt")) s.adapt = cli.get("adapt");
  s.adapt_options.steps = cli.get_int<int64_t>("adapt-steps", 0, 1);
  s.adapt_options.lr = cli.get_double("adapt-lr", 0, 0, 1, Open::Min);
  s.adapt_options.seed = cli.get_int<uint64_t>("seed", 0);
  s.inputs = cli.args();
  return s;
}

// Which of the run's collections ranks an input (see kEpilog).
std::string collection_of(const std::string& input, const Settings& s, const std::vector<std::string>& trained) {
  auto list = [&] {
    std::string t;
    for (const auto& c : trained) t += (t.empty() ? "" : ", ") + c;
    return t;
  };
  std::string id;
  if (s.collection) {
    id = *s.collection;
  } else if (const auto place = place_in_tree(input)) {
    id = place->collection.id();
  } else {
    NpzReader npz(input);
    const bool layout = npz.has("node_config_feat");
    if (!layout && !npz.has("config_feat"))
      throw Error("holds neither config_feat (tile) nor node_config_feat (layout)", input);
    std::vector<std::string> of_kind;
    for (const auto& c : trained)
      if ((Collection::parse(c).kind == Kind::Layout) == layout) of_kind.push_back(c);
    if (of_kind.size() != 1)
      throw Error(std::string("a ") + (layout ? "layout" : "tile") +
                      " file outside a release tree: pass --collection (the run has " + list() + ")",
                  input);
    id = of_kind[0];
  }
  if (std::find(trained.begin(), trained.end(), id) == trained.end())
    throw Error("the run has no trained models of " + id + " (it has " + list() + ")", input);
  return id;
}

// --adapt: the run's ranker of MEASURED's collection, adapted to MEASURED, in place of the
// run's for that collection. Returns the collection.
std::string adapt_ranker(const Settings& s, const std::vector<std::string>& trained,
                         std::map<std::string, Ranker>& rankers) {
  const std::string collection = collection_of(*s.adapt, s, trained);
  rankers.emplace(collection, Ranker(s.run, collection, s.ranker).adapted_file(*s.adapt, s.adapt_options));
  return collection;
}

struct Ranked {
  std::string input, id;
  Ranking ranking;
  double ms = 0;
};

std::vector<int64_t> listed(const Ranked& r, const Settings& s) {
  int64_t n = static_cast<int64_t>(r.ranking.order.size());
  if (s.top > 0) n = std::min(n, s.top);
  // A submission lists a tile kernel's 5 best.
  else if (s.format == Settings::Format::Csv && Collection::parse(r.ranking.collection).kind == Kind::Tile)
    n = std::min<int64_t>(n, 5);
  return {r.ranking.order.begin(), r.ranking.order.begin() + n};
}

void print_text(const Ranked& r, const Settings& s) {
  std::printf("# %s: %s, %zu configs (%lld distinct), %d fold models, %.1f ms\n", r.input.c_str(), r.id.c_str(),
              r.ranking.order.size(), static_cast<long long>(r.ranking.unique_configs), r.ranking.folds, r.ms);
  std::printf("%6s %8s %10s\n", "rank", "config", "score");
  int64_t rank = 0;
  for (int64_t c : listed(r, s))
    std::printf("%6lld %8lld %10.4f\n", static_cast<long long>(++rank), static_cast<long long>(c), r.ranking.score[c]);
}

// The input's measured runtimes, when it holds any (a test file of the release holds
// zeros).
std::optional<TruthGraph> measured_runtimes(const Ranked& r) {
  const Collection c = Collection::parse(r.ranking.collection);
  TruthGraph t{c, std::filesystem::path(r.input).stem().string(), {}, {}};
  if (c.kind == Kind::Tile) {
    TileGraph g = load_tile_graph(r.input);
    t.runtimes = std::move(g.config_runtime);
    t.normalizers = std::move(g.config_runtime_normalizers);
  } else {
    t.runtimes = load_layout_graph(r.input).config_runtime;
  }
  if (std::all_of(t.runtimes.begin(), t.runtimes.end(), [](int64_t v) { return v == 0; })) return std::nullopt;
  return t;
}

// "score_vs_runtimes" and "slowdown" of the ranking against the input's runtimes: the row a
// submission would hold (tile: its 5 best) for the score, the whole order for the slowdowns.
void add_measured(JsonWriter& json, const Ranked& r, const TruthGraph& truth) {
  std::vector<int64_t> row = r.ranking.order;
  if (truth.collection.kind == Kind::Tile) row.resize(std::min<size_t>(row.size(), 5));
  const Slowdowns slow = row_slowdowns(r.ranking.order, truth);
  json.key("score_vs_runtimes").value(score_row(row, truth));
  json.key("slowdown").begin_object().key("top1").value(slow[0]).key("top5").value(slow[1]).key("top10").value(slow[2]).end_object();
}

void add_json(JsonWriter& json, const Ranked& r, const Settings& s) {
  const auto configs = listed(r, s);
  std::vector<double> scores;
  for (int64_t c : configs) scores.push_back(r.ranking.score[c]);
  const std::optional<TruthGraph> truth = measured_runtimes(r);
  json.begin_object()
      .key("input").value(r.input)
      .key("collection").value(r.ranking.collection)
      .key("id").value(r.id)
      .key("configs").value(r.ranking.order.size())
      .key("distinct_configs").value(r.ranking.unique_configs)
      .key("folds").value(r.ranking.folds)
      .key("ms").value(r.ms)
      .key("order").array(configs)
      .key("score").array(scores);
  if (truth) add_measured(json, r, *truth);
  json.end_object();
}

}  // namespace

static int rank_inputs(int argc, char** argv) {
  const Settings s = parse_settings(argc, argv);
  const std::vector<std::string> trained = trained_collections(s.run);
  const std::vector<std::string>& inputs = s.inputs;
  std::map<std::string, Ranker> rankers;  // loaded on first use
  const std::optional<std::string> adapted =
      s.adapt ? std::optional<std::string>(adapt_ranker(s, trained, rankers)) : std::nullopt;
  std::map<std::string, std::string> csv_rows;
  JsonWriter json;
  json.begin_object(JsonLayout::OnePerLine).key("run").value(s.run).key("results").begin_array(JsonLayout::OnePerLine);
  std::vector<std::pair<std::string, std::string>> rejected;
  Progress progress("ranked", static_cast<int64_t>(inputs.size()), 0, kProgressIntervalSeconds, "inputs");
  for (const std::string& input : inputs) {
    try {
      const std::string collection = collection_of(input, s, trained);
      if (adapted && collection != *adapted)
        throw Error("is a " + collection + " input, not the graph --adapt measured (" + *s.adapt + ", " + *adapted +
                        "): the adapted models rank that graph only",
                    input);
      auto it = rankers.find(collection);
      if (it == rankers.end()) {
        const auto t0 = std::chrono::steady_clock::now();
        it = rankers.emplace(collection, Ranker(s.run, collection, s.ranker)).first;
        spdlog::info("loaded {} fold models of {} in {}", it->second.folds(), collection,
                     format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2));
      }
      const auto t0 = std::chrono::steady_clock::now();
      Ranked r{input, "", it->second.rank_file(input), 0};
      r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.id = Collection::parse(collection).submission_id(std::filesystem::path(input).stem().string());
      if (s.format == Settings::Format::Text) print_text(r, s);
      if (s.format == Settings::Format::Json) add_json(json, r, s);
      if (s.format == Settings::Format::Csv) {
        std::string row = r.id + ",";
        for (int64_t c : listed(r, s)) row += std::to_string(c) + ";";
        row.pop_back();
        csv_rows[r.id] = row;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tpuperf-rank: error: %s\n", e.what());
      rejected.emplace_back(input, e.what());
    }
    progress.tick(0);
  }
  progress.finish();
  json.end_array().key("rejected").begin_array(JsonLayout::OnePerLine);
  for (const auto& [input, error] : rejected) json.begin_object().key("input").value(input).key("error").value(error).end_object();
  json.end_array().end_object();
  if (s.format == Settings::Format::Json) std::printf("%s\n", json.str().c_str());
  if (s.format == Settings::Format::Csv) {
    std::printf("ID,TopConfigs\n");
    for (const auto& [id, row] : csv_rows) std::printf("%s\n", row.c_str());
  }
  return rejected.empty() ? kExitOk : kExitRejected;
}

int main(int argc, char** argv) { return run_tool("tpuperf-rank", argc, argv, rank_inputs); }
