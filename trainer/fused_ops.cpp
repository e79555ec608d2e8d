#include "trainer/fused_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "common/random.h"

namespace tpuperf {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

constexpr int64_t kGrain = 32;         // rows per parallel task
constexpr int64_t kMaxChunks = 64;     // fixed partial-sum chunks: results independent of threads
constexpr double kTwo16 = 65536.0;     // the mask compares 16 random bits with p * 2^16

// dims < 0: any number of dimensions.
void check_states(const Tensor& t, int64_t dims, const char* what) {
  TORCH_CHECK(dims < 0 || t.dim() == dims, what, " must have ", dims, " dimensions, got ",
              t.sizes());
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble, what,
              " must be float32 or float64, got ", t.scalar_type());
}

uint64_t drop_threshold(double p) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  return static_cast<uint64_t>(std::llround(p * kTwo16));
}

// The hash of elements 4k .. 4k + 3: the k-th output of SplitMix64(seed), computed without
// stepping through the ones before. Element i uses its 16-bit lane i % 4.
inline uint64_t hash_of_quad(uint64_t seed, int64_t i) {
  return splitmix64(seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(i) >> 2));
}

inline bool keeps(uint64_t seed, int64_t i, uint64_t threshold) {
  return ((hash_of_quad(seed, i) >> (16 * (i & 3))) & 0xffffULL) >= threshold;
}

// The dropout multipliers (1 / (1 - p) or 0; all 1 without dropout) of elements
// at .. at + H - 1.
template <typename T>
void fill_keep(T* keep, uint64_t seed, int64_t at, int64_t H, uint64_t threshold, T scale) {
  if (threshold == 0) {
    std::fill(keep, keep + H, T(1));
    return;
  }
  // Elements before the first quad boundary, whole quads (one hash for four elements, no
  // branches), then the rest.
  const int64_t head = std::min<int64_t>(H, (4 - (at & 3)) & 3);
  const int64_t quads = (H - head) / 4;
  for (int64_t j = 0; j < head; ++j) keep[j] = scale * T(keeps(seed, at + j, threshold));
  for (int64_t q = 0; q < quads; ++q) {
    const int64_t j = head + 4 * q;
    const uint64_t h = hash_of_quad(seed, at + j);
    for (int k = 0; k < 4; ++k) keep[j + k] = scale * T(((h >> (16 * k)) & 0xffffULL) >= threshold);
  }
  for (int64_t j = head + 4 * quads; j < H; ++j) keep[j] = scale * T(keeps(seed, at + j, threshold));
}

// Sum of v[0..H) in 8 interleaved lanes, which the compiler vectorizes.
template <typename T>
T row_sum(const T* v, int64_t H) {
  T lane[8] = {};
  const int64_t blocks = H / 8;
  for (int64_t q = 0; q < blocks; ++q)
    for (int k = 0; k < 8; ++k) lane[k] += v[8 * q + k];
  T total = 0;
  for (int64_t t = 0; t < H % 8; ++t) total += v[8 * blocks + t];
  for (int k = 0; k < 8; ++k) total += lane[k];
  return total;
}

// Rows per chunk so that there are at most kMaxChunks chunks of at least kGrain rows.
int64_t chunk_rows(int64_t rows) {
  return std::max(kGrain, (rows + kMaxChunks - 1) / kMaxChunks);
}

// The epilogue's rows, as functions of __restrict pointers: without them the compiler must
// assume the scratch rows alias the tensors and keeps these loops scalar. kH > 0 fixes the
// width at compile time (fully unrolled); kH = 0 uses H.

