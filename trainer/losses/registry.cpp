#include "trainer/losses/registry.h"

#include "common/config/config.h"
#include "common/base/error.h"
#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

namespace {

// The pairwise losses average over the graphs that have at least one ordered pair.
int64_t graphs_with_a_pair(const torch::Tensor& target, const torch::Tensor& mask) {
  return ordered_pairs(target, mask).any(2).any(1).sum().item<int64_t>();
}

}  // namespace

const std::vector<LossKind>& loss_kinds() {
  static const std::vector<LossKind> kinds = {
      {"listmle", "Plackett-Luce likelihood of the true order",
       [](const LossOptions&, const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m) {
         return listmle_loss(s, t, m);
       },
       [](const torch::Tensor& t, const torch::Tensor&) { return t.size(0); }},
      {"hinge", "pairwise hinge with margin train.hinge_margin",
       [](const LossOptions& o, const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m) {
         return o.fused ? pairwise_hinge_loss(s, t, m, o.margin) : pairwise_hinge_loss_reference(s, t, m, o.margin);
       },
       graphs_with_a_pair},
      {"pairwise_gap", "pairwise logistic weighted by the log-runtime gap (near-ties weigh ~0)",
       [](const LossOptions&, const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m) {
         return pairwise_gap_loss(s, t, m);
       },
       graphs_with_a_pair},
      {"log_mse", "squared error against the per-graph standardized log runtime (a regression)",
       [](const LossOptions&, const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m) {
         return log_mse_loss(s, t, m);
       },
       [](const torch::Tensor&, const torch::Tensor& m) { return (m.sum(1) >= 2).sum().item<int64_t>(); }},
      {"softmax_top", "KL of softmax(-score) from softmax(-log runtime / train.softmax_temperature): the fast end",
       [](const LossOptions& o, const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m) {
         return softmax_top_loss(s, t, m, o.temperature);
       },
       [](const torch::Tensor&, const torch::Tensor& m) { return (m.sum(1) >= 2).sum().item<int64_t>(); }},
  };
  return kinds;
}

std::vector<std::string> loss_names() {
  std::vector<std::string> names;
  for (const auto& k : loss_kinds()) names.push_back(k.name);
  return names;
}

const LossKind& find_loss(const std::string& name, const std::string& key) {
  for (const auto& k : loss_kinds())
    if (k.name == name) return k;
  std::string known;
  for (const auto& n : loss_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown loss '" + name + "' (known: " + known + ")", "", key);
}

LossOptions configured_loss(const Config& cfg, const std::string& key) {
  LossOptions o;
  o.name = cfg.get_string(key);
  o.margin = cfg.get_float("train.hinge_margin");
  o.temperature = cfg.get_float("train.softmax_temperature");
  o.fused = cfg.get_bool("model.fused");
  find_loss(o.name, key);
  return o;
}

void register_loss_choices() {
  for (const char* key : {"train.tile_loss", "train.layout_loss"}) set_schema_choices(key, loss_names());
}

torch::Tensor ranking_loss(const LossOptions& opts, const torch::Tensor& scores, const torch::Tensor& target,
                           const torch::Tensor& mask) {
  return find_loss(opts.name).loss(opts, scores, target, mask);
}

int64_t ranking_loss_graphs(const LossOptions& opts, const torch::Tensor& target, const torch::Tensor& mask) {
  return find_loss(opts.name).graphs(target, mask);
}

double backward_joint_loss(const LossOptions& opts, const std::vector<Batch>& batches,
                           const std::function<torch::Tensor(const Batch&)>& forward, double scale) {
  std::vector<int64_t> counted;
  int64_t all = 0;
  for (const Batch& b : batches) all += counted.emplace_back(ranking_loss_graphs(opts, b.target, b.config_mask));
  double joint = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (counted[i] == 0) continue;  // e.g. hinge on slates without a pair: no loss, no gradient
    const double share = static_cast<double>(counted[i]) / static_cast<double>(all);
    const torch::Tensor loss = ranking_loss(opts, forward(batches[i]), batches[i].target, batches[i].config_mask);
    (loss * (share * scale)).backward();
    joint += loss.item<double>() * share;
  }
  return joint;
}

}  // namespace tpuperf
