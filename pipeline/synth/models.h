// The model a generated graph comes from, and its file name. Train/valid names carry the
// model the way the release's do (resnet50.4x4.fp16, efficientnet_b0_batch_32_-<hex>,
// bert_en_cased_L-12_H-768_A-12_batch_size_16_train); the graph is built to match the
// name (element type, batch, training or inference, transformer sizes). Test names are
// 32 hex digits.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "pipeline/synth/hlo.h"
#include "pipeline/synth/rng.h"

namespace tpuperf::synth {

// How a convolution network's blocks look.
enum class Arch { Bottleneck, Depthwise, Inception, Plain, Dense, Transformer };

struct ModelSpec {
  std::string name;
  std::string family;  // leading letters of the name: what folds group by
  Arch arch = Arch::Plain;
  ElemType dtype = ElemType::F32;
  int64_t batch = 32;
  bool training = false;
  bool sharded = false;  // multi-chip topology (4x4, 8x8...): gradients are all-reduced
  int64_t image = 224;   // convolution networks
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0;  // transformers
};

// Families of one source ("xla": convolution networks, "nlp": transformers).
size_t num_families(const std::string& source);

// A model of family `family` (index into the source's list) sized for about target_nodes
// nodes and at most ~max_config_nodes configurable ones (transformers: the layer count, at
// most max_layers; convolution networks are sized by their builder); the name is not yet
// unique.
ModelSpec make_model(const std::string& source, size_t family, int64_t target_nodes,
                     int64_t max_config_nodes, Rng& rng, int64_t max_layers = 48);

// The leading letters of a name, up to the first digit, '.', '_' or '-'.
std::string family_of(const std::string& name);

// Appends a deterministic suffix until the name is not in used; records it.
std::string unique_name(const std::string& name, std::set<std::string>& used, Rng& rng);

// n lowercase hex digits.
std::string hex_digits(Rng& rng, int n);

}  // namespace tpuperf::synth
