// An exponential moving average of a model's parameters (Polyak averaging). Training steps
// the model's own weights; evaluation, the checkpoints' model and so every prediction use
// the average, which smooths the last steps' noise out of the ranking (docs/experiments
// E10).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tpuperf {

class WeightAverage {
 public:
  // Starts the average at the model's current parameters. decay 0: off (update and the
  // scope below do nothing).
  WeightAverage(torch::nn::Module& model, double decay);

  bool enabled() const { return decay_ > 0; }
  // The weight of the old average at update t (0-based: t updates came before):
  // min(decay, (1 + t) / (10 + t)), so the first updates do not keep the random start.
  double decay_at(int64_t t) const;
  // After optimizer step t: average = d * average + (1 - d) * parameters.
  void update(int64_t t);

  // Replaces the average (resuming from a checkpoint that holds it).
  void set_average(const std::vector<torch::Tensor>& average);
  // Resuming from a checkpoint, whose model is the average: the model's parameters become
  // the average and `training` (the checkpoint's training weights) the model's parameters.
  void resume(const std::vector<torch::Tensor>& training);
  const std::vector<torch::Tensor>& average() const { return average_; }

  // While alive, the model holds the average; the training weights come back at the end
  // of the scope, bit for bit. The model must not step meanwhile.
  class Scope {
   public:
    explicit Scope(WeightAverage& avg);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // The training weights the scope put aside (empty when averaging is off).
    const std::vector<torch::Tensor>& training_weights() const { return training_; }

   private:
    WeightAverage& avg_;
    std::vector<torch::Tensor> training_;
  };

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> average_;
  double decay_;
};

}  // namespace tpuperf
