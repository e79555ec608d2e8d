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
    "compiler default (config 0) first; n/a for layout.\n\n"
    "--json prints {\"submission\": F, \"truth\": DIR, \"split\": S, \"collections\": [{\"collection\",\n"
    "  \"graphs\", \"skipped\", \"score\", \"random_baseline\", \"default_first_baseline\"}, ...],\n"
    "  \"overall\": {\"score\", \"random_baseline\", \"default_first_baseline\"}, \"extra_ids\": N}\n"
    "(null for n/a).\n\n"
    "example:\n  tpuperf-score --submission out/submission.csv --truth /tmp/tpugraphs\n\n"
    "exit codes: 0 scored, 2 bad usage, unreadable input or a submission lacking test graphs.";

static std::string fmt(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

static void print_table(const SubmissionScore& s) {
  std::printf("%-20s %7s %8s %8s %8s %14s\n", "collection", "graphs", "skipped", "score", "random",
              "default-first");
  for (const auto& c : s.collections)
    std::printf("%-20s %7lld %8lld %8s %8s %14s\n", c.collection.c_str(),
                static_cast<long long>(c.graphs), static_cast<long long>(c.skipped),
                fmt(c.score).c_str(), fmt(c.random).c_str(), fmt(c.default_first).c_str());
  std::printf("%-20s %7s %8s %8s %8s %14s\n", "overall", "", "", fmt(s.overall).c_str(),
              fmt(s.overall_random).c_str(), fmt(s.overall_default_first).c_str());
}

static void print_json(const SubmissionScore& s, const Cli& cli, const std::string& split) {
  JsonWriter j;
  j.begin_object()
      .key("submission").value(cli.get("submission"))
      .key("truth").value(cli.get("truth"))
      .key("split").value(split)
      .key("collections").begin_array();
  for (const auto& c : s.collections)
    j.begin_object()
        .key("collection").value(c.collection)
        .key("graphs").value(c.graphs)
        .key("skipped").value(c.skipped)
        .key("score").value(c.score)
        .key("random_baseline").value(c.random)
        .key("default_first_baseline").value(c.default_first)
        .end_object();
  j.end_array()
      .key("overall").begin_object()
      .key("score").value(s.overall)
      .key("random_baseline").value(s.overall_random)
      .key("default_first_baseline").value(s.overall_default_first)
      .end_object()
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
