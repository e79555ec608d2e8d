// The models tpuperf can train, by name. A model maps a Batch to a G x S tensor of scores,
// one per (graph, config slot), where LOWER = predicted FASTER (the project-wide convention
// of common/metrics/metrics.h).
//
// Adding a model is one new file in trainer/models/ that defines a RankingModel and its
// factory, plus one line in registry.cpp's table. model.<kind>.arch picks it by name, the
// config schema's allowed values come from the table (register_model_choices) and the
// checkpoint records the name, so prediction rebuilds the model it trained. A model taken
// out of the table goes to the retired list with its reason, so an old checkpoint or config
// that names it fails with that reason rather than as a typo.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/models/batch.h"
#include "trainer/models/model_spec.h"

namespace tpuperf {

class RankingModel : public torch::nn::Module {
 public:
  // G x S scores, lower = faster.
  virtual torch::Tensor forward(const Batch& batch) = 0;
};
using ModelPtr = std::shared_ptr<RankingModel>;

struct ModelArch {
  std::string name;     // "early_join"
  Kind kind;            // the collections it ranks
  std::string summary;  // one line for --help-config
  std::function<ModelPtr(const ModelSpec&)> make;
};

// A name that once was a model and is no longer built.
struct RetiredArch {
  std::string name;
  Kind kind;
  std::string reason;  // one line: why, and what to use instead
};
const std::vector<RetiredArch>& retired_model_archs();

// Every registered architecture, in table order (the config schema names the defaults:
// model.tile.arch and model.layout.arch).
const std::vector<ModelArch>& model_archs();
std::vector<std::string> model_arch_names(Kind kind);

// Builds spec's model. Throws Error naming the arch and the known ones of its kind when
// the name is not registered for that kind (or naming it retired, with the reason), or
// when the options are invalid.
ModelPtr make_model(const ModelSpec& spec);

// Makes the config schema's model.tile.arch and model.layout.arch accept exactly the
// registered names (and list them in --help-config). Idempotent.
void register_model_choices();

}  // namespace tpuperf
