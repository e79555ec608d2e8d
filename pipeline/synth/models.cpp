#include "pipeline/synth/models.h"

#include <algorithm>
#include <cctype>

#include "common/base/error.h"

namespace tpuperf::synth {

namespace {

struct ConvFamily {
  std::vector<std::string> variants;
  Arch arch;
  int64_t image;
};

// Every family has a distinct leading word, so each is its own fold group.
const std::vector<ConvFamily>& conv_families() {
  static const std::vector<ConvFamily> f = {
      {{"resnet50", "resnet101", "resnet_v1_50", "resnet_v2_152"}, Arch::Bottleneck, 224},
      {{"efficientnet_b0", "efficientnet_b3", "efficientnet_b7"}, Arch::Depthwise, 224},
      {{"inception_v3", "inception_v4"}, Arch::Inception, 299},
      {{"mobilenet_v2", "mobilenet_v3_small"}, Arch::Depthwise, 224},
      {{"alexnet"}, Arch::Plain, 224},
      {{"vgg16", "vgg19"}, Arch::Plain, 224},
      {{"densenet121", "densenet169"}, Arch::Dense, 224},
      {{"retinanet_resnet50", "retinanet_spinenet49"}, Arch::Bottleneck, 256},
      {{"mask_rcnn_resnet50"}, Arch::Bottleneck, 256},
      {{"shufflenet_v2"}, Arch::Depthwise, 224},
      {{"xception"}, Arch::Depthwise, 299},
      {{"nasnet_mobile", "nasnet_large"}, Arch::Inception, 224},
      {{"squeezenet1_1"}, Arch::Plain, 224},
      {{"unet_2d"}, Arch::Dense, 128},
  };
  return f;
}

struct NlpFamily {
  std::string base;
  std::vector<int64_t> hidden;
};

const std::vector<NlpFamily>& nlp_families() {
  static const std::vector<NlpFamily> f = {
      {"bert_en_cased", {768, 1024}},    {"albert_en_base", {768}},
      {"electra", {256, 768}},           {"small_bert_bert_en_uncased", {128, 256, 512}},
      {"talking_heads_base", {768}},     {"experts_pubmed", {768}},
      {"mobilebert_en_uncased", {512}},  {"lambert_en_uncased", {1024}},
      {"distilbert_multi_cased", {768}},
  };
  return f;
}

// Nodes one transformer layer adds (forward; training adds the backward pass).
constexpr int64_t kNodesPerLayer = 80;
constexpr int64_t kConfigNodesPerLayer = 17;

ModelSpec conv_model(size_t family, Rng& rng) {
  const ConvFamily& f = conv_families()[family % conv_families().size()];
  ModelSpec m;
  m.arch = f.arch;
  m.image = f.image;
  const std::string& variant = rng.pick(f.variants);
  if (rng.chance(0.5)) {
    // resnet50.4x4.fp16: a multi-chip training or serving run.
    static const std::vector<std::string> topo = {"2x2", "4x4", "8x8"};
    static const std::vector<std::string> types = {"fp16", "bf16", "fp32"};
    const std::string& t = rng.pick(types);
    m.dtype = t == "fp16" ? ElemType::F16 : t == "bf16" ? ElemType::BF16 : ElemType::F32;
    m.sharded = true;
    m.training = rng.chance(0.6);
    m.batch = rng.pick(std::vector<int64_t>{16, 32, 64, 128});
    m.name = variant + "." + rng.pick(topo) + "." + t;
  } else {
    // alexnet_train_batch_32_-1bae27a41d70f4dc: a single-chip run.
    m.dtype = rng.chance(0.5) ? ElemType::BF16 : ElemType::F32;
    m.training = rng.chance(0.5);
    m.batch = rng.pick(std::vector<int64_t>{8, 16, 32, 64, 128});
    m.name = variant + (m.training ? "_train" : "") + "_batch_" + std::to_string(m.batch) + "_-" +
             hex_digits(rng, 16);
  }
  return m;
}

ModelSpec nlp_model(size_t family, int64_t target_nodes, int64_t max_config_nodes, int64_t max_layers,
                    Rng& rng) {
  const NlpFamily& f = nlp_families()[family % nlp_families().size()];
  ModelSpec m;
  m.arch = Arch::Transformer;
  m.dtype = rng.chance(0.6) ? ElemType::BF16 : ElemType::F32;
  m.training = rng.chance(0.5);
  m.hidden = rng.pick(f.hidden);
  m.heads = m.hidden / 64;
  m.seq = rng.pick(std::vector<int64_t>{128, 256, 384, 512});
  m.batch = rng.pick(std::vector<int64_t>{1, 4, 8, 16, 32});
  const double per_layer = kNodesPerLayer * (m.training ? 2.4 : 1.0);
  const double cfg_per_layer = kConfigNodesPerLayer * (m.training ? 2.2 : 1.0);
  const int64_t by_nodes = static_cast<int64_t>(static_cast<double>(target_nodes) / per_layer);
  const int64_t by_configs =
      static_cast<int64_t>(static_cast<double>(max_config_nodes) / cfg_per_layer);
  m.layers = std::clamp<int64_t>(std::min(by_nodes, by_configs), 2, max_layers);
  m.name = f.base + "_L-" + std::to_string(m.layers) + "_H-" + std::to_string(m.hidden) + "_A-" +
           std::to_string(m.heads) + "_batch_size_" + std::to_string(m.batch) +
           (m.training ? "_train" : "_test");
  return m;
}

}  // namespace

size_t num_families(const std::string& source) {
  if (source == "xla") return conv_families().size();
  if (source == "nlp") return nlp_families().size();
  throw Error("unknown layout source '" + source + "' (expected xla or nlp)");
}

ModelSpec make_model(const std::string& source, size_t family, int64_t target_nodes,
                     int64_t max_config_nodes, Rng& rng, int64_t max_layers) {
  ModelSpec m = source == "nlp" ? nlp_model(family, target_nodes, max_config_nodes, max_layers, rng)
                                : conv_model(family, rng);
  m.family = family_of(m.name);
  return m;
}

std::string family_of(const std::string& name) {
  size_t end = 0;
  while (end < name.size() && !std::isdigit(static_cast<unsigned char>(name[end])) &&
         name[end] != '.' && name[end] != '_' && name[end] != '-')
    ++end;
  return name.substr(0, end);
}

std::string hex_digits(Rng& rng, int n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) s += digits[rng.randint(0, 15)];
  return s;
}

std::string unique_name(const std::string& name, std::set<std::string>& used, Rng& rng) {
  std::string candidate = name;
  while (used.count(candidate)) candidate = name + "_" + hex_digits(rng, 8);
  used.insert(candidate);
  return candidate;
}

}  // namespace tpuperf::synth
