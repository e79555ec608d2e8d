#include "trainer/eval/submission.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/metrics/metrics.h"

namespace tpuperf {

namespace {

const char* const kHeader = "ID,TopConfigs";

std::string label(const GraphScores& g) { return g.collection + ":" + g.name; }

// Layout rows must be full permutations: every config 0..c-1 scored exactly once.
void check_covers_all(const GraphScores& g, const std::vector<size_t>& by_index) {
  for (size_t i = 0; i < by_index.size(); ++i) {
    const int64_t c = g.config_index[by_index[i]];
    if (c != static_cast<int64_t>(i))
      throw Error("a layout submission row needs a score for every config 0.." +
                      std::to_string(by_index.size() - 1) + ", but config " + std::to_string(i) +
                      (c < static_cast<int64_t>(i) ? " is scored twice"
                                                   : " has none (were its configs sampled?)"),
                  "", label(g));
  }
}

std::vector<int64_t> parse_configs(const std::string& field, const std::string& where) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(field.find(';', start), field.size());
    const std::string item = field.substr(start, end - start);
    int64_t v = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 0)
      throw Error(where + ": '" + item + "' is not a config index (a non-negative integer)");
    if (!seen.insert(v).second)
      throw Error(where + ": config " + std::to_string(v) + " appears twice");
    out.push_back(v);
    if (end == field.size()) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<int64_t> ranked_configs(const GraphScores& g, TileDefault rule) {
  if (g.config_index.size() != g.score.size())
    throw Error(std::to_string(g.config_index.size()) + " config indices but " +
                    std::to_string(g.score.size()) + " scores",
                "", label(g));
  if (g.score.empty()) throw Error("no scored configs", "", label(g));
  const Collection coll = Collection::parse(g.collection);
  // Sorting by config index first makes ranking_from_scores break ties by config index.
  std::vector<size_t> by_index(g.config_index.size());
  for (size_t i = 0; i < by_index.size(); ++i) by_index[i] = i;
  std::sort(by_index.begin(), by_index.end(),
            [&](size_t a, size_t b) { return g.config_index[a] < g.config_index[b]; });
  if (coll.kind == Kind::Layout) check_covers_all(g, by_index);
  std::vector<double> sorted_scores(by_index.size());
  for (size_t i = 0; i < by_index.size(); ++i) sorted_scores[i] = g.score[by_index[i]];
  std::vector<int64_t> order = ranking_from_scores(sorted_scores);
  const bool has_default = g.config_index[by_index[0]] == 0;
  if (coll.kind == Kind::Tile && has_default && rule.first) {
    // Config 0 (position 0 of sorted_scores) first, the rest in score order.
    order.erase(std::find(order.begin(), order.end(), int64_t{0}));
    order.insert(order.begin(), int64_t{0});
  } else if (coll.kind == Kind::Tile && rule.keep && has_default) {
    // The top kTileTopConfigs as tile_top_k keeps them (config 0 among them), then the rest
    // in score order.
    std::vector<int64_t> head = tile_top_k(sorted_scores, kTileTopConfigs, 0);
    std::vector<char> taken(order.size(), 0);
    for (int64_t i : head) taken[static_cast<size_t>(i)] = 1;
    for (int64_t i : order)
      if (!taken[static_cast<size_t>(i)]) head.push_back(i);
    order = std::move(head);
  }
  std::vector<int64_t> ranked(order.size());
  for (size_t i = 0; i < ranked.size(); ++i)
    ranked[i] = g.config_index[by_index[static_cast<size_t>(order[i])]];
  return ranked;
}

std::vector<int64_t> top_configs(const GraphScores& g, TileDefault rule) {
  std::vector<int64_t> ranked = ranked_configs(g, rule);
  if (Collection::parse(g.collection).kind == Kind::Tile && ranked.size() > static_cast<size_t>(kTileTopConfigs))
    ranked.resize(kTileTopConfigs);
  return ranked;
}

Submission make_submission(const std::vector<GraphScores>& scores, TileDefault rule) {
  Submission sub;
  for (const auto& g : scores) {
    if (g.split != "test") continue;
    const std::string id = Collection::parse(g.collection).submission_id(g.name);
    if (!sub.emplace(id, top_configs(g, rule)).second)
      throw Error("test graph given twice (ensemble the fold models first)", "", id);
  }
  return sub;
}

std::string format_submission(const Submission& submission) {
  std::string out = std::string(kHeader) + "\n";
  for (const auto& [id, configs] : submission) {
    out += id;
    out += ',';
    for (size_t i = 0; i < configs.size(); ++i) {
      if (i > 0) out += ';';
      out += std::to_string(configs[i]);
    }
    out += '\n';
  }
  return out;
}

void write_submission(const std::string& path, const std::vector<GraphScores>& scores, TileDefault rule) {
  const Submission sub = make_submission(scores, rule);
  if (sub.empty()) spdlog::warn("{}: no test graphs to write, only the header", path);
  write_file_atomic(path, format_submission(sub));
  spdlog::info("wrote {} rows to {}", sub.size(), path);
}

Submission parse_submission(const std::string& text, const std::string& path) {
  Submission sub;
  size_t pos = 0, line_no = 0;
  bool header_seen = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = "line " + std::to_string(line_no);
    if (!header_seen) {
      if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // spreadsheet BOM
      if (line != kHeader)
        throw Error(where + ": header is '" + line + "', expected '" + kHeader + "'", path);
      header_seen = true;
      continue;
    }
    if (line.empty()) continue;
    const size_t comma = line.find(',');
    if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos)
      throw Error(where + ": expected 2 comma-separated fields ID,TopConfigs", path);
    const std::string id = line.substr(0, comma);
    if (id.empty()) throw Error(where + ": empty ID", path);
    std::vector<int64_t> configs;
    try {
      configs = parse_configs(line.substr(comma + 1), where);
    } catch (Error& e) {
      throw e.with_file(path).with_key(id);
    }
    if (!sub.emplace(id, std::move(configs)).second)
      throw Error(where + ": ID repeated", path, id);
  }
  if (!header_seen)
    throw Error("empty file, expected the header '" + std::string(kHeader) + "'", path);
  return sub;
}

Submission read_submission(const std::string& path) {
  return parse_submission(read_text_file(path), path);
}

}  // namespace tpuperf
