#include "trainer/models/model_spec.h"

namespace tpuperf {

ModelSpec configured_model_spec(const Config& cfg, Kind kind) {
  const std::string p = kind == Kind::Tile ? "model.tile." : "model.layout.";
  ModelSpec s;
  s.kind = kind;
  s.arch = cfg.get_string(p + "arch");
  s.options.hidden = cfg.get_int(p + "hidden");
  s.options.layers = cfg.get_int(p + "layers");
  s.options.dropout = cfg.get_float(p + "dropout");
  s.options.opcode_dim = cfg.get_int(p + "opcode_dim");
  s.options.attention_heads = cfg.get_int(p + "attention_heads");
  s.options.fused = cfg.get_bool("model.fused");
  return s;
}

}  // namespace tpuperf
