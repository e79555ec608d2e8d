#include "trainer/models/registry.h"

#include "common/config/config.h"
#include "common/base/error.h"

namespace tpuperf {

// Each model's factory, defined in its own file.
ModelPtr make_tile_early_join(const ModelSpec& spec);
ModelPtr make_tile_early_join_shape(const ModelSpec& spec);
ModelPtr make_tile_late_join(const ModelSpec& spec);
ModelPtr make_layout_sage(const ModelSpec& spec);
ModelPtr make_layout_sage_config_pool(const ModelSpec& spec);
ModelPtr make_layout_sage_shape(const ModelSpec& spec);
ModelPtr make_layout_sage_shape_context(const ModelSpec& spec);
ModelPtr make_layout_sage_node_cost(const ModelSpec& spec);

const std::vector<ModelArch>& model_archs() {
  static const std::vector<ModelArch> archs = {
      {"early_join", Kind::Tile, "GraphSAGE, config features joined to every node before message passing",
       make_tile_early_join},
      {"late_join", Kind::Tile, "GraphSAGE over the graph alone, config features joined after pooling",
       make_tile_late_join},
      {"early_join_shape", Kind::Tile,
       "early_join whose config input also holds the tiling's grid steps and padded tile over the kernel's output",
       make_tile_early_join_shape},
      {"sage", Kind::Layout, "GraphSAGE with each configurable node's layout embedded per config",
       make_layout_sage},
      {"sage_config_pool", Kind::Layout,
       "sage whose readout also pools the configurable nodes apart from the whole graph",
       make_layout_sage_config_pool},
      {"sage_shape", Kind::Layout,
       "sage_config_pool whose config embedding also sees each layout's minor dims, padding and waste",
       make_layout_sage_shape},
      {"sage_shape_context", Kind::Layout,
       "sage_shape whose per-node layout cost weights read the node's neighbourhood, not only its own features",
       make_layout_sage_shape_context},
      {"sage_node_cost", Kind::Layout,
       "sage_shape_context plus a learned cost per configurable node from its per-config state, summed per graph",
       make_layout_sage_node_cost},
  };
  return archs;
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
  std::string known;
  for (const auto& n : model_arch_names(spec.kind)) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown " + kind_name(spec.kind) + " model '" + spec.arch + "' (known: " + known + ")", "",
              "model." + kind_name(spec.kind) + ".arch");
}

void register_model_choices() {
  for (Kind kind : {Kind::Tile, Kind::Layout})
    set_schema_choices("model." + kind_name(kind) + ".arch", model_arch_names(kind));
}

}  // namespace tpuperf
