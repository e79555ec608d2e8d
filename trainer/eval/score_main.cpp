// tpuperf-score --submission FILE --truth DIR [--json]: the competition score of a
// submission.csv against the true runtimes, per collection and overall, beside a random
// and a default-first baseline on the same graphs.
#include <cmath>
#include <cstdio>
#include <string>

#include "common/cli/cli.h"
#include "common/base/error.h"
#include "common/formats/json.h"
#include "common/cli/tool_main.h"
#include "trainer/eval/scoring.h"
#include "trainer/eval/submission.h"

using namespace tpuperf;

static const char* kEpilog =
    "Scores: tile = mean over graphs of 2 - min(y[top5]) / min(y) (1 is best); layout = mean\n"
    "Kendall tau between the submitted order and the runtimes (1 is best); overall = mean of\n"
    "the collection scores. Graphs whose score is undefined (constant runtimes) are skipped\n"
    "and counted. Baselines: a random order (mean of 5 seeded draws) and, for tile, the\n"
    "compiler default (config 0) first; n/a for layout. top-1: the submission's top-1 slowdown\n"
    "(below) beside its score: a row's first config, the one config an autotuner that\n"
    "measures one config per kernel runs (tpuperf's is the model's own pick, or config 0\n"
    "where the run's valid graphs showed config 0 faster: output.tile_first_pick).\n\n"
    "Top-k slowdown, what an autotuner that measures the k best predicted configs gets: per\n"
    "graph the best runtime among them over the best runtime (tile: runtime / normalizer), 1\n"
    "when the best config is among them; the table gives its mean per collection for k = 1, 5\n"
    "and 10, of the submission and of the baselines. A tile row holds 5 configs, so its top-10\n"
    "is n/a.\n\n"
    "--json prints {\"submission\": F, \"truth\": DIR, \"split\": S, \"collections\": [{\"collection\",\n"
    "  \"graphs\", \"skipped\", \"score\", \"random_baseline\", \"default_first_baseline\", \"top1_slowdown\",\n"
    "  \"slowdown\", \"random_slowdown\", \"default_first_slowdown\"}, ...], \"overall\": {\"score\",\n"
    "  \"random_baseline\", \"default_first_baseline\"}, \"graphs\": [{\"id\", \"collection\", \"score\",\n"
    "  \"slowdown\"}, ...], \"extra_ids\": N}; each slowdown is {\"top1\", \"top5\", \"top10\"}\n"
    "(null for n/a).\n\n"
    "example:\n  tpuperf-score --submission out/submission.csv --truth /tmp/tpugraphs\n\n"
    "exit codes: 0 scored, 2 bad usage, unreadable input or a submission lacking test graphs.";

