// sage_linear: the SAGE layer's linear map over [x, mean of producers, mean of consumers].
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/block_passes.h"

namespace tpuperf {

namespace kernels {

// ------------------------------------------------------ the passes sage_block shares
void check_sage_operands(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& pptr) {
  const int64_t N = x.size(1), H = x.size(2);
  TORCH_CHECK(weight.size(0) == H && weight.size(1) == 3 * H && bias.numel() == H, "sage_linear: weight ",
              weight.sizes(), " and bias ", bias.sizes(), " do not fit states ", x.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type() && bias.scalar_type() == x.scalar_type(),
              "sage_linear: weight, bias and states differ in type");
  TORCH_CHECK(pptr.numel() == N + 1, "sage_linear: adjacency of ", pptr.numel() - 1, " nodes for states of ", N);
}

// Other states take LibTorch's BLAS calls on whole tensors, outside any parallel region.
const VectorPath* sage_path(const Tensor& x) {
  const VectorPath* path = vector_path();
  return path && x.scalar_type() == torch::kFloat && (x.size(-1) == 32 || x.size(-1) == 64) ? path : nullptr;
}

CsrGraph csr_graph(const Tensor& pptr, const Tensor& pidx, const Tensor& cptr, const Tensor& cidx) {
  return {pptr.data_ptr<int64_t>(), pidx.data_ptr<int64_t>(), cptr.data_ptr<int64_t>(), cidx.data_ptr<int64_t>()};
}

Tensor sage_forward_rows(const VectorPath& path, const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const CsrGraph& graph) {
  const int64_t N = x.size(1), H = x.size(2);
  const auto wt = weight.t().contiguous();  // 3H x H: the self rows, then the means'
  const auto b = bias.contiguous();
  auto out = torch::empty_like(x);
  const float *xp = x.data_ptr<float>(), *wp = wt.data_ptr<float>(), *bp = b.data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, x.numel() / H, kGrain,
                   [&](int64_t rb, int64_t re) { path.sage_forward(H, xp, N, graph, rb, re, wp, bp, op); });
  return out;
}

// The vector path's backward over a fixed split of the rows (at most kWeightGradientParts
// parts; each part's 3H x H partial of the weight's gradient is written and read once more),
// the partials added in order: the result does not depend on the number of threads, and at
// most kWeightGradientParts threads work on it.
std::tuple<Tensor, Tensor, Tensor> sage_backward_rows(const VectorPath& path, const Tensor& g, const Tensor& x,
                                                      const Tensor& weight, const CsrGraph& graph,
                                                      const Tensor& also_x) {
  const int64_t N = g.size(1), H = g.size(2), rows = g.numel() / H;
  // The weight's three H x H blocks stacked (3H x H): x's gradient is [g, grad means] @ ws.
  const auto ws = weight.reshape({H, 3, H}).transpose(0, 1).reshape({3 * H, H}).contiguous();
  const RowParts parts = row_parts(rows, kWeightGradientParts);
  auto grad_x = torch::empty_like(x);
  auto gws = torch::empty({parts.count, 3 * H, H}, g.options());
  auto gb = torch::empty({parts.count, H}, g.options().dtype(torch::kDouble));  // long sums: double
  const float *gp = g.data_ptr<float>(), *xp = x.data_ptr<float>(), *wp = ws.data_ptr<float>();
  const float* ap = also_x.defined() ? also_x.data_ptr<float>() : nullptr;
  float *gxp = grad_x.data_ptr<float>(), *gwp = gws.data_ptr<float>();
  double* gbp = gb.data_ptr<double>();
  for_each_part(parts, rows, [&](int64_t c, int64_t r0, int64_t r1) {
    path.sage_backward(H, gp, xp, N, graph, r0, r1, wp, ap, gxp, gwp + c * 3 * H * H, gbp + c * H);
  });
  // gws's blocks back to the weight's layout (H x 3H).
  auto grad_w = gws.sum(0).reshape({3, H, H}).transpose(0, 1).reshape({H, 3 * H});
  return {grad_x, grad_w, gb.sum(0).to(g.scalar_type())};
}

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

// LibTorch's backward (no vector path): the gradient of each node's [x, means] row, then
// x's gradient gathers it back; the weight's from the means the forward kept.
std::tuple<Tensor, Tensor, Tensor> plain_backward(const Tensor& g, const Tensor& x, const Tensor& means,
                                                  const Tensor& weight, const variable_list& saved) {
  const int64_t S = g.size(0), N = g.size(1), H = g.size(2);
  auto grad_x = torch::empty_like(x);
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
  const auto g2 = g.reshape({S * N, H});
  auto grad_w = torch::cat({g2.t().mm(x.reshape({S * N, H})), g2.t().mm(means.reshape({S * N, 2 * H}))}, 1);
  return {grad_x, grad_w, g2.sum(0)};
}

// --------------------------------------------------------------------- SAGE linear
// z = linear(cat(x, mean of producers' x, mean of consumers' x)) per node, aggregating
// before the matmul: the means are of H-wide rows (CSR gathers), and the two matmuls
// (self, means) use the small-matrix kernel. LibTorch's form keeps the means for the
// weight's gradient; the vector path does not need them (vector_path.h).
struct SageLinear : torch::autograd::Function<SageLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& weight,
                        const Tensor& bias, const Tensor& pptr, const Tensor& pidx,
                        const Tensor& cptr, const Tensor& cidx) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2);
    check_sage_operands(x, weight, bias, pptr);
    const VectorPath* path = sage_path(x);
    Tensor out, means;
    if (path) {
      out = sage_forward_rows(*path, x, weight, bias, csr_graph(pptr, pidx, cptr, cidx));
    } else {
      // Each row of the means is zeroed just before its gathers add into it (in cache; a
      // zero-filled tensor would be one more pass over memory).
      means = torch::empty({S, N, 2 * H}, x.options());
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
      const auto wt = weight.t().contiguous();  // 3H x H: the self rows, then the means'
      out = torch::addmm(bias.reshape({1, H}), x.reshape({S * N, H}), wt.narrow(0, 0, H))
                .addmm_(means.reshape({S * N, 2 * H}), wt.narrow(0, H, 2 * H))
                .view({S, N, H});
    }
    // means: undefined on the vector path (an empty saved slot).
    ctx->save_for_backward({x, means, weight, pptr, pidx, cptr, cidx});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &means = saved[1], &weight = saved[2];
    const auto g = grads[0].contiguous();
    // The path the forward took: the vector path kept no means.
    const VectorPath* path = means.defined() ? nullptr : vector_path();
    TORCH_CHECK(means.defined() || path, "sage_linear: the vector path was turned off between forward and backward");
    Tensor grad_x, grad_w, grad_b;
    if (path) {
      std::tie(grad_x, grad_w, grad_b) = sage_backward_rows(*path, g, x, weight.contiguous(),
                                                            csr_graph(saved[3], saved[4], saved[5], saved[6]), Tensor());
    } else {
      std::tie(grad_x, grad_w, grad_b) = plain_backward(g, x, means, weight, saved);
    }
    // bias has x's type (checked in forward).
    return {grad_x, grad_w, grad_b, Tensor(), Tensor(), Tensor(), Tensor()};
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
