// counter_dropout, and the mask definitions of dropout_mask.h.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/dropout_mask.h"
#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// ------------------------------------------------------------------------ dropout only
struct CounterDropout : torch::autograd::Function<CounterDropout> {
  static Tensor apply_mask(const Tensor& x, double p, uint64_t seed) {
    auto out = torch::empty_like(x);
    const uint64_t threshold = drop_threshold(p);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "counter_dropout", [&] {
      const scalar_t scale = scalar_t(1.0 / (1.0 - p));
      const scalar_t* in = x.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), kDropoutGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = keeps(seed, i, threshold) ? in[i] * scale : scalar_t(0);
      });
    });
    return out;
  }

  static Tensor forward(AutogradContext* ctx, const Tensor& x, double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return apply_mask(x.contiguous(), p, static_cast<uint64_t>(seed));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {apply_mask(grads[0].contiguous(), p, seed), Tensor(), Tensor()};
  }
};
}  // namespace
}  // namespace kernels

using namespace kernels;

bool dropout_keeps(uint64_t seed, int64_t i, double p) { return keeps(seed, i, drop_threshold(p)); }

uint64_t draw_dropout_seed() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

torch::Tensor dropout_multipliers(torch::IntArrayRef sizes, double p, uint64_t seed,
                                  torch::ScalarType dtype) {
  auto m = torch::empty(sizes, torch::kFloat64);
  double* mp = m.data_ptr<double>();
  const uint64_t threshold = drop_threshold(p);
  const double scale = threshold > 0 ? 1.0 / (1.0 - p) : 1.0;
  for (int64_t i = 0; i < m.numel(); ++i) mp[i] = keeps(seed, i, threshold) ? scale : 0.0;
  return m.to(dtype);
}

torch::Tensor counter_dropout(const torch::Tensor& x, double p, uint64_t seed) {
  if (drop_threshold(p) == 0) return x;  // p below 2^-17 rounds to no dropout
  return CounterDropout::apply(x, p, static_cast<int64_t>(seed));
}

}  // namespace tpuperf
