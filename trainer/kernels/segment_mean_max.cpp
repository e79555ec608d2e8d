// segment_mean_max: the readout's per-graph mean and max pooling in one pass, of all of a
// graph's rows and, optionally, of some of them picked by index (the layout readout's
// configurable nodes) in the same pass.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// Mean and max over the rows row(0 .. n) of width H into mean and max (n > 0).
template <typename T, typename Row>
void pool_rows(int64_t n, int64_t H, const Row& row, T* mean, T* max) {
  std::fill(mean, mean + H, T(0));
  std::fill(max, max + H, -std::numeric_limits<T>::infinity());
  for (int64_t i = 0; i < n; ++i) {
    const T* r = row(i);
    for (int64_t j = 0; j < H; ++j) {
      mean[j] += r[j];
      max[j] = std::max(max[j], r[j]);
    }
  }
  for (int64_t j = 0; j < H; ++j) mean[j] /= T(n);
}

// pool_rows' backward: grad(i) = (or +=, when add) gmean / n, plus gmax split among the
// rows at the max (share: H scratch values).
template <typename T, typename Row, typename Grad>
void pool_rows_backward(int64_t n, int64_t H, const Row& row, const Grad& grad, bool add, const T* max,
                        const T* gmean, const T* gmax, T* share) {
  std::fill(share, share + H, T(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < H; ++j) share[j] += row(i)[j] == max[j];
  for (int64_t j = 0; j < H; ++j) share[j] = gmax[j] / std::max(share[j], T(1));
  for (int64_t i = 0; i < n; ++i) {
    const T* r = row(i);
    T* g = grad(i);
    for (int64_t j = 0; j < H; ++j) {
      const T d = gmean[j] / T(n) + (r[j] == max[j] ? share[j] : T(0));
      g[j] = add ? g[j] + d : d;
    }
  }
}

// ------------------------------------------------------------------ segment mean, max
// Per (slot, graph g): [mean, max] of rows offsets[g] .. offsets[g + 1], then, with picks,
// [mean, max] of rows picks[k] for k in pick_offsets[g] .. pick_offsets[g + 1], each pick a
// row of graph g (so that the tasks, one per (slot, graph), write apart in backward). No
// picks: pick_offsets empty (autograd's inputs must all be defined tensors).
struct SegmentMeanMax : torch::autograd::Function<SegmentMeanMax> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& offsets, const Tensor& pick_offsets,
                        const Tensor& picks) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const bool picked = pick_offsets.numel() > 0;
    const int64_t width = (picked ? 4 : 2) * H;
    const int64_t *off = offsets.data_ptr<int64_t>(), *poff = picked ? pick_offsets.data_ptr<int64_t>() : nullptr,
                  *pk = picked ? picks.data_ptr<int64_t>() : nullptr;
    TORCH_CHECK(G >= 0 && off[0] == 0 && off[G] == N, "segment_mean_max: offsets do not cover ", N, " nodes");
    // Rising offsets: each task (slot, graph) writes only its graph's rows in backward.
    for (int64_t g = 0; g < G; ++g) TORCH_CHECK(off[g] <= off[g + 1], "segment_mean_max: offsets decrease at ", g);
    if (picked) {
      TORCH_CHECK(pick_offsets.numel() == G + 1 && poff[0] == 0 && poff[G] == picks.numel(),
                  "segment_mean_max: pick offsets do not cover the ", picks.numel(), " picks of ", G, " graphs");
      for (int64_t g = 0; g < G; ++g) {
        TORCH_CHECK(poff[g] <= poff[g + 1], "segment_mean_max: pick offsets decrease at ", g);
        for (int64_t k = poff[g]; k < poff[g + 1]; ++k)
          TORCH_CHECK(pk[k] >= off[g] && pk[k] < off[g + 1], "segment_mean_max: pick ", pk[k], " is not a row of graph ", g);
      }
    }
    auto out = torch::zeros({S, G, width}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g];
          const scalar_t* slot = xp + s * N * H;
          scalar_t* o = op + sg * width;
          if (off[g + 1] > n0)
            pool_rows(off[g + 1] - n0, H, [&](int64_t i) { return slot + (n0 + i) * H; }, o, o + H);
          if (picked && poff[g + 1] > poff[g])
            pool_rows(poff[g + 1] - poff[g], H, [&](int64_t i) { return slot + pk[poff[g] + i] * H; }, o + 2 * H,
                      o + 3 * H);
        }
      });
    });
    ctx->save_for_backward({x, out, offsets, pick_offsets, picks});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &out = saved[1], &offsets = saved[2], &pick_offsets = saved[3], &picks = saved[4];
    const auto g = grads[0].contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1, width = out.size(2);
    const bool picked = pick_offsets.numel() > 0;
    const int64_t *off = offsets.data_ptr<int64_t>(), *poff = picked ? pick_offsets.data_ptr<int64_t>() : nullptr,
                  *pk = picked ? picks.data_ptr<int64_t>() : nullptr;
    // Every row is some graph's (the offsets cover all N), so the first pooling writes all
    // of gx; the picks' gradients are added to their rows.
    auto gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max_backward", [&] {
      const scalar_t *xp = x.data_ptr<scalar_t>(), *op = out.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>();
      scalar_t* gxp = gx.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        std::vector<scalar_t> share(static_cast<size_t>(H));
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, gr = sg % G, n0 = off[gr];
          const scalar_t* slot = xp + s * N * H;
          scalar_t* gslot = gxp + s * N * H;
          const scalar_t *o = op + sg * width, *go = gp + sg * width;
          pool_rows_backward(
              off[gr + 1] - n0, H, [&](int64_t i) { return slot + (n0 + i) * H; },
              [&](int64_t i) { return gslot + (n0 + i) * H; }, false, o + H, go, go + H, share.data());
          if (!picked || poff[gr + 1] == poff[gr]) continue;
          const int64_t* rows = pk + poff[gr];
          pool_rows_backward(
              poff[gr + 1] - poff[gr], H, [&](int64_t i) { return slot + rows[i] * H; },
              [&](int64_t i) { return gslot + rows[i] * H; }, true, o + 3 * H, go + 2 * H, go + 3 * H, share.data());
        }
      });
    });
    return {gx, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets) {
  check_states(x, 3, "segment_mean_max: x");
  const auto none = torch::empty({0}, torch::kInt64);
  return SegmentMeanMax::apply(x, torch::tensor(offsets, torch::kInt64), none, none);
}

torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets,
                               const std::vector<int64_t>& pick_offsets, const torch::Tensor& picks) {
  check_states(x, 3, "segment_mean_max: x");
  TORCH_CHECK(pick_offsets.size() == offsets.size(), "segment_mean_max: ", pick_offsets.size() - 1,
              " graphs of picks for ", offsets.size() - 1, " graphs");
  return SegmentMeanMax::apply(x, torch::tensor(offsets, torch::kInt64), torch::tensor(pick_offsets, torch::kInt64),
                               picks.to(torch::kInt64).contiguous());
}

}  // namespace tpuperf
