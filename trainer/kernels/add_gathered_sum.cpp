// add_gathered_sum: per-node plus weighted sums of per-(slot, row) inputs,
// node[u] + sum over k in [ptr[u], ptr[u + 1]) of weight[k] table[s, index[k]].
#include "trainer/kernels/fused_ops.h"

#include <vector>

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// out rows [b, e) of S x N (flat row r = s N + u) = node[u] + sum over k in
// [ptr[u], ptr[u + 1]) of weight[k] table[s, index[k]] (table: S x T rows), terms added in
// order of k.
template <int kH, typename T>
void forward_rows(Width<kH> width, const T* node, const T* table, const int64_t* ptr, const int64_t* index,
                  const T* weight, int64_t N, int64_t T_rows, int64_t b, int64_t e, T* out) {
  const int64_t H = width.value();
  for_flat_rows(b, e, N, [&](int64_t r, int64_t s, int64_t u) {
    const T* slot = table + s * T_rows * H;
    if constexpr (kInRegisters<kH, T>) {
      FloatRow<kH> sum;
      sum.load(node + u * kH);
      for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) sum.add_scaled(slot + index[k] * kH, weight[k]);
      sum.store(out + r * kH);
    } else {
      T* __restrict o = out + r * H;
      const T* __restrict n = node + u * H;
      for (int64_t j = 0; j < H; ++j) o[j] = n[j];
      for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
        const T* __restrict t = slot + index[k] * H;
        const T w = weight[k];
        for (int64_t j = 0; j < H; ++j) o[j] += w * t[j];
      }
    }
  });
}

// The entries by the table row they read (compressed rows over the T table rows): each
// row's entries k in increasing order, so in the order of their nodes.
struct EntriesByRow {
  std::vector<int64_t> ptr, entry, node;
};

EntriesByRow entries_by_row(const int64_t* ptr, const int64_t* index, int64_t N, int64_t T_rows) {
  const int64_t K = ptr[N];
  EntriesByRow by{std::vector<int64_t>(T_rows + 1, 0), std::vector<int64_t>(K), std::vector<int64_t>(K)};
  for (int64_t k = 0; k < K; ++k) ++by.ptr[index[k] + 1];
  for (int64_t t = 0; t < T_rows; ++t) by.ptr[t + 1] += by.ptr[t];
  std::vector<int64_t> next(by.ptr.begin(), by.ptr.end() - 1);  // each row's next free place
  for (int64_t u = 0; u < N; ++u)
    for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
      const int64_t place = next[index[k]]++;
      by.entry[place] = k, by.node[place] = u;
    }
  return by;
}

// grad_table (S x T x H) from the output's gradient g (S x N x H): per slot s, table row t
// sums weight[k] g[s, u] over the entries k that read it, in order of their nodes, from zero.
// Float rows of 32 and 64: each table row summed in registers and written once, tasks over
// the S x T rows (no zeroed table, no read-modify-write of rows in memory; E53). Other rows:
// g's rows scattered into a zeroed table, tasks over slots. The same sums either way.
template <int kH, typename T>
Tensor table_grad(Width<kH> width, const Tensor& g, const int64_t* ptr, const int64_t* index, const T* weight,
                  int64_t T_rows) {
  const int64_t S = g.size(0), N = g.size(1), H = width.value();
  const T* gp = g.data_ptr<T>();
  if constexpr (kInRegisters<kH, T>) {
    auto grad_table = torch::empty({S, T_rows, H}, g.options());
    T* tp = grad_table.data_ptr<T>();
    const EntriesByRow by = entries_by_row(ptr, index, N, T_rows);
    at::parallel_for(0, S * T_rows, kGrain, [&](int64_t b, int64_t e) {
      for_flat_rows(b, e, T_rows, [&](int64_t r, int64_t s, int64_t t) {
        const T* slot = gp + s * N * kH;
        FloatRow<kH> sum;
        sum.zero();
        for (int64_t i = by.ptr[t]; i < by.ptr[t + 1]; ++i) sum.add_scaled(slot + by.node[i] * kH, weight[by.entry[i]]);
        sum.store(tp + r * kH);
      });
    });
    return grad_table;
  } else {
    auto grad_table = torch::zeros({S, T_rows, H}, g.options());
    T* tp = grad_table.data_ptr<T>();
    at::parallel_for(0, S, 1, [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s)
        for (int64_t u = 0; u < N; ++u) {
          const T* __restrict gu = gp + (s * N + u) * H;
          for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
            T* __restrict o = tp + (s * T_rows + index[k]) * H;
            const T w = weight[k];
            for (int64_t j = 0; j < H; ++j) o[j] += w * gu[j];
          }
        }
    });
    return grad_table;
  }
}

