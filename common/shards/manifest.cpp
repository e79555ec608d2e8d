#include "common/shards/manifest.h"

#include <cmath>
#include <ctime>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/formats/json.h"

namespace tpuperf {

namespace {

// ------------------------------------------------------------------ writing

// JSON has no NaN: the reader would refuse the null the writer puts there, so refuse it here.
void require_finite(const FeatureTransform& t, const std::string& collection) {
  for (const auto* v : {&t.mean, &t.stddev})
    for (double x : *v)
      if (!std::isfinite(x))
        throw Error("a non-finite number cannot be stored in the manifest", "",
                    "feature_transforms." + collection);
}

void write(JsonWriter& j, const FeatureTransform& t) {
  j.begin_object();
  j.key("kept_columns").array(t.kept_columns).key("log1p").array(t.log1p);
  j.key("mean").array(t.mean).key("stddev").array(t.stddev);
  j.end_object();
}

void write(JsonWriter& j, const ManifestShard& s) {
  j.begin_object();
  j.key("file").value(s.file).key("collection").value(s.collection).key("split").value(s.split);
  j.key("rank").value(s.rank).key("index").value(s.index).key("size").value(s.size_bytes);
  j.key("hash").value(s.hash).key("num_graphs").value(s.num_graphs);
  j.end_object();
}

void write(JsonWriter& j, const ManifestGraph& g) {
  j.begin_object();
  j.key("collection").value(g.collection).key("split").value(g.split).key("name").value(g.name);
  j.key("shard").value(g.shard).key("index").value(g.index).key("fold").value(g.fold);
  j.key("num_nodes").value(g.num_nodes).key("num_edges").value(g.num_edges);
  j.key("num_configs").value(g.num_configs).key("configs_before").value(g.configs_before);
  j.key("nodes_before").value(g.nodes_before).key("edges_before").value(g.edges_before);
  j.end_object();
}

void write(JsonWriter& j, const ManifestSource& s) {
  j.begin_object();
  j.key("file").value(s.file).key("collection").value(s.collection).key("split").value(s.split);
  j.key("size").value(s.size_bytes).key("mtime_ns").value(s.mtime_ns).key("hash").value(s.hash);
  j.key("status").value(s.status).key("reason").value(s.reason);
  j.end_object();
}

void write(JsonWriter& j, const ManifestRejected& r) {
  j.begin_object().key("file").value(r.file).key("key").value(r.key).key("reason").value(r.reason);
  j.end_object();
}

// One record per line.
template <class T>
void write_records(JsonWriter& j, const char* key, const std::vector<T>& records) {
  j.key(key).begin_array(JsonLayout::OnePerLine);
  for (const T& r : records) write(j, r);
  j.end_array();
}

// ------------------------------------------------------------------ reading

FeatureTransform parse_transform(const JsonObject& f) {
  FeatureTransform t;
  t.kept_columns = f.seq<int32_t>("kept_columns");
  t.log1p = f.seq<uint8_t>("log1p");
  t.mean = f.seq<double>("mean");
  t.stddev = f.seq<double>("stddev");
  return t;
}

ManifestShard parse_shard(const JsonObject& f) {
  ManifestShard s;
  s.file = f.str("file");
  s.collection = f.str("collection");
  s.split = f.str("split");
  s.rank = f.num<int>("rank");
  s.index = f.num<int>("index");
  s.size_bytes = f.num<int64_t>("size");
  s.hash = f.str("hash");
  s.num_graphs = f.num<int64_t>("num_graphs");
  return s;
}

ManifestGraph parse_graph(const JsonObject& f) {
  ManifestGraph g;
  g.collection = f.str("collection");
  g.split = f.str("split");
  g.name = f.str("name");
  g.shard = f.str("shard");
  g.index = f.num<int64_t>("index");
  g.fold = f.num<int>("fold");
  g.num_nodes = f.num<int64_t>("num_nodes");
  g.num_edges = f.num<int64_t>("num_edges");
  g.num_configs = f.num<int64_t>("num_configs");
  g.configs_before = f.num<int64_t>("configs_before");
  g.nodes_before = f.num<int64_t>("nodes_before");
  g.edges_before = f.num<int64_t>("edges_before");
  return g;
}

ManifestSource parse_source(const JsonObject& f) {
  ManifestSource s;
  s.file = f.str("file");
  s.collection = f.str("collection");
  s.split = f.str("split");
  s.size_bytes = f.num<int64_t>("size");
  s.mtime_ns = f.num<int64_t>("mtime_ns");
  s.hash = f.str("hash");
  s.status = f.str("status");
  s.reason = f.str("reason");
  if (s.status != kSourceOk && s.status != kSourceRejected)
    throw Error("status '" + s.status + "' is neither ok nor rejected", f.source(), f.name("status"));
  return s;
}

ManifestRejected parse_rejected(const JsonObject& f) {
  return {f.str("file"), f.str("key"), f.str("reason")};
}

template <class T, class Parse>
std::vector<T> parse_records(const JsonObject& top, const char* key, Parse parse) {
  std::vector<T> out;
  for (const JsonObject& record : top.objects(key)) out.push_back(parse(record));
  return out;
}

}  // namespace

std::string manifest_to_yaml(const Manifest& m) {
  JsonWriter j;
  j.begin_object(JsonLayout::OnePerLine);
  j.key("schema_version").value(m.schema_version);
  j.key("created").value(m.created);
  j.key("settings_digest").value(m.settings_digest);
  j.key("settings").value(m.settings);
  j.key("collections").array(m.collections);
  j.key("feature_transforms").begin_object(JsonLayout::OnePerLine);
  for (const auto& [id, t] : m.feature_transforms) {
    require_finite(t, id);
    write(j.key(id), t);
  }
  j.end_object();
  j.key("feature_files").begin_object();
  for (const auto& [id, file] : m.feature_files) j.key(id).value(file);
  j.end_object();
  write_records(j, "shards", m.shards);
  write_records(j, "graphs", m.graphs);
  write_records(j, "sources", m.sources);
  write_records(j, "rejected", m.rejected);
  j.end_object();
  return j.str() + "\n";
}

Manifest manifest_from_yaml(const std::string& text, const std::string& path) {
  const JsonValue root = parse_json(text, path);
  if (root.type != JsonValue::Type::Object) throw Error("not a tpuperf manifest (not a JSON object)", path);
  const JsonObject top(root, "", path);
  Manifest m;
  m.schema_version = top.num<int>("schema_version");
  if (m.schema_version != kManifestSchemaVersion)
    throw Error("manifest schema_version " + std::to_string(m.schema_version) + " is not the " +
                    std::to_string(kManifestSchemaVersion) +
                    " this build reads: rerun tpuperf-preprocess with this build",
                path, "schema_version");
  m.created = top.str("created");
  m.settings_digest = top.str("settings_digest");
  m.settings = top.str("settings");
  m.collections = top.seq<std::string>("collections");
  const JsonObject transforms = top.object("feature_transforms");
  for (const auto& [id, t] : transforms.value().members)
    m.feature_transforms[id] = parse_transform(transforms.object(id));
  const JsonObject files = top.object("feature_files");
  for (const auto& [id, file] : files.value().members) m.feature_files[id] = files.str(id);
  m.shards = parse_records<ManifestShard>(top, "shards", parse_shard);
  m.graphs = parse_records<ManifestGraph>(top, "graphs", parse_graph);
  m.sources = parse_records<ManifestSource>(top, "sources", parse_source);
  m.rejected = parse_records<ManifestRejected>(top, "rejected", parse_rejected);
  return m;
}

void write_manifest(const std::string& path, const Manifest& m) {
  std::string text;
  try {
    text = manifest_to_yaml(m);
  } catch (Error& e) {
    throw e.with_file(path);
  }
  write_file_atomic(path, text);
}

Manifest read_manifest(const std::string& path) {
  return manifest_from_yaml(read_text_file(path), path);
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const ManifestGraph* Manifest::find_graph(const std::string& collection,
                                          const std::string& name) const {
  for (const auto& g : graphs)
    if (g.name == name && g.collection == collection) return &g;
  return nullptr;
}

const ManifestShard* Manifest::find_shard(const std::string& file) const {
  for (const auto& s : shards)
    if (s.file == file) return &s;
  return nullptr;
}

const ManifestSource* Manifest::find_source(const std::string& file) const {
  for (const auto& s : sources)
    if (s.file == file) return &s;
  return nullptr;
}

const FeatureTransform* Manifest::find_transform(const std::string& collection) const {
  auto it = feature_transforms.find(collection);
  return it == feature_transforms.end() ? nullptr : &it->second;
}

std::vector<const ManifestGraph*> Manifest::graphs_of(const std::string& collection,
                                                      const std::string& split) const {
  std::vector<const ManifestGraph*> out;
  for (const auto& g : graphs)
    if (g.collection == collection && (split.empty() || g.split == split)) out.push_back(&g);
  return out;
}

}  // namespace tpuperf
