// gelu_dropout_add_layer_norm: the SAGE block's epilogue in one pass per row.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/block_passes.h"

namespace tpuperf {

namespace kernels {

// ------------------------------------------------------ the passes sage_block shares
// Float rows of 32 or 64 compute the GELU in the loop (the vector path's); other shapes, and
// CPUs without a vector path, take LibTorch's vectorized GELU (a scalar erf in the loop
// costs more than the pass it saves).
const VectorPath* epilogue_path(const Tensor& x, uint64_t threshold) {
  const VectorPath* path = vector_path();
  const int64_t H = x.size(-1);
  return path && x.scalar_type() == torch::kFloat && (H == 32 || H == 64) && threshold < 65536 ? path : nullptr;
}

Tensor epilogue_forward_rows(const VectorPath& path, const Tensor& z, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, double eps, double p, uint64_t seed, EpilogueSaved* saved) {
  const int64_t H = x.size(-1), rows = x.numel() / H;
  auto out = torch::empty_like(x);
  if (saved) *saved = {torch::empty_like(x), torch::empty_like(x), torch::empty({rows}, x.options())};
  const auto g = gamma.contiguous(), bt = beta.contiguous();
  EpilogueForward args{x.data_ptr<float>(), z.data_ptr<float>(), g.data_ptr<float>(), bt.data_ptr<float>(), seed,
                       static_cast<uint16_t>(drop_threshold(p)), float(1.0 / (1.0 - p)), float(eps),
                       out.data_ptr<float>(), nullptr, nullptr, nullptr};
  if (saved) {
    args.xhat = saved->xhat.data_ptr<float>();
    args.keep_slope = saved->keep_slope.data_ptr<float>();
    args.rstd = saved->rstd.data_ptr<float>();
  }
  at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) { path.epilogue_forward(H, b, e, args); });
  return out;
}

// Zeroed per chunk of rows (chunk_rows) partial sums of gamma's and beta's gradients, in
// double (each sums up to rows / kMaxChunks rows), added in chunk order by the caller: the
// same bits for any number of threads.
static Tensor gamma_beta_partials(const Tensor& gout) {
  const int64_t H = gout.size(-1), rows = gout.numel() / H, per = chunk_rows(rows);
  return torch::zeros({(rows + per - 1) / per, 2, H}, gout.options().dtype(torch::kDouble));
}

EpilogueGrads epilogue_backward_rows(const VectorPath& path, const EpilogueSaved& saved, const Tensor& gamma,
                                     const Tensor& gout) {
  const int64_t H = gout.size(-1), rows = gout.numel() / H, per = chunk_rows(rows);
  auto partial = gamma_beta_partials(gout);
  auto grad_z = torch::empty_like(gout), grad_x = torch::empty_like(gout);
  const float *xh = saved.xhat.data_ptr<float>(), *ks = saved.keep_slope.data_ptr<float>();
  const float *go = gout.data_ptr<float>(), *rp = saved.rstd.data_ptr<float>();
  const auto gm = gamma.contiguous();
  float *gz = grad_z.data_ptr<float>(), *gx = grad_x.data_ptr<float>();
  double* pp = partial.data_ptr<double>();
  at::parallel_for(0, partial.size(0), 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = c * per, r1 = std::min(rows, (c + 1) * per);
      path.epilogue_backward(H, r0, r1, xh, ks, go, gm.data_ptr<float>(), rp, gx, gz, pp + c * 2 * H);
    }
  });
  const auto sums = partial.sum(0).to(gout.scalar_type());
  return {grad_z, grad_x, sums[0], sums[1]};
}

