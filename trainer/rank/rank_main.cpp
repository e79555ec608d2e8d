// tpuperf-rank: rank the configs of graphs a run has never seen with its fold models, as
// an autotuner would. No MPI and no processed tree: the run directory and the inputs.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

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
    "for tile output.tile_keep_default and the run's first pick (first_pick.json: config 0,\n"
    "the compiler default, first where on the valid graphs the model's first pick was\n"
    "slower; output.tile_first_pick); identical configs share one score.\n\n"
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
    "measured; at least two). The adapted ranker ranks the INPUTs, which must be that graph\n"
    "(another is rejected); the run's files are not changed; the same --seed, the same ranking.\n"
    "  --adapt-method blend (default): the run's score blended with a ridge fit on the\n"
    "    measured configs' own values, the blend chosen by cross-validation over the\n"
    "    measurements (folds drawn with --seed); the run alone unless the held-out\n"
    "    measurements show the fit helps. Milliseconds to a second.\n"
    "  --adapt-method finetune: copies of the fold models fine-tuned with the run's loss,\n"
    "    --adapt-steps AdamW steps on slates of the run's train.tile_slate /\n"
    "    train.layout_slate measured configs drawn with --seed. Seconds.\n\n"
    "--suggest K: instead of ranking, print per INPUT the K configs to measure next, best\n"
    "first: the lowest predicted cost less --exploration x the fold models' disagreement\n"
    "(default 1), plus --diversity x the similarity to those picked before it (default 1), so\n"
    "that a batch is not K near-copies of one config. With --adapt MEASURED, MEASURED's\n"
    "measured configs (and INPUT configs identical to them) are never suggested. Text rows\n"
    "'rank config score uncertainty', or --json {\"results\": [{..., \"suggest\", \"score\",\n"
    "\"uncertainty\", \"excluded\"}]}.\n\n"
    "examples:\n"
    "  tpuperf-rank --run runs/demo data/npz_all/npz/tile/xla/test/*.npz --top 5\n"
    "  tpuperf-rank --run runs/demo --collection layout:xla:random --json my_graph.npz\n"
    "  tpuperf-rank --run runs/demo --adapt measured.npz --top 5 candidates.npz\n"
    "  tpuperf-rank --run runs/demo --adapt measured.npz --suggest 8 candidates.npz\n\n"
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
  std::optional<SuggestOptions> suggest;  // --suggest K
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
      .option("adapt-method", "M", "--adapt: blend (default) or finetune (below)")
      .option("seed", "S", "--adapt: seed of the cross-validation folds (blend) or the slates and dropout (finetune); default 0")
      .option("suggest", "K", "print the K configs to measure next instead of a ranking (below)")
      .option("exploration", "X", "--suggest: weight of the fold models' disagreement (default 1)")
      .option("diversity", "X", "--suggest: penalty per unit of similarity to configs already picked (default 1)")
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
  for (const char* option : {"adapt-steps", "adapt-lr", "seed", "adapt-method"})
    if (cli.has(option) && !cli.has("adapt")) throw UsageError(std::string("--") + option + " needs --adapt MEASURED.npz");
  for (const char* option : {"exploration", "diversity"})
    if (cli.has(option) && !cli.has("suggest")) throw UsageError(std::string("--") + option + " needs --suggest K");
  if (cli.has("adapt")) s.adapt = cli.get("adapt");
  const std::string method = cli.has("adapt-method") ? cli.get("adapt-method") : "blend";
  if (method != "blend" && method != "finetune")
    throw UsageError("--adapt-method is '" + method + "': blend or finetune");
  s.adapt_options.method = method == "finetune" ? AdaptMethod::FineTune : AdaptMethod::Blend;
  for (const char* option : {"adapt-steps", "adapt-lr"})
    if (cli.has(option) && s.adapt_options.method != AdaptMethod::FineTune)
      throw UsageError(std::string("--") + option + " needs --adapt-method finetune");
  if (cli.has("suggest")) {
    if (cli.has("csv") || cli.has("top")) throw UsageError("--suggest prints its own rows: not with --csv or --top");
    SuggestOptions o;
    o.count = cli.get_int<int64_t>("suggest", 8, 1);
    o.exploration = cli.get_double("exploration", o.exploration, 0, 1e6, Open::None);
    o.diversity = cli.get_double("diversity", o.diversity, 0, 1e6, Open::None);
    s.suggest = o;
  }
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

