// add_gathered: per-node plus per-(slot, row) inputs, node[u] + table[s, index[u]].
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// out rows [b, e) of S x N (flat row r = s N + u) = node[u] + table[s, index[u]].
template <int kH, typename T>
void forward_rows(Width<kH> width, const T* node, const T* table, const int64_t* index, int64_t N, int64_t T_rows,
                  int64_t b, int64_t e, T* out) {
  const int64_t H = width.value();
  for_flat_rows(b, e, N, [&](int64_t r, int64_t s, int64_t u) {
    const T* t = table + (s * T_rows + index[u]) * H;
    if constexpr (kInRegisters<kH, T>) {
      FloatRow<kH> sum;
      sum.load(node + u * kH);
      sum.add(t);
      sum.store(out + r * kH);
    } else {
      for (int64_t j = 0; j < H; ++j) out[r * H + j] = node[u * H + j] + t[j];
    }
  });
}

// grad_table[s] (T x H, zeroed) += g[s, u] at row index[u], nodes in order: slots [b, e).
// Runs of nodes with one index (a graph's nodes, in order) are summed in registers and
// added to their row once, in the same order.
template <int kH, typename T>
void table_grad_slots(Width<kH> width, const T* g, const int64_t* index, int64_t N, int64_t T_rows, int64_t b,
                      int64_t e, T* grad_table) {
  const int64_t H = width.value();
  for (int64_t s = b; s < e; ++s) {
    T* slot_table = grad_table + s * T_rows * H;
    const T* slot_g = g + s * N * H;
    if constexpr (kInRegisters<kH, T>) {
      for (int64_t u = 0; u < N;) {
        const int64_t row = index[u];
        FloatRow<kH> sum;
        sum.load(slot_table + row * kH);
        for (; u < N && index[u] == row; ++u) sum.add(slot_g + u * kH);
        sum.store(slot_table + row * kH);
      }
    } else {
      for (int64_t u = 0; u < N; ++u) {
        T* __restrict o = slot_table + index[u] * H;
        const T* __restrict gu = slot_g + u * H;
        for (int64_t j = 0; j < H; ++j) o[j] += gu[j];
      }
    }
  }
}

// ------------------------------------------------------------------ add gathered rows
struct AddGathered : torch::autograd::Function<AddGathered> {
  static Tensor forward(AutogradContext* ctx, const Tensor& node_in, const Tensor& table_in,
                        const Tensor& index) {
    const auto node = node_in.contiguous(), table = table_in.contiguous();
    const int64_t N = node.size(0), H = node.size(1), S = table.size(0), T = table.size(1);
    TORCH_CHECK(table.size(2) == H && index.numel() == N && table.scalar_type() == node.scalar_type(),
                "add_gathered: node ", node.sizes(), ", table ", table.sizes(), " and index ",
                index.sizes(), " do not fit");
    const int64_t* ip = index.data_ptr<int64_t>();
    check_indices(ip, N, T, "add_gathered");
    auto out = torch::empty({S, N, H}, node.options());
    AT_DISPATCH_FLOATING_TYPES(node.scalar_type(), "add_gathered", [&] {
      const scalar_t* np = node.data_ptr<scalar_t>();
      const scalar_t* tp = table.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      with_width(H, [&](auto width) {
        at::parallel_for(0, S * N, kGrain,
                         [&](int64_t b, int64_t e) { forward_rows(width, np, tp, ip, N, T, b, e, op); });
      });
    });
    ctx->save_for_backward({index});
    ctx->saved_data["T"] = T;
    return out;
  }

  // Each output row is summed by one task in a fixed order: no dependence on threads.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto index = ctx->get_saved_variables()[0];
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2), T = ctx->saved_data["T"].toInt();
    auto grad_node = torch::empty({N, H}, g.options());
    auto grad_table = torch::zeros({S, T, H}, g.options());
    const int64_t* ip = index.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "add_gathered_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* np = grad_node.data_ptr<scalar_t>();
      scalar_t* tp = grad_table.data_ptr<scalar_t>();
      sum_over_slots(gp, S, N, H, np);
      with_width(H, [&](auto width) {
        at::parallel_for(0, S, 1, [&](int64_t b, int64_t e) { table_grad_slots(width, gp, ip, N, T, b, e, tp); });
      });
    });
    return {grad_node, grad_table, Tensor()};
  }
};


}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor add_gathered(const torch::Tensor& node, const torch::Tensor& table,
                           const torch::Tensor& index) {
  check_states(node, 2, "add_gathered: node");
  check_states(table, 3, "add_gathered: table");
  return AddGathered::apply(node, table, index.to(torch::kInt64).contiguous());
}

}  // namespace tpuperf