namespace {


// The epilogue's rows for any width and type, as functions of __restrict pointers: without
// them the compiler must assume the scratch rows alias the tensors and keeps these loops
// scalar. (Float rows of 32 and 64 take the Row32 versions below.)

// Forward of one row at flat offset `at`: out = LayerNorm(x + keep * a), the mask bytes
// (if mask), and the row's mean and 1 / std.
template <typename T>
inline void epilogue_forward_row(int64_t n, int64_t at, const T* __restrict x, const T* __restrict a,
                                 uint64_t seed, uint64_t threshold, T scale,
                                 const T* __restrict gamma, const T* __restrict beta, T eps,
                                 T* __restrict keep, T* __restrict r, uint8_t* __restrict mask,
                                 T* __restrict out, T& mean, T& rstd) {
  fill_keep(keep, seed, at, n, threshold, scale);
  if (mask)
    for (int64_t j = 0; j < n; ++j) mask[j] = keep[j] != T(0);
  for (int64_t j = 0; j < n; ++j) r[j] = x[j] + a[j] * keep[j];
  const T mu = row_sum(r, n) / T(n);
  for (int64_t j = 0; j < n; ++j) r[j] -= mu;
  for (int64_t j = 0; j < n; ++j) keep[j] = r[j] * r[j];
  const T inv = T(1) / std::sqrt(row_sum(keep, n) / T(n) + eps);
  for (int64_t j = 0; j < n; ++j) out[j] = r[j] * inv * gamma[j] + beta[j];
  mean = mu;
  rstd = inv;
}

// Backward of one row: the gradients of x (gx) and of the activation before dropout (ga),
// and the row's terms of gamma's and beta's gradients added to acc_g and acc_b. keep is
// scale * mask byte (mask = all ones and scale 1 without dropout).
template <typename T>
inline void epilogue_backward_row(int64_t n, const T* __restrict x, const T* __restrict a,
                                  const uint8_t* __restrict mask, T scale, const T* __restrict go,
                                  const T* __restrict gamma, T mu, T inv, T* __restrict xhat,
                                  T* __restrict gy, T* __restrict gyx, T* __restrict gx,
                                  T* __restrict ga, double* __restrict acc_g,
                                  double* __restrict acc_b) {
  for (int64_t j = 0; j < n; ++j) {
    xhat[j] = (x[j] + a[j] * (scale * T(mask[j])) - mu) * inv;
    gy[j] = go[j] * gamma[j];
    gyx[j] = gy[j] * xhat[j];
    acc_g[j] += go[j] * xhat[j];
    acc_b[j] += go[j];
  }
  const T m1 = row_sum(gy, n) / T(n), m2 = row_sum(gyx, n) / T(n);
  for (int64_t j = 0; j < n; ++j) {
    const T gr = inv * (gy[j] - m1 - xhat[j] * m2);
    gx[j] = gr;
    ga[j] = gr * (scale * T(mask[j]));
  }
}

// Any other width or type: a = gelu(z) by LibTorch, then one pass per row; keeps a, the
// mask bytes and each row's mean and 1 / std.
Tensor forward_generic(const Tensor& z, const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                       double p, uint64_t seed, Tensor& a, Tensor& mask, Tensor& mean, Tensor& rstd) {
  const int64_t H = x.size(-1), rows = x.numel() / H;
  auto out = torch::empty_like(x);
  mean = torch::empty({rows}, x.options());
  rstd = torch::empty({rows}, x.options());
  const uint64_t threshold = drop_threshold(p);
  // The mask as bytes for backward: hashing costs more than storing and reading 1 byte.
  mask = torch::empty({threshold > 0 ? rows * H : 0}, torch::kUInt8);
  uint8_t* mk = mask.data_ptr<uint8_t>();
  a = at::gelu(z);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_dropout_add_layer_norm", [&] {
    const scalar_t* ap = a.data_ptr<scalar_t>();
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const auto g = gamma.contiguous(), bt = beta.contiguous();
    const scalar_t* gp = g.data_ptr<scalar_t>();
    const scalar_t* bp = bt.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    scalar_t* mp = mean.data_ptr<scalar_t>();
    scalar_t* rp = rstd.data_ptr<scalar_t>();
    const scalar_t scale = scalar_t(1.0 / (1.0 - p));
    at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
      std::vector<scalar_t> scratch(static_cast<size_t>(2 * H));
      for (int64_t row = b; row < e; ++row) {
        const int64_t at = row * H;
        epilogue_forward_row(H, at, xp + at, ap + at, seed, threshold, scale, gp, bp, scalar_t(eps),
                             scratch.data(), scratch.data() + H, threshold > 0 ? mk + at : nullptr,
                             op + at, mp[row], rp[row]);
      }
    });
  });
  return out;
}

