// sage_linear: the SAGE layer's linear map over [x, mean of producers, mean of consumers].
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_path.h"

namespace tpuperf {

namespace kernels {
namespace {

// ------------------------------------------------------------------------ CSR gathers
// out[:H] (+)= sum over CSR row u of w(u, v) * src[v * src_width + off : ... + H] (src: one
// slot's rows), where w is 1 / (row length) ("own") or 1 / (length of v's row in
// `other_ptr`) ("theirs").
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

// The vector path for this layer's states (float, H = 32 or 64), or null: LibTorch's BLAS
// calls on whole tensors, outside any parallel region.
const VectorPath* small_kernels(const Tensor& x) {
  const VectorPath* path = vector_path();
  return path && x.scalar_type() == torch::kFloat && (x.size(-1) == 32 || x.size(-1) == 64) ? path : nullptr;
}

// The SAGE layer's parameter gradients: g^T [x | means] (H x 3H, the weight's) and the
// column sums of g (the bias's), from g (rows x H), x (rows x H) and means (rows x 2H).
// Partial sums over a fixed split of the rows (at most kParamGradChunks parts: each part's
// H x 3H partial is written and read once more), added in order: the result does not
// depend on the number of threads.

std::pair<Tensor, Tensor> sage_param_grads(const Tensor& g, const Tensor& x, const Tensor& means) {
  const int64_t H = g.size(-1), rows = g.numel() / H;
  const auto g2 = g.reshape({rows, H}), x2 = x.reshape({rows, H}), m2 = means.reshape({rows, 2 * H});
  const VectorPath* path = small_kernels(g);
  if (!path) return {torch::cat({g2.t().mm(x2), g2.t().mm(m2)}, 1), g2.sum(0)};
  const int64_t per = std::max(kGrain, (rows + kParamGradChunks - 1) / kParamGradChunks);
  const int64_t chunks = std::max<int64_t>(1, (rows + per - 1) / per);
  auto px = torch::empty({chunks, H, H}, g.options()), pm = torch::empty({chunks, H, 2 * H}, g.options());
  auto pb = torch::empty({chunks, H}, g.options().dtype(torch::kDouble));  // long sums: double
  const float *gp = g2.data_ptr<float>(), *xp = x2.data_ptr<float>(), *mp = m2.data_ptr<float>();
  float *pxp = px.data_ptr<float>(), *pmp = pm.data_ptr<float>();
  double* pbp = pb.data_ptr<double>();
  at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = std::min(rows, c * per), r1 = std::min(rows, r0 + per);
      path->sage_param_grads(H, gp, xp, mp, r0, r1, pxp + c * H * H, pmp + c * H * 2 * H, pbp + c * H);
    }
  });
  return {torch::cat({px.sum(0), pm.sum(0)}, 1), pb.sum(0).to(g.scalar_type())};
}