// Forward of one row at flat offset `at`: out = LayerNorm(x + keep * a), the mask bytes
// (if mask), and the row's mean and 1 / std.
template <typename T, int64_t kH>
inline void epilogue_forward_row(int64_t H, int64_t at, const T* __restrict x, const T* __restrict a,
                                 uint64_t seed, uint64_t threshold, T scale,
                                 const T* __restrict gamma, const T* __restrict beta, T eps,
                                 T* __restrict keep, T* __restrict r, uint8_t* __restrict mask,
                                 T* __restrict out, T& mean, T& rstd) {
  const int64_t n = kH > 0 ? kH : H;
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
template <typename T, int64_t kH>
inline void epilogue_backward_row(int64_t H, const T* __restrict x, const T* __restrict a,
                                  const uint8_t* __restrict mask, T scale, const T* __restrict go,
                                  const T* __restrict gamma, T mu, T inv, T* __restrict xhat,
                                  T* __restrict gy, T* __restrict gyx, T* __restrict gx,
                                  T* __restrict ga, double* __restrict acc_g,
                                  double* __restrict acc_b) {
  const int64_t n = kH > 0 ? kH : H;
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

// ------------------------------------------------------------------------ dropout only
struct CounterDropout : torch::autograd::Function<CounterDropout> {
  static Tensor apply_mask(const Tensor& x, double p, uint64_t seed) {
    auto out = torch::empty_like(x);
    const uint64_t threshold = drop_threshold(p);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "counter_dropout", [&] {
      const scalar_t scale = scalar_t(1.0 / (1.0 - p));
      const scalar_t* in = x.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), 4096, [&](int64_t b, int64_t e) {
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

// ------------------------------------------------------- gelu, dropout, add, LayerNorm
struct GeluDropoutAddLayerNorm : torch::autograd::Function<GeluDropoutAddLayerNorm> {
  static Tensor forward(AutogradContext* ctx, const Tensor& z_in, const Tensor& x_in,
                        const Tensor& gamma, const Tensor& beta, double eps, double p, int64_t seed) {
    const auto z = z_in.contiguous(), x = x_in.contiguous();
    TORCH_CHECK(z.sizes() == x.sizes(), "gelu_dropout_add_layer_norm: z ", z.sizes(), " and x ",
                x.sizes(), " differ");
    // LibTorch's GELU is vectorized (erf); a scalar erf inside the fused loop costs more
    // than the extra pass over memory it saves.
    const auto a = at::gelu(z);
    const int64_t H = x.size(-1), rows = x.numel() / H;
    auto out = torch::empty_like(x);
    auto mean = torch::empty({rows}, x.options()), rstd = torch::empty({rows}, x.options());
    const uint64_t threshold = drop_threshold(p), useed = static_cast<uint64_t>(seed);
    // The mask as bytes for backward: hashing costs more than storing and reading 1 byte.
    auto mask = torch::empty({threshold > 0 ? rows * H : 0}, torch::kUInt8);
    uint8_t* mk = mask.data_ptr<uint8_t>();
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
      // H = 32 (the default width) as a constant: fully unrolled, vectorized rows.
      const auto rows_of_width = [&](auto width) {
        constexpr int64_t kH = decltype(width)::value;
        at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
          std::vector<scalar_t> scratch(static_cast<size_t>(2 * H));
          for (int64_t row = b; row < e; ++row) {
            const int64_t at = row * H;
            epilogue_forward_row<scalar_t, kH>(H, at, xp + at, ap + at, useed, threshold, scale, gp,
                                               bp, scalar_t(eps), scratch.data(), scratch.data() + H,
                                               threshold > 0 ? mk + at : nullptr, op + at, mp[row],
                                               rp[row]);
          }
        });
      };
      if (H == 32)
        rows_of_width(std::integral_constant<int64_t, 32>{});
      else
        rows_of_width(std::integral_constant<int64_t, 0>{});
    });
    ctx->save_for_backward({z, a, x, gamma, mean, rstd, mask});
    ctx->saved_data["p"] = p;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &z = saved[0], &a = saved[1], &x = saved[2], &gamma = saved[3], &mean = saved[4],
               &rstd = saved[5], &mask = saved[6];
    const double p = ctx->saved_data["p"].toDouble();
    const auto gout = grads[0].contiguous();
    const int64_t H = x.size(-1), rows = x.numel() / H, per = chunk_rows(rows);
    const int64_t chunks = (rows + per - 1) / per;
    auto grad_a = torch::empty_like(z), grad_x = torch::empty_like(x);
    // Per chunk partial sums of gamma's and beta's gradients, added in chunk order.
    // In double: each sums the values of up to rows / kMaxChunks rows.
    auto partial = torch::zeros({chunks, 2, H}, x.options().dtype(torch::kDouble));
    const uint64_t threshold = drop_threshold(p);
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
      // Without dropout every row reads one row of ones as its mask (and the scale is 1).
      const std::vector<uint8_t> ones(static_cast<size_t>(H), 1);
      const uint8_t* mk = threshold > 0 ? mask.data_ptr<uint8_t>() : ones.data();
      const int64_t mask_stride = threshold > 0 ? H : 0;
      const scalar_t scale = threshold > 0 ? scalar_t(1.0 / (1.0 - p)) : scalar_t(1);
      // H = 32 (the default width) as a constant: fully unrolled, vectorized rows.
      const auto rows_of_width = [&](auto width) {
        constexpr int64_t kH = decltype(width)::value;
        at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
          std::vector<scalar_t> scratch(static_cast<size_t>(3 * H));
          std::vector<double> acc(static_cast<size_t>(2 * H));
          for (int64_t c = cb; c < ce; ++c) {
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t row = c * per; row < std::min(rows, (c + 1) * per); ++row) {
              const int64_t at = row * H;
              epilogue_backward_row<scalar_t, kH>(
                  H, xp + at, ap + at, mk + row * mask_stride, scale, go + at, gp, mp[row], rp[row], scratch.data(),
                  scratch.data() + H, scratch.data() + 2 * H, gx + at, ga + at, acc.data(),
                  acc.data() + H);
            }
            std::copy(acc.begin(), acc.end(), pp + c * 2 * H);
          }
        });
      };
      if (H == 32)
        rows_of_width(std::integral_constant<int64_t, 32>{});
      else
        rows_of_width(std::integral_constant<int64_t, 0>{});
    });
    const auto sums = partial.sum(0).to(x.scalar_type());
    return {at::gelu_backward(grad_a, z), grad_x, sums[0], sums[1], Tensor(), Tensor(), Tensor()};
  }
};