struct AddGatheredSum : torch::autograd::Function<AddGatheredSum> {
  static Tensor forward(AutogradContext* ctx, const Tensor& node_in, const Tensor& table_in, const Tensor& ptr,
                        const Tensor& index, const Tensor& weight_in) {
    const auto node = node_in.contiguous(), table = table_in.contiguous();
    const auto weight = weight_in.to(node.scalar_type()).contiguous();
    const int64_t N = node.size(0), H = node.size(1), S = table.size(0), T = table.size(1);
    TORCH_CHECK(table.size(2) == H && table.scalar_type() == node.scalar_type() && ptr.numel() == N + 1 &&
                    weight.numel() == index.numel(),
                "add_gathered_sum: node ", node.sizes(), ", table ", table.sizes(), ", ptr ", ptr.sizes(),
                ", index ", index.sizes(), " and weight ", weight.sizes(), " do not fit");
    const int64_t *pp = ptr.data_ptr<int64_t>(), *ip = index.data_ptr<int64_t>();
    TORCH_CHECK(pp[0] == 0 && pp[N] == index.numel(), "add_gathered_sum: ptr must run from 0 to ", index.numel());
    for (int64_t u = 0; u < N; ++u) TORCH_CHECK(pp[u] <= pp[u + 1], "add_gathered_sum: ptr decreases at ", u);
    check_indices(ip, index.numel(), T, "add_gathered_sum");
    auto out = torch::empty({S, N, H}, node.options());
    AT_DISPATCH_FLOATING_TYPES(node.scalar_type(), "add_gathered_sum", [&] {
      const scalar_t *np = node.data_ptr<scalar_t>(), *tp = table.data_ptr<scalar_t>(),
                     *wp = weight.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      with_width(H, [&](auto width) {
        at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
          forward_rows(width, np, tp, pp, ip, wp, N, T, b, e, op);
        });
      });
    });
    ctx->save_for_backward({ptr, index, weight});
    ctx->saved_data["T"] = T;
    return out;
  }

  // grad_node sums the slots in order, and each row of grad_table is summed by one task: no
  // dependence on threads.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &ptr = saved[0], &index = saved[1], &weight = saved[2];
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2), T = ctx->saved_data["T"].toInt();
    auto grad_node = torch::empty({N, H}, g.options());
    Tensor grad_table;
    const int64_t *pp = ptr.data_ptr<int64_t>(), *ip = index.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "add_gathered_sum_backward", [&] {
      const scalar_t* wp = weight.data_ptr<scalar_t>();
      sum_over_slots(g.data_ptr<scalar_t>(), S, N, H, grad_node.data_ptr<scalar_t>());
      with_width(H, [&](auto width) { grad_table = table_grad(width, g, pp, ip, wp, T); });
    });
    return {grad_node, grad_table, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor add_gathered_sum(const torch::Tensor& node, const torch::Tensor& table, const torch::Tensor& ptr,
                               const torch::Tensor& index, const torch::Tensor& weight) {
  check_states(node, 2, "add_gathered_sum: node");
  check_states(table, 3, "add_gathered_sum: table");
  TORCH_CHECK(ptr.dim() == 1 && index.dim() == 1 && weight.dim() == 1,
              "add_gathered_sum: ptr, index and weight must be vectors, got ", ptr.sizes(), ", ", index.sizes(),
              " and ", weight.sizes());
  // The weights are constants of the graph: no gradient flows to them.
  TORCH_CHECK(!weight.requires_grad(), "add_gathered_sum: weight must not require grad");
  return AddGatheredSum::apply(node, table, ptr.to(torch::kInt64).contiguous(), index.to(torch::kInt64).contiguous(),
                               weight);
}

}  // namespace tpuperf