static std::string fmt(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// "1.234 1.050 n/a" for the three k of kSlowdownKs.
static std::string fmt3(const Slowdowns& v) {
  return fmt(v[0]) + " " + fmt(v[1]) + " " + fmt(v[2]);
}

static void print_slowdowns(const SubmissionScore& s) {
  std::printf("\ntop-1 / top-5 / top-10 slowdown (1 is best)\n");
  std::printf("%-20s %-22s %-22s %s\n", "collection", "submission", "random", "default-first");
  for (const auto& c : s.collections)
    std::printf("%-20s %-22s %-22s %s\n", c.collection.c_str(), fmt3(c.slowdown).c_str(),
                fmt3(c.random_slowdown).c_str(), fmt3(c.default_first_slowdown).c_str());
}

static void write_slowdown(JsonWriter& j, const char* key, const Slowdowns& v) {
  j.key(key).begin_object().key("top1").value(v[0]).key("top5").value(v[1]).key("top10").value(v[2]);
  j.end_object();
}

static void print_table(const SubmissionScore& s) {
  std::printf("%-20s %7s %8s %8s %8s %8s %14s\n", "collection", "graphs", "skipped", "score", "top-1", "random",
              "default-first");
  for (const auto& c : s.collections)
    std::printf("%-20s %7lld %8lld %8s %8s %8s %14s\n", c.collection.c_str(),
                static_cast<long long>(c.graphs), static_cast<long long>(c.skipped),
                fmt(c.score).c_str(), fmt(c.slowdown[0]).c_str(), fmt(c.random).c_str(),
                fmt(c.default_first).c_str());
  std::printf("%-20s %7s %8s %8s %8s %8s %14s\n", "overall", "", "", fmt(s.overall).c_str(), "",
              fmt(s.overall_random).c_str(), fmt(s.overall_default_first).c_str());
  print_slowdowns(s);
}

static void print_json(const SubmissionScore& s, const Cli& cli, const std::string& split) {
  JsonWriter j;
  j.begin_object()
      .key("submission").value(cli.get("submission"))
      .key("truth").value(cli.get("truth"))
      .key("split").value(split)
      .key("collections").begin_array();
  for (const auto& c : s.collections) {
    j.begin_object()
        .key("collection").value(c.collection)
        .key("graphs").value(c.graphs)
        .key("skipped").value(c.skipped)
        .key("score").value(c.score)
        .key("random_baseline").value(c.random)
        .key("default_first_baseline").value(c.default_first)
        .key("top1_slowdown").value(c.slowdown[0]);
    write_slowdown(j, "slowdown", c.slowdown);
    write_slowdown(j, "random_slowdown", c.random_slowdown);
    write_slowdown(j, "default_first_slowdown", c.default_first_slowdown);
    j.end_object();
  }
  j.end_array()
      .key("overall").begin_object()
      .key("score").value(s.overall)
      .key("random_baseline").value(s.overall_random)
      .key("default_first_baseline").value(s.overall_default_first)
      .end_object()
      .key("graphs").begin_array();
  for (const auto& g : s.graphs) {
    j.begin_object().key("id").value(g.id).key("collection").value(g.collection).key("score").value(g.score);
    write_slowdown(j, "slowdown", g.slowdown);
    j.end_object();
  }
  j.end_array()
      .key("extra_ids").value(static_cast<int64_t>(s.extra_ids.size()))
      .end_object();
  std::printf("%s\n", j.str().c_str());
}

static int score(int argc, char** argv) {
  Cli cli("tpuperf-score",
          "Score a submission.csv against the true runtimes: per collection and overall, with "
          "random and default-first baselines.");
  cli.option("submission", "FILE", "the submission.csv to score (header ID,TopConfigs)")
      .option("truth", "DIR",
              "the true runtimes: a tpuperf-synth output dir (its truth/ is used), a truth tree "
              "(tile/xla/test/*.npz ...), or a raw npz root with --split valid")
      .option("split", "SPLIT", "which split's graphs to score (default test)")
      .option("seed", "N", "seed of the random baseline (default 0)")
      .flag("json", "machine-readable output on stdout (format below)")
      .epilog(kEpilog);
  cli.parse(argc, argv);
  if (!cli.has("submission")) throw UsageError("missing --submission FILE (see tpuperf-score --help)");
  if (!cli.has("truth")) throw UsageError("missing --truth DIR (see tpuperf-score --help)");
  const std::string split = cli.get("split", "test");
  ScoreOptions options;
  options.seed = cli.get_int<uint64_t>("seed", 0);

  const Submission sub = read_submission(cli.get("submission"));
  const std::vector<TruthGraph> truth = load_truth(cli.get("truth"), split);
  SubmissionScore result;
  try {
    result = score_submission(sub, truth, options);
  } catch (Error& e) {
    throw e.with_file(cli.get("submission"));
  }
  if (cli.has("json"))
    print_json(result, cli, split);
  else
    print_table(result);
  return kExitOk;
}

int main(int argc, char** argv) { return run_tool("tpuperf-score", argc, argv, score); }