// --------------------------------------------------------------------- SAGE message
// out[s, u, :] (+)= sum over CSR row u of w(u, v) * src[s, v, off : off + H], where w is
// 1 / (row length) ("own") or 1 / (length of v's row in `other_ptr`) ("theirs").
template <typename T>
void gather_rows(const T* src, int64_t src_width, int64_t off, const int64_t* ptr,
                 const int64_t* idx, const int64_t* other_ptr, int64_t u, int64_t H, T* out) {
  const int64_t b = ptr[u], e = ptr[u + 1];
  if (b == e) return;
  if (!other_ptr) {
    const T w = T(1) / T(e - b);
    for (int64_t k = b; k < e; ++k) {
      const T* row = src + idx[k] * src_width + off;
      for (int64_t j = 0; j < H; ++j) out[j] += w * row[j];
    }
    return;
  }
  for (int64_t k = b; k < e; ++k) {
    const int64_t v = idx[k];
    const T w = T(1) / T(other_ptr[v + 1] - other_ptr[v]);
    const T* row = src + v * src_width + off;
    for (int64_t j = 0; j < H; ++j) out[j] += w * row[j];
  }
}

struct SageMessage : torch::autograd::Function<SageMessage> {
  static Tensor forward(AutogradContext* ctx, const Tensor& y_in, const Tensor& bias,
                        const Tensor& pptr, const Tensor& pidx, const Tensor& cptr,
                        const Tensor& cidx) {
    const auto y = y_in.contiguous();
    const int64_t S = y.size(0), N = y.size(1), H = y.size(2) / 3;
    TORCH_CHECK(y.size(2) == 3 * H && bias.numel() == H, "sage_message: y ", y.sizes(),
                " is not [S, N, 3H] for a bias of ", bias.numel());
    TORCH_CHECK(pptr.numel() == N + 1, "sage_message: adjacency of ", pptr.numel() - 1,
                " nodes for states of ", N);
    auto out = torch::empty({S, N, H}, y.options());
    AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "sage_message", [&] {
      const scalar_t* yp = y.data_ptr<scalar_t>();
      const auto bc = bias.contiguous();
      const scalar_t* bp = bc.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      const int64_t *pp = pptr.data_ptr<int64_t>(), *pi = pidx.data_ptr<int64_t>(),
                    *cp = cptr.data_ptr<int64_t>(), *ci = cidx.data_ptr<int64_t>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t s = r / N, u = r % N;
          const scalar_t* slab = yp + s * N * 3 * H;
          scalar_t* o = op + r * H;
          for (int64_t j = 0; j < H; ++j) o[j] = slab[u * 3 * H + j] + bp[j];
          gather_rows(slab, 3 * H, H, pp, pi, static_cast<const int64_t*>(nullptr), u, H, o);
          gather_rows(slab, 3 * H, 2 * H, cp, ci, static_cast<const int64_t*>(nullptr), u, H, o);
        }
      });
    });
    ctx->save_for_backward({pptr, pidx, cptr, cidx});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2);
    auto gy = torch::empty({S, N, 3 * H}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "sage_message_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* yp = gy.data_ptr<scalar_t>();
      const int64_t *pp = saved[0].data_ptr<int64_t>(), *pi = saved[1].data_ptr<int64_t>(),
                    *cp = saved[2].data_ptr<int64_t>(), *ci = saved[3].data_ptr<int64_t>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t s = r / N, v = r % N;
          const scalar_t* slab = gp + s * N * H;
          scalar_t* o = yp + r * 3 * H;
          std::copy(gp + r * H, gp + (r + 1) * H, o);
          std::fill(o + H, o + 3 * H, scalar_t(0));
          // v's producer-block input reached each consumer u of v with weight 1/|P(u)|,
          // its consumer-block input each producer w of v with weight 1/|C(w)|.
          gather_rows(slab, H, 0, cp, ci, pp, v, H, o + H);
          gather_rows(slab, H, 0, pp, pi, cp, v, H, o + 2 * H);
        }
      });
    });
    return {gy, g.sum(std::vector<int64_t>{0, 1}), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ------------------------------------------------------------------ segment mean, max
struct SegmentMeanMax : torch::autograd::Function<SegmentMeanMax> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& offsets) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    TORCH_CHECK(G >= 0 && off[0] == 0 && off[G] == N, "segment_mean_max: offsets do not cover ",
                N, " nodes");
    auto out = torch::zeros({S, G, 2 * H}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          if (n0 == n1) continue;
          scalar_t* mean = op + sg * 2 * H;
          scalar_t* max = mean + H;
          std::fill(max, max + H, -std::numeric_limits<scalar_t>::infinity());
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j) {
              mean[j] += row[j];
              max[j] = std::max(max[j], row[j]);
            }
          }
          for (int64_t j = 0; j < H; ++j) mean[j] /= scalar_t(n1 - n0);
        }
      });
    });
    ctx->save_for_backward({x, out, offsets});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &out = saved[1], &offsets = saved[2];
    const auto g = grads[0].contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    auto gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max_backward", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const scalar_t* op = out.data_ptr<scalar_t>();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* gxp = gx.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        std::vector<scalar_t> share(static_cast<size_t>(H));
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          const scalar_t* max = op + sg * 2 * H + H;
          const scalar_t* gmean = gp + sg * 2 * H;
          const scalar_t* gmax = gmean + H;
          std::fill(share.begin(), share.end(), scalar_t(0));
          for (int64_t n = n0; n < n1; ++n)
            for (int64_t j = 0; j < H; ++j) share[j] += xp[(s * N + n) * H + j] == max[j];
          for (int64_t j = 0; j < H; ++j) share[j] = gmax[j] / std::max(share[j], scalar_t(1));
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            scalar_t* grow = gxp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j)
              grow[j] = gmean[j] / scalar_t(n1 - n0) + (row[j] == max[j] ? share[j] : scalar_t(0));
          }
        }
      });
    });
    return {gx, Tensor()};
  }
};

}  // namespace

