#include "trainer/train/weight_average.h"

#include <algorithm>

#include "common/base/error.h"

namespace tpuperf {

WeightAverage::WeightAverage(torch::nn::Module& model, double decay) : params_(model.parameters()), decay_(decay) {
  if (!enabled()) return;
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) average_.push_back(p.detach().clone());
}

double WeightAverage::decay_at(int64_t t) const {
  return std::min(decay_, (1.0 + static_cast<double>(t)) / (10.0 + static_cast<double>(t)));
}

void WeightAverage::update(int64_t t) {
  if (!enabled()) return;
  torch::NoGradGuard no_grad;
  const double d = decay_at(t);
  for (size_t i = 0; i < params_.size(); ++i) average_[i].mul_(d).add_(params_[i].detach(), 1.0 - d);
}

void WeightAverage::set_average(const std::vector<torch::Tensor>& average) {
  if (!enabled()) throw Error("weight average is off: there is no average to set");
  if (average.size() != params_.size()) throw Error("weight average has another number of parameters");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!average[i].sizes().equals(params_[i].sizes()))
      throw Error("weight average: parameter " + std::to_string(i) + " has another shape");
    average_[i] = average[i].detach().to(params_[i].dtype()).clone();
  }
}

void WeightAverage::resume(const std::vector<torch::Tensor>& training) {
  if (training.size() != params_.size()) throw Error("training weights: another number of parameters");
  set_average(params_);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].detach().copy_(training[i]);
}

WeightAverage::Scope::Scope(WeightAverage& avg) : avg_(avg) {
  if (!avg_.enabled()) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < avg_.params_.size(); ++i) {
    training_.push_back(avg_.params_[i].detach().clone());
    avg_.params_[i].detach().copy_(avg_.average_[i]);
  }
}

WeightAverage::Scope::~Scope() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < training_.size(); ++i) avg_.params_[i].detach().copy_(training_[i]);
}

}  // namespace tpuperf