// Backward of the generic path: the gradient of gelu(z) (grad_a), x's, and the partial sums
// as in epilogue_backward_rows.
void backward_generic(const Tensor& a, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                      const Tensor& rstd, const Tensor& mask, double p, const Tensor& gout, Tensor& grad_a,
                      Tensor& grad_x, Tensor& partial) {
  const int64_t H = x.size(-1), rows = x.numel() / H, per = chunk_rows(rows);
  const uint64_t threshold = drop_threshold(p);
  // Without dropout every row reads one row of ones as its mask (and the scale is 1).
  const std::vector<uint8_t> ones(static_cast<size_t>(H), 1);
  const uint8_t* mk = threshold > 0 ? mask.data_ptr<uint8_t>() : ones.data();
  const int64_t mask_stride = threshold > 0 ? H : 0;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_dropout_add_layer_norm_backward", [&] {
    const scalar_t* ap = a.data_ptr<scalar_t>();
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const auto gm = gamma.contiguous();
    const scalar_t* gp = gm.data_ptr<scalar_t>();
    const scalar_t* mp = mean.data_ptr<scalar_t>();
    const scalar_t* rp = rstd.data_ptr<scalar_t>();
    const scalar_t* go = gout.data_ptr<scalar_t>();
    scalar_t* ga = grad_a.data_ptr<scalar_t>();
    scalar_t* gx = grad_x.data_ptr<scalar_t>();
    double* pp = partial.data_ptr<double>();
    const scalar_t scale = threshold > 0 ? scalar_t(1.0 / (1.0 - p)) : scalar_t(1);
    at::parallel_for(0, partial.size(0), 1, [&](int64_t cb, int64_t ce) {
      std::vector<scalar_t> scratch(static_cast<size_t>(3 * H));
      std::vector<double> acc(static_cast<size_t>(2 * H));
      for (int64_t c = cb; c < ce; ++c) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t row = c * per; row < std::min(rows, (c + 1) * per); ++row) {
          const int64_t at = row * H;
          epilogue_backward_row(H, xp + at, ap + at, mk + row * mask_stride, scale, go + at, gp, mp[row],
                                rp[row], scratch.data(), scratch.data() + H, scratch.data() + 2 * H, gx + at,
                                ga + at, acc.data(), acc.data() + H);
        }
        std::copy(acc.begin(), acc.end(), pp + c * 2 * H);
      }
    });
  });
}

// ------------------------------------------------------- gelu, dropout, add, LayerNorm
struct GeluDropoutAddLayerNorm : torch::autograd::Function<GeluDropoutAddLayerNorm> {
  // save: the caller will differentiate the result (the row32 path then stores what its
  // backward reads; in evaluation it stores nothing).
  static Tensor forward(AutogradContext* ctx, const Tensor& z_in, const Tensor& x_in, const Tensor& gamma,
                        const Tensor& beta, double eps, double p, int64_t seed, bool save) {
    const auto z = z_in.contiguous(), x = x_in.contiguous();
    TORCH_CHECK(z.sizes() == x.sizes(), "gelu_dropout_add_layer_norm: z ", z.sizes(), " and x ",
                x.sizes(), " differ");
    const auto useed = static_cast<uint64_t>(seed);
    const VectorPath* path = epilogue_path(x, drop_threshold(p));
    ctx->saved_data["p"] = p;
    ctx->saved_data["row32"] = path != nullptr;
    if (path) {
      EpilogueSaved saved;
      auto out = epilogue_forward_rows(*path, z, x, gamma, beta, eps, p, useed, save ? &saved : nullptr);
      ctx->save_for_backward({saved.xhat, saved.keep_slope, saved.rstd, gamma});
      return out;
    }
    Tensor a, mask, mean, rstd;
    auto out = forward_generic(z, x, gamma, beta, eps, p, useed, a, mask, mean, rstd);
    ctx->save_for_backward({z, a, x, gamma, mean, rstd, mask});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const double p = ctx->saved_data["p"].toDouble();
    const bool row32 = ctx->saved_data["row32"].toBool();
    const auto gout = grads[0].contiguous();
    const Tensor& gamma = saved[3];  // both paths save gamma fourth
    if (row32) {
      TORCH_CHECK(saved[0].defined(), "gelu_dropout_add_layer_norm: backward of a forward that saved nothing");
      const VectorPath* path = vector_path();
      TORCH_CHECK(path, "gelu_dropout_add_layer_norm: the vector path was turned off between forward and backward");
      const EpilogueGrads g = epilogue_backward_rows(*path, {saved[0], saved[1], saved[2]}, gamma, gout);
      return {g.z, g.x, g.gamma, g.beta, Tensor(), Tensor(), Tensor(), Tensor()};
    }
    auto partial = gamma_beta_partials(gout);
    auto grad_a = torch::empty_like(gout), grad_x = torch::empty_like(gout);  // grad_a: of gelu(z)
    const auto &z = saved[0], &a = saved[1], &x = saved[2];
    backward_generic(a, x, gamma, saved[4], saved[5], saved[6], p, gout, grad_a, grad_x, partial);
    const auto sums = partial.sum(0).to(gout.scalar_type());
    return {at::gelu_backward(grad_a, z), grad_x, sums[0], sums[1], Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor gelu_dropout_add_layer_norm(const torch::Tensor& z, const torch::Tensor& x,
                                          const torch::Tensor& gamma, const torch::Tensor& beta,
                                          double eps, double p, uint64_t seed) {
  check_states(x, -1, "gelu_dropout_add_layer_norm: x");
  check_layer_norm_weights(x, gamma, beta, "gelu_dropout_add_layer_norm");
  const bool save = will_differentiate({z, x, gamma, beta});
  return GeluDropoutAddLayerNorm::apply(z, x, gamma, beta, eps, p, static_cast<int64_t>(seed), save);
}

}  // namespace tpuperf
