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
  int64_t s = b / N, u = b % N;  // one division per task, not one per row
  for (int64_t r = b; r < e; ++r) {
    const T* slot = table + s * T_rows * H;
    if constexpr (kH > 0 && std::is_same_v<T, float>) {
      FloatRow<kH> sum;
      sum.load(node + u * kH);
      for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) sum.add_scaled(slot + index[k] * kH, weight[k]);
      sum.store(out + r * kH);
      if (++u == N) u = 0, ++s;
      continue;
    }
    T* __restrict o = out + r * H;
    const T* __restrict n = node + u * H;
    for (int64_t j = 0; j < H; ++j) o[j] = n[j];
    for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
      const T* __restrict t = slot + index[k] * H;
      const T w = weight[k];
      for (int64_t j = 0; j < H; ++j) o[j] += w * t[j];
    }
    if (++u == N) u = 0, ++s;
  }
}

// grad_table[s] (T x H, zeroed) += weight[k] g[s, u] for every node u and k in
// [ptr[u], ptr[u + 1]), in order of u and k: slots [b, e).
template <int kH, typename T>
void table_grad_slots(Width<kH> width, const T* g, const int64_t* ptr, const int64_t* index, const T* weight,
                      int64_t N, int64_t T_rows, int64_t b, int64_t e, T* grad_table) {
  const int64_t H = width.value();
  for (int64_t s = b; s < e; ++s)
    for (int64_t u = 0; u < N; ++u) {
      const T* __restrict gu = g + (s * N + u) * H;
      for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
        T* __restrict o = grad_table + (s * T_rows + index[k]) * H;
        const T w = weight[k];
        for (int64_t j = 0; j < H; ++j) o[j] += w * gu[j];
      }
    }
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
  std::vector<int64_t> fill(by.ptr.begin(), by.ptr.end() - 1);
  for (int64_t u = 0; u < N; ++u)
    for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k) {
      const int64_t at = fill[index[k]]++;
      by.entry[at] = k, by.node[at] = u;
    }
  return by;
}

// Float rows of kH: grad_table rows [b, e) of S x T (flat row r = s T + t) summed in
// registers from zero over the entries that read table row t, in order of their nodes: the
// sums table_grad_slots adds into a zeroed table, written once (no zeroing pass, no
// read-modify-write of rows in memory).
template <int kH>
void table_grad_rows(const float* g, const EntriesByRow& by, const float* weight, int64_t N, int64_t T_rows,
                     int64_t b, int64_t e, float* grad_table) {
  int64_t s = b / T_rows, t = b % T_rows;
  for (int64_t r = b; r < e; ++r) {
    const float* slot = g + s * N * kH;
    FloatRow<kH> sum;
    sum.zero();
    for (int64_t i = by.ptr[t]; i < by.ptr[t + 1]; ++i) sum.add_scaled(slot + by.node[i] * kH, weight[by.entry[i]]);
    sum.store(grad_table + r * kH);
    if (++t == T_rows) t = 0, ++s;
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

  // grad_node sums the slots in order; each row of grad_table is summed by one task: no
  // dependence on threads.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &ptr = saved[0], &index = saved[1], &weight = saved[2];
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2), T = ctx->saved_data["T"].toInt();
    auto grad_node = torch::empty({N, H}, g.options());
    const bool in_registers = g.scalar_type() == torch::kFloat && (H == 32 || H == 64);
    auto grad_table = in_registers ? torch::empty({S, T, H}, g.options()) : torch::zeros({S, T, H}, g.options());
    const int64_t *pp = ptr.data_ptr<int64_t>(), *ip = index.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "add_gathered_sum_backward", [&] {
      const scalar_t *gp = g.data_ptr<scalar_t>(), *wp = weight.data_ptr<scalar_t>();
      scalar_t *np = grad_node.data_ptr<scalar_t>(), *tp = grad_table.data_ptr<scalar_t>();
      sum_over_slots(gp, S, N, H, np);
      if constexpr (std::is_same_v<scalar_t, float>) {
        if (in_registers) {
          const EntriesByRow by = entries_by_row(pp, ip, N, T);
          with_width(H, [&](auto width) {
            if constexpr (decltype(width)::kWidth > 0)
              at::parallel_for(0, S * T, kGrain, [&](int64_t b, int64_t e) {
                table_grad_rows<decltype(width)::kWidth>(gp, by, wp, N, T, b, e, tp);
              });
          });
          return;
        }
      }
      with_width(H, [&](auto width) {
        at::parallel_for(0, S, 1, [&](int64_t b, int64_t e) { table_grad_slots(width, gp, pp, ip, wp, N, T, b, e, tp); });
      });
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