// The configs of `input` whose row equals a measured config's (runtime > 0) of `measured`:
// what --suggest must not suggest again.
std::vector<int64_t> measured_in(const std::string& measured, const std::string& input, Kind kind) {
  std::set<std::string> rows;
  std::vector<int64_t> out;
  const auto collect = [&](const auto& values, const std::vector<int64_t>& runtime, size_t width, bool add) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    for (size_t c = 0; c * width < values.size(); ++c) {
      std::string row(reinterpret_cast<const char*>(values.data() + c * width), width * sizeof(T));
      if (add && runtime[c] > 0) rows.insert(std::move(row));
      if (!add && rows.count(row)) out.push_back(static_cast<int64_t>(c));
    }
  };
  if (kind == Kind::Tile) {
    const TileGraph m = load_tile_graph(measured), g = load_tile_graph(input);
    collect(m.config_feat, m.config_runtime, kTileConfigDim, true);
    collect(g.config_feat, g.config_runtime, kTileConfigDim, false);
  } else {
    const LayoutGraph m = load_layout_graph(measured), g = load_layout_graph(input);
    collect(m.node_config_feat, m.config_runtime, m.node_config_ids.size() * kLayoutConfigDim, true);
    collect(g.node_config_feat, g.config_runtime, g.node_config_ids.size() * kLayoutConfigDim, false);
  }
  return out;
}

struct Suggested {
  std::string input, id;
  Suggestion suggestion;
  int64_t excluded = 0;
  double ms = 0;
};

void print_suggestion(const Suggested& r) {
  const Suggestion& s = r.suggestion;
  std::printf("# %s: %s, suggest %zu of %lld configs (%lld measured excluded), %.1f ms\n", r.input.c_str(),
              r.id.c_str(), s.configs.size(), static_cast<long long>(s.candidates), static_cast<long long>(r.excluded),
              r.ms);
  std::printf("%6s %8s %10s %12s\n", "rank", "config", "score", "uncertainty");
  for (size_t i = 0; i < s.configs.size(); ++i)
    std::printf("%6zu %8lld %10.4f %12.4f\n", i + 1, static_cast<long long>(s.configs[i]), s.score[i], s.uncertainty[i]);
}

void add_suggestion_json(JsonWriter& json, const Suggested& r) {
  const Suggestion& s = r.suggestion;
  json.begin_object()
      .key("input").value(r.input)
      .key("collection").value(s.collection)
      .key("id").value(r.id)
      .key("configs").value(s.candidates)
      .key("excluded").value(r.excluded)
      .key("ms").value(r.ms)
      .key("suggest").array(s.configs)
      .key("score").array(s.score)
      .key("uncertainty").array(s.uncertainty)
      .end_object();
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
      const std::string id = Collection::parse(collection).submission_id(std::filesystem::path(input).stem().string());
      if (s.suggest) {
        SuggestOptions o = *s.suggest;
        if (s.adapt) o.exclude = measured_in(*s.adapt, input, Collection::parse(collection).kind);
        Suggested r{input, id, it->second.suggest_file(input, o), static_cast<int64_t>(o.exclude.size()), 0};
        r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (s.format == Settings::Format::Json) add_suggestion_json(json, r);
        else print_suggestion(r);
        progress.tick(0);
        continue;
      }
      Ranked r{input, "", it->second.rank_file(input), 0};
      r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.id = id;
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
