#include "trainer/models/registry.h"

#include "common/config/config.h"
#include "common/base/error.h"

namespace tpuperf {

// Each model's factory, defined in its own file.
ModelPtr make_tile_early_join(const ModelSpec& spec);
ModelPtr make_tile_early_join_shape(const ModelSpec& spec);
ModelPtr make_tile_late_join(const ModelSpec& spec);
ModelPtr make_layout_sage(const ModelSpec& spec);
ModelPtr make_layout_shape_context(const ModelSpec& spec);

const std::vector<ModelArch>& model_archs() {
  static const std::vector<ModelArch> archs = {
      {"early_join", Kind::Tile, "GraphSAGE, config features joined to every node before message passing",
       make_tile_early_join},
      {"late_join", Kind::Tile, "GraphSAGE over the graph alone, config features joined after pooling",
       make_tile_late_join},
      {"early_join_shape", Kind::Tile,
       "early_join whose config input also holds the tiling's grid steps and padded tile over the kernel's output",
       make_tile_early_join_shape},
      {"sage", Kind::Layout,
       "the small layout model: GraphSAGE with each configurable node's layout values embedded per config",
       make_layout_sage},
      {"sage_shape_context", Kind::Layout,
       "sage plus the layouts' shape features, the configurable nodes pooled apart and a wide per-node cost "
       "whose weights read the node's neighbourhood",
       make_layout_shape_context},
  };
  return archs;
}

const std::vector<RetiredArch>& retired_model_archs() {
  static const std::vector<RetiredArch> retired = {
      {"sage_config_pool", Kind::Layout,
       "an experiment, never the default: sage_shape_context pools the configurable nodes apart as it did"},
      {"sage_shape", Kind::Layout,
       "superseded by sage_shape_context, whose wide weights read the node's neighbourhood (docs/experiments E4)"},
      {"sage_node_cost", Kind::Layout,
       "an experiment that did not beat sage_shape_context (docs/experiments E7, E21); use that"},
  };
  return retired;
}

std::vector<std::string> model_arch_names(Kind kind) {
  std::vector<std::string> names;
  for (const auto& a : model_archs())
    if (a.kind == kind) names.push_back(a.name);
  return names;
}

namespace {

std::string kind_name(Kind kind) { return kind == Kind::Tile ? "tile" : "layout"; }

void check_options(const ModelSpec& spec) {
  const ModelOptions& o = spec.options;
  const std::string key = "model." + kind_name(spec.kind) + ".";
  if (o.hidden < 1) throw Error("must be at least 1", "", key + "hidden");
  if (o.layers < 0) throw Error("must not be negative", "", key + "layers");
  if (o.opcode_dim < 1) throw Error("must be at least 1", "", key + "opcode_dim");
  if (o.dropout < 0 || o.dropout >= 1) throw Error("must be in [0, 1)", "", key + "dropout");
  if (o.attention_heads > 0 && o.hidden % o.attention_heads != 0)
    throw Error("must divide " + key + "hidden (" + std::to_string(o.hidden) + ")", "", key + "attention_heads");
  if (spec.num_node_feat < 0) throw Error("negative node feature count " + std::to_string(spec.num_node_feat));
}

}  // namespace

ModelPtr make_model(const ModelSpec& spec) {
  for (const auto& a : model_archs())
    if (a.kind == spec.kind && a.name == spec.arch) {
      check_options(spec);
      return a.make(spec);
    }
  const std::string key = "model." + kind_name(spec.kind) + ".arch";
  for (const auto& r : retired_model_archs())
    if (r.kind == spec.kind && r.name == spec.arch)
      throw Error(kind_name(spec.kind) + " model '" + spec.arch + "' was retired: " + r.reason, "", key);
  std::string known;
  for (const auto& n : model_arch_names(spec.kind)) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown " + kind_name(spec.kind) + " model '" + spec.arch + "' (known: " + known + ")", "", key);
}

void register_model_choices() {
  for (Kind kind : {Kind::Tile, Kind::Layout}) {
    std::map<std::string, std::string> retired;
    for (const auto& r : retired_model_archs())
      if (r.kind == kind) retired[r.name] = r.reason;
    set_schema_choices("model." + kind_name(kind) + ".arch", model_arch_names(kind), std::move(retired));
  }
}

}  // namespace tpuperf
