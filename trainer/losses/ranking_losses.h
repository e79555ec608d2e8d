// The ranking losses' definitions. Inputs are G x S: scores (lower = predicted faster, the
// project convention), targets (lower = faster: runtime or runtime / normalizer) and the
// mask of real slots. Every loss averages over graphs, so a batch's loss does not grow
// with its number of graphs. registry.h makes them selectable by name (train.tile_loss,
// train.layout_loss).
#pragma once

#include <torch/torch.h>

namespace tpuperf {

// Throws c10::Error unless scores, target and mask are G x S alike.
void check_loss_shapes(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask);

// [g, i, j]: slot i is truly faster than slot j, both real (equal targets: no pair).
torch::Tensor ordered_pairs(const torch::Tensor& target, const torch::Tensor& mask);

// Per graph: mean over ordered pairs (i faster than j) of max(0, margin - (score_j -
// score_i)); then the mean over the graphs that have such a pair (0 when none does).
// One autograd function with its gradient computed in one pass (CPU, floating scores and
// target); tested equal to the reference, its definition in LibTorch ops.
torch::Tensor pairwise_hinge_loss(const torch::Tensor& scores, const torch::Tensor& target,
                                  const torch::Tensor& mask, double margin);
torch::Tensor pairwise_hinge_loss_reference(const torch::Tensor& scores, const torch::Tensor& target,
                                            const torch::Tensor& mask, double margin);

// Plackett-Luce negative log-likelihood of the true order (fastest first; equal targets
// keep slot order) with utilities -score: per graph
//   sum_i [ logsumexp_{j >= i} (-s_pi(j)) + s_pi(i) ]  over real slots,
// then the mean over graphs.
torch::Tensor listmle_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask);

// Pairwise logistic loss weighted by the runtime gap: per graph, over the n (n - 1) / 2
// pairs of its real slots, the mean of log(t_j / t_i) * log(1 + exp(s_i - s_j)) for i
// faster than j (equal targets add 0); then the mean over the graphs that have such a
// pair. Unlike ListMLE it sees how much slower a config is, not only the order: a
// re-measurement near-tie weighs next to nothing, a config 2x slower weighs log 2.
torch::Tensor pairwise_gap_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask);

// Squared error against the per-graph standardized log runtime, the flat baselines' target
// (tests/bench/baselines.py graph_target): per graph with at least two real slots, z =
// (log t - mean) / sd over its real slots (sd 0: z = 0), and the mean over them of
// ((s - mean s) - z)^2; then the mean over those graphs. A regression, not a ranking: a
// config's score estimates how many of the slate's deviations slower it is, so near-ties
// cost little when misordered and the slow tail, where the signal is, weighs most.
torch::Tensor log_mse_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask);

// A listwise loss that weighs the fast end: per graph with at least two real slots, the
// Kullback-Leibler divergence KL(p || q) of q = softmax(-score) over its real slots from
// p = softmax(-log(t) / temperature), the target distribution, which puts nearly all its
// mass on the slate's fastest configs (with temperature 0.1 a config 10% slower weighs
// 0.39 of the fastest, one 2x slower 0.001); then the mean over those graphs. Its gradient
// with respect to the scores is p - q: the loss is carried by the configs the model or the
// truth puts first, where a pairwise loss over the whole slate weighs the order of the
// slow bulk as much.
torch::Tensor softmax_top_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask,
                               double temperature);

}  // namespace tpuperf