// --------------------------------------------------------------------- SAGE linear
// z = linear(cat(x, mean of producers' x, mean of consumers' x)) per node, aggregating
// before the matmul: the means are of H-wide rows (CSR gathers), and the two matmuls
// (self, means) use the small-matrix kernel. The means are kept for weight's gradient.
struct SageLinear : torch::autograd::Function<SageLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& weight,
                        const Tensor& bias, const Tensor& pptr, const Tensor& pidx,
                        const Tensor& cptr, const Tensor& cidx) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2);
    TORCH_CHECK(weight.size(0) == H && weight.size(1) == 3 * H && bias.numel() == H,
                "sage_linear: weight ", weight.sizes(), " and bias ", bias.sizes(),
                " do not fit states ", x.sizes());
    TORCH_CHECK(weight.scalar_type() == x.scalar_type() && bias.scalar_type() == x.scalar_type(),
                "sage_linear: weight, bias and states differ in type");
    TORCH_CHECK(pptr.numel() == N + 1, "sage_linear: adjacency of ", pptr.numel() - 1,
                " nodes for states of ", N);
    // Each row of the means is zeroed just before its gathers add into it (in cache; a
    // zero-filled tensor would be one more pass over memory).
    auto means = torch::empty({S, N, 2 * H}, x.options());
    const auto wt = weight.t().contiguous();  // 3H x H: the self rows, then the means'
    const auto bias_row = bias.contiguous().reshape({1, H});
    const VectorPath* path = small_kernels(x);
    Tensor out;
    if (path) {
      out = torch::empty({S, N, H}, x.options());
      const CsrGraph graph{pptr.data_ptr<int64_t>(), pidx.data_ptr<int64_t>(), cptr.data_ptr<int64_t>(),
                           cidx.data_ptr<int64_t>()};
      const float *xp = x.data_ptr<float>(), *wp = wt.data_ptr<float>(), *bp = bias_row.data_ptr<float>();
      float *mp = means.data_ptr<float>(), *op = out.data_ptr<float>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        path->sage_forward(H, xp, N, graph, b, e, wp, bp, mp, op);
      });
    } else {
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sage_linear", [&] {
        const scalar_t* xp = x.data_ptr<scalar_t>();
        scalar_t* mp = means.data_ptr<scalar_t>();
        const int64_t *pp = pptr.data_ptr<int64_t>(), *pi = pidx.data_ptr<int64_t>(),
                      *cp = cptr.data_ptr<int64_t>(), *ci = cidx.data_ptr<int64_t>();
        at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const scalar_t* slab = xp + (r / N) * N * H;
            const int64_t u = r % N;
            std::fill(mp + r * 2 * H, mp + (r + 1) * 2 * H, scalar_t(0));
            gather_rows(slab, H, 0, pp, pi, static_cast<const int64_t*>(nullptr), u, H, mp + r * 2 * H);
            gather_rows(slab, H, 0, cp, ci, static_cast<const int64_t*>(nullptr), u, H, mp + r * 2 * H + H);
          }
        });
      });
      out = torch::addmm(bias_row, x.reshape({S * N, H}), wt.narrow(0, 0, H))
                .addmm_(means.reshape({S * N, 2 * H}), wt.narrow(0, H, 2 * H))
                .view({S, N, H});
    }
    ctx->save_for_backward({x, means, weight, pptr, pidx, cptr, cidx});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &means = saved[1], &weight = saved[2];
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2);
    // The gradient of each node's [x, means] row, then x's gradient gathers it back.
    auto grad_x = torch::empty_like(x);
    const VectorPath* path = small_kernels(g);
    if (path) {
      auto grad_in = torch::empty({S, N, 3 * H}, g.options());
      const auto w = weight.contiguous();  // H x 3H
      const float *gp = g.data_ptr<float>(), *wp = w.data_ptr<float>();
      float *ip = grad_in.data_ptr<float>(), *xp = grad_x.data_ptr<float>();
      at::parallel_for(0, S * N, 2 * kGrain, [&](int64_t b, int64_t e) { path->sage_grad_in(H, gp, wp, b, e, ip); });
      const CsrGraph graph{saved[3].data_ptr<int64_t>(), saved[4].data_ptr<int64_t>(), saved[5].data_ptr<int64_t>(),
                           saved[6].data_ptr<int64_t>()};
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) { path->sage_grad_x(H, ip, N, graph, b, e, xp); });
    } else {
      const auto grad_in = g.reshape({S * N, H}).mm(weight).view({S, N, 3 * H});
      AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "sage_linear_backward", [&] {
        const scalar_t* ip = grad_in.data_ptr<scalar_t>();
        scalar_t* xp = grad_x.data_ptr<scalar_t>();
        const int64_t *pp = saved[3].data_ptr<int64_t>(), *pi = saved[4].data_ptr<int64_t>(),
                      *cp = saved[5].data_ptr<int64_t>(), *ci = saved[6].data_ptr<int64_t>();
        at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const scalar_t* slab = ip + (r / N) * N * 3 * H;
            scalar_t* o = xp + r * H;
            for (int64_t j = 0; j < H; ++j) o[j] = ip[r * 3 * H + j];
            // v's row reached each consumer u of v through u's producer mean (weight
            // 1/|P(u)|), each producer w of v through w's consumer mean (1/|C(w)|).
            gather_rows(slab, 3 * H, H, cp, ci, pp, r % N, H, o);
            gather_rows(slab, 3 * H, 2 * H, pp, pi, cp, r % N, H, o);
          }
        });
      });
    }
    // bias has x's type (checked in forward).
    auto [grad_weight, grad_bias] = sage_param_grads(g, x, means);
    return {grad_x, grad_weight, grad_bias, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};


}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor sage_linear(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias, const Adjacency& adj) {
  check_states(x, 3, "sage_linear: x");
  return SageLinear::apply(x, weight, bias, adj.producer_ptr, adj.producer_idx, adj.consumer_ptr,
                           adj.consumer_idx);
}

}  // namespace tpuperf
