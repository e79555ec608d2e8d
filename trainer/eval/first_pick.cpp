#include "trainer/eval/first_pick.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/formats/json.h"

namespace tpuperf {

bool FirstPick::measured() const {
  return valid_graphs > 0 && std::isfinite(valid_top1_model) && std::isfinite(valid_top1_default);
}

FirstPick choose_first_pick(const std::string& setting, bool keep_default, int64_t valid_graphs,
                            double valid_top1_model, double valid_top1_default) {
  if (setting != "auto" && setting != "model" && setting != "default")
    throw Error("'" + setting + "' is not one of auto, model, default", "", "output.tile_first_pick");
  FirstPick p;
  p.setting = setting;
  p.keep_default = keep_default;
  p.valid_graphs = valid_graphs;
  p.valid_top1_model = valid_top1_model;
  p.valid_top1_default = valid_top1_default;
  // Ties keep the model: config 0 goes first only when it is faster on these graphs.
  p.default_first = setting == "default" ||
                    (setting == "auto" && keep_default && p.measured() && valid_top1_default < valid_top1_model);
  return p;
}

TileDefault tile_default_of(const std::map<std::string, FirstPick>& picks, const std::string& collection, bool keep,
                            bool fallback_first) {
  const auto it = picks.find(collection);
  return {keep, it != picks.end() ? it->second.default_first : fallback_first};
}

std::string describe_first_pick(const std::string& collection, const FirstPick& p) {
  char evidence[160] = "";
  if (p.measured())
    std::snprintf(evidence, sizeof evidence, "top-1 slowdown on the %lld valid graphs: the model's first pick %.3f, config 0 %.3f",
                  static_cast<long long>(p.valid_graphs), p.valid_top1_model, p.valid_top1_default);
  const std::string why = p.setting != "auto" ? "set by output.tile_first_pick: " + p.setting
                          : !p.keep_default ? "output.tile_first_pick: auto, and output.tile_keep_default is off: "
                                              "config 0 is not taken as the compiler default"
                          : *evidence       ? std::string("output.tile_first_pick: auto")
                                            : "output.tile_first_pick: auto, no valid graphs to compare on";
  return collection + ": first pick " +
         (p.default_first ? "config 0 (the compiler default), then the model's order"
                          : "the model's best-scored config") +
         " (" + why + (*evidence ? "; " + std::string(evidence) : "") + ")";
}

void write_first_picks(const std::string& out_dir, const std::map<std::string, FirstPick>& picks) {
  JsonWriter w;
  w.begin_object(JsonLayout::OnePerLine);
  for (const auto& [collection, p] : picks) {
    w.key(collection).begin_object();
    w.key("setting").value(p.setting);
    w.key("default_first").value(p.default_first);
    w.key("valid_graphs").value(p.valid_graphs);
    w.key("valid_top1_model").value(p.valid_top1_model);
    w.key("valid_top1_default").value(p.valid_top1_default);
    w.key("keep_default").value(p.keep_default);
    w.end_object();
  }
  w.end_object();
  write_file_atomic(out_dir + "/" + kFirstPickFile, w.str() + "\n");
}

namespace {

// A slowdown field: null (written for NaN) reads back as NaN.
double slowdown_field(const JsonObject& o, std::string_view key) {
  return o.node(key).type == JsonValue::Type::Null ? FirstPick::kNone : o.num<double>(key);
}

bool bool_field(const JsonObject& o, std::string_view key, const std::string& path) {
  const JsonValue& v = o.node(key);
  if (v.type != JsonValue::Type::Bool) throw Error("expected true or false", path, o.name(key));
  return v.text == "true";
}

}  // namespace

std::map<std::string, FirstPick> read_first_picks(const std::string& out_dir) {
  const std::string path = out_dir + "/" + kFirstPickFile;
  std::map<std::string, FirstPick> out;
  if (!std::filesystem::exists(path)) return out;
  const JsonValue doc = parse_json(read_text_file(path), path);
  const JsonObject top(doc, "", path);
  for (const auto& [collection, value] : doc.members) {
    const JsonObject o = top.object(collection);
    FirstPick p;
    p.setting = o.str("setting");
    p.default_first = bool_field(o, "default_first", path);
    p.valid_graphs = o.num<int64_t>("valid_graphs");
    p.valid_top1_model = slowdown_field(o, "valid_top1_model");
    p.valid_top1_default = slowdown_field(o, "valid_top1_default");
    p.keep_default = bool_field(o, "keep_default", path);
    out[collection] = p;
  }
  return out;
}

}  // namespace tpuperf