bool dropout_keeps(uint64_t seed, int64_t i, double p) { return keeps(seed, i, drop_threshold(p)); }

uint64_t draw_dropout_seed() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

torch::Tensor counter_dropout(const torch::Tensor& x, double p, uint64_t seed) {
  if (drop_threshold(p) == 0) return x;  // p below 2^-17 rounds to no dropout
  return CounterDropout::apply(x, p, static_cast<int64_t>(seed));
}

torch::Tensor gelu_dropout_add_layer_norm(const torch::Tensor& z, const torch::Tensor& x,
                                          const torch::Tensor& gamma, const torch::Tensor& beta,
                                          double eps, double p, uint64_t seed) {
  check_states(x, -1, "gelu_dropout_add_layer_norm: x");
  TORCH_CHECK(gamma.numel() == x.size(-1) && beta.numel() == x.size(-1),
              "gelu_dropout_add_layer_norm: LayerNorm weights of ", gamma.numel(),
              " for features of ", x.size(-1));
  return GeluDropoutAddLayerNorm::apply(z, x, gamma, beta, eps, p, static_cast<int64_t>(seed));
}

torch::Tensor sage_message(const torch::Tensor& y, const torch::Tensor& bias, const Adjacency& adj) {
  check_states(y, 3, "sage_message: y");
  return SageMessage::apply(y, bias, adj.producer_ptr, adj.producer_idx, adj.consumer_ptr,
                            adj.consumer_idx);
}

torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets) {
  check_states(x, 3, "segment_mean_max: x");
  return SegmentMeanMax::apply(x, torch::tensor(offsets, torch::kInt64));
}

}  // namespace tpuperf
