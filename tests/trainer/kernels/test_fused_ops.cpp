// The fused kernels of trainer/fused_ops.h against the unfused LibTorch compositions they
// replace (values and gradients, float and double), against central finite differences in
// double, and the counter-based dropout mask: keep rate, replay from the seed, and backward
// using the forward's mask. ctest runs every test once per vector path
// (TPUPERF_TEST_VECTOR_ISA=avx512, avx2, none: trainer/kernels/vector_path.h); a path this
// CPU cannot run is skipped.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "common/base/error.h"
#include "trainer/kernels/fused_ops.h"
#include "trainer/kernels/vector_path.h"
#include "trainer/models/graph_ops.h"

namespace tpuperf {
namespace {

namespace F = torch::nn::functional;
using Fn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

using kernels::VectorIsa;

// The path this run of the tests is for: TPUPERF_TEST_VECTOR_ISA's, else the CPU's best.
VectorIsa tested_isa() {
  const char* name = std::getenv("TPUPERF_TEST_VECTOR_ISA");
  return name ? kernels::parse_vector_isa(name) : kernels::best_vector_isa();
}

bool cpu_runs(VectorIsa isa) { return static_cast<int>(isa) <= static_cast<int>(kernels::best_vector_isa()); }

class FusedOps : public ::testing::Test {
 protected:
  void SetUp() override {
    const VectorIsa isa = tested_isa();
    if (!cpu_runs(isa)) GTEST_SKIP() << "this CPU cannot run the " << kernels::vector_isa_name(isa) << " path";
    kernels::use_vector_isa(isa);
    torch::set_num_threads(1);
    torch::manual_seed(0);
  }
};

// ------------------------------------------------------------------------ vector paths
TEST_F(FusedOps, TheKernelsRunThePathAskedFor) {
  const kernels::VectorPath* path = kernels::vector_path();
  if (tested_isa() == VectorIsa::kNone) {
    EXPECT_EQ(path, nullptr);
    return;
  }
  ASSERT_NE(path, nullptr);
  EXPECT_EQ(path->isa, tested_isa());
  EXPECT_EQ(path->name, kernels::vector_isa_name(tested_isa()));
  EXPECT_NE(kernels::describe_vector_path().find("forced"), std::string::npos) << kernels::describe_vector_path();
}

// Under an emulated CPU (ctest's unit.test_fused_ops.qemu_haswell) the CPU check must see
// what the emulator offers, not the host.
TEST(VectorPath, TheBestPathIsTheCpusOwn) {
  const char* expected = std::getenv("TPUPERF_TEST_EXPECT_BEST");
  if (!expected) GTEST_SKIP() << "TPUPERF_TEST_EXPECT_BEST not set";
  EXPECT_EQ(kernels::vector_isa_name(kernels::best_vector_isa()), expected);
}

TEST(VectorPath, NamesParseBackAndOthersAreErrors) {
  for (VectorIsa isa : {VectorIsa::kNone, VectorIsa::kAvx2, VectorIsa::kAvx512})
    EXPECT_EQ(kernels::parse_vector_isa(kernels::vector_isa_name(isa)), isa);
  try {
    kernels::parse_vector_isa("sse4");
    FAIL() << "sse4 parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sse4'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("avx512, avx2 or none"), std::string::npos) << e.what();
  }
}

// Every path down from the CPU's best can be forced; one above it is refused (under
// `qemu-x86_64 -cpu Haswell`, ctest's unit.test_fused_ops.qemu_haswell, that is avx512).
TEST(VectorPath, APathTheCpuLacksIsRefused) {
  const VectorIsa best = kernels::best_vector_isa();
  for (VectorIsa isa : {VectorIsa::kNone, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (cpu_runs(isa)) {
      EXPECT_NO_THROW(kernels::use_vector_isa(isa)) << kernels::vector_isa_name(isa);
    } else {
      EXPECT_THROW(kernels::use_vector_isa(isa), Error) << kernels::vector_isa_name(isa);
    }
  }
  kernels::use_vector_isa(best);
}

// A DAG with repeated edges and isolated nodes (u consumes v, u > v).
GraphEdges random_edges(std::mt19937_64& rng, int64_t n, int64_t m) {
  std::vector<int64_t> consumer, producer;
  for (int64_t e = 0; e < m; ++e) {
    const int64_t u = 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n - 3));
    consumer.push_back(u);
    producer.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(u)));
  }
  consumer.push_back(consumer.back());  // a repeated edge
  producer.push_back(producer.back());
  return {torch::tensor(consumer), torch::tensor(producer)};
}

// Runs f on leaf copies of inputs; returns its value and the gradients of sum(w * f).
std::vector<torch::Tensor> value_and_grads(const Fn& f, const std::vector<torch::Tensor>& inputs,
                                           const torch::Tensor& w) {
  std::vector<torch::Tensor> leaves;
  for (const auto& t : inputs) leaves.push_back(t.detach().clone().set_requires_grad(true));
  const auto out = f(leaves);
  (out * w).sum().backward();
  std::vector<torch::Tensor> result = {out.detach()};
  for (const auto& l : leaves) result.push_back(l.grad());
  return result;
}

// Fused and reference agree in value and in the gradient of every input. atol is relative to
// the tensor's largest magnitude when that is above 1: a weight gradient sums hundreds of
// products, and an entry that cancels to near 0 keeps the rounding of its large terms, which
// differs with the BLAS's summation order (4e-5 in float on an AVX-512 Xeon, where 1e-5 held
// on an EPYC). A wrong or missing term still moves it by the scale of the terms.
void expect_same(const Fn& fused, const Fn& reference, const std::vector<torch::Tensor>& inputs,
                 double rtol, double atol) {
  torch::NoGradGuard off;
  const auto w = torch::randn_like(reference(inputs));
  torch::AutoGradMode on(true);
  const auto a = value_and_grads(fused, inputs, w), b = value_and_grads(reference, inputs, w);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].sizes(), b[i].sizes()) << (i == 0 ? "value" : "gradient of input " + std::to_string(i - 1));
    const double scale = std::max(1.0, b[i].abs().max().item<double>());
    EXPECT_TRUE(torch::allclose(a[i], b[i], rtol, atol * scale))
        << (i == 0 ? "value" : "gradient of input " + std::to_string(i - 1)) << ": max abs diff "
        << (a[i] - b[i]).abs().max().item<double>() << ", largest magnitude " << scale;
  }
}

// Autograd gradients of sum(w * f) against central differences, every input, in double.
void expect_finite_differences(const Fn& f, const std::vector<torch::Tensor>& inputs) {
  const auto w = torch::randn_like(f(inputs));
  const auto analytic = value_and_grads(f, inputs, w);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> x;
  for (const auto& t : inputs) x.push_back(t.detach().clone());
  const double eps = 1e-6;
  for (size_t k = 0; k < x.size(); ++k) {
    auto flat = x[k].view({-1});
    auto numeric = torch::zeros_like(flat);
    for (int64_t i = 0; i < flat.size(0); ++i) {
      const double keep = flat[i].item<double>();
      flat[i] = keep + eps;
      const double up = (f(x) * w).sum().item<double>();
      flat[i] = keep - eps;
      const double down = (f(x) * w).sum().item<double>();
      flat[i] = keep;
      numeric[i] = (up - down) / (2 * eps);
    }
    const auto got = analytic[k + 1].reshape({-1});
    EXPECT_TRUE(torch::allclose(got, numeric, 1e-5, 1e-7))
        << "input " << k << ": max abs diff " << (got - numeric).abs().max().item<double>();
  }
}

// ------------------------------------------------------------------------- sage_linear
// x, W (H x 3H), b -> the fused layer and the plain linear(cat(x, means)).
Fn fused_sage(const Adjacency& adj) {
  return [adj](const std::vector<torch::Tensor>& in) { return sage_linear(in[0], in[1], in[2], adj); };
}

Fn plain_sage(const GraphEdges& edges) {
  return [edges](const std::vector<torch::Tensor>& in) {
    const auto& x = in[0];
    return F::linear(
        torch::cat({x, aggregate_from_producers(x, edges), aggregate_from_consumers(x, edges)}, -1),
        in[1], in[2]);
  };
}

// H = 32 and 64 in float take the vector kernels (blocks of rows, then a tail of single
// rows: n odd with S = 1 leaves one), the rest LibTorch's matmul.
TEST_F(FusedOps, SageLinearMatchesLinearOfConcatenatedMeans) {
  std::mt19937_64 rng(1);
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    // Trial 5 has more rows (366) than 8 backward parts of 32: parts of 46 rows, the last
    // one shorter. Trials 6 and 7 are trials 0 and 1 at H = 64. Trials 8 and 9 (H = 32, 64)
    // have 1085 rows (5 slots of 217): parts of 136, most starting inside a slot, each in
    // blocks of kMeansBlockRows rows (sage_rows.cpp: 32 or 64) and a shorter one.
    for (int trial = 0; trial < 10; ++trial) {
      const bool many = trial >= 8;
      const int64_t n = many ? 217 : trial % 6 == 5 ? 61 : 20 + 7 * (trial % 6),
                    S = many ? 5 : trial % 6 == 4 ? 1 : 1 + trial % 6,
                    H = trial < 2 ? 8 : trial < 6 || trial == 8 ? 32 : 64;
      const auto edges = random_edges(rng, n, 3 * n);
      const auto adj = Adjacency::build(edges, n);
      const auto opts = torch::TensorOptions().dtype(dtype);
      expect_same(fused_sage(adj), plain_sage(edges),
                  {torch::randn({S, n, H}, opts), torch::randn({H, 3 * H}, opts) / std::sqrt(3.0 * H),
                   torch::randn({H}, opts)},
                  1e-5, 1e-5);
    }
  }
}

// The backward's parts are a fixed split of the rows: the same bits with 1 and 3 threads
// (3 threads share 8 parts unevenly).
TEST_F(FusedOps, SageLinearDoesNotDependOnTheThreadCount) {
  std::mt19937_64 rng(3);
  const int64_t n = 217, S = 5;
  const auto edges = random_edges(rng, n, 3 * n);
  const auto adj = Adjacency::build(edges, n);
  for (const int64_t H : {32, 64}) {
    const std::vector<torch::Tensor> in{torch::randn({S, n, H}), torch::randn({H, 3 * H}) / std::sqrt(3.0 * H),
                                        torch::randn({H})};
    const auto w = torch::randn({S, n, H});
    torch::set_num_threads(3);
    const auto three = value_and_grads(fused_sage(adj), in, w);
    torch::set_num_threads(1);
    const auto one = value_and_grads(fused_sage(adj), in, w);
    for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], three[i])) << "H " << H << ", output " << i;
  }
}

TEST_F(FusedOps, SageLinearGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(2);
  const int64_t n = 9, H = 3;
  const auto edges = random_edges(rng, n, 14);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  expect_finite_differences(fused_sage(Adjacency::build(edges, n)),
                            {torch::randn({2, n, H}, opts), torch::randn({H, 3 * H}, opts),
                             torch::randn({H}, opts)});
}

TEST_F(FusedOps, AdjacencyRejectsOutOfRangeNodes) {
  const GraphEdges edges{torch::tensor(std::vector<int64_t>{1, 5}), torch::tensor(std::vector<int64_t>{0, 1})};
  EXPECT_THROW(Adjacency::build(edges, 5), c10::Error);
  const auto states = torch::randn({1, 4, 2});
  EXPECT_THROW(sage_linear(states, torch::zeros({2, 6}), torch::zeros({2}), Adjacency::build(edges, 6)),
               c10::Error);
}

// ------------------------------------------------------------------------ add_gathered
TEST_F(FusedOps, AddGatheredMatchesBroadcastIndexSelect) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const auto opts = torch::TensorOptions().dtype(dtype);
    // Row 3 unused; row 2 read by a run of nodes (4, 5: one sum in registers in backward at
    // H = 32 and 64) and by others apart.
    const auto index = torch::tensor(std::vector<int64_t>{2, 0, 2, 1, 2, 2, 0});
    const Fn fused = [&](const std::vector<torch::Tensor>& in) { return add_gathered(in[0], in[1], index); };
    const Fn plain = [&](const std::vector<torch::Tensor>& in) {
      return in[0].unsqueeze(0) + in[1].index_select(1, index);
    };
    for (int64_t H : {5, 32, 64})
      expect_same(fused, plain, {torch::randn({7, H}, opts), torch::randn({3, 4, H}, opts)}, 1e-6, 1e-6);
  }
  EXPECT_THROW(add_gathered(torch::randn({2, 5}), torch::randn({3, 4, 5}), torch::tensor({0, 4})),
               c10::Error);
}

// -------------------------------------------------------------------- add_gathered_sum
// Against index_select and index_add: nodes with no rows (0, 4), one row, several rows and
// a table row read twice by one node (row 1 by node 2) and by several nodes (row 0); table
// row 3 read by none; at the widths compiled apart (32, 64) and another.
TEST_F(FusedOps, AddGatheredSumMatchesIndexSelectAndIndexAdd) {
  const auto ptr = torch::tensor(std::vector<int64_t>{0, 0, 1, 4, 6, 6});
  const auto index = torch::tensor(std::vector<int64_t>{2, 1, 0, 1, 0, 4});
  const auto node_of = torch::tensor(std::vector<int64_t>{1, 2, 2, 2, 3, 3});  // each entry's node
  const auto weight = torch::tensor(std::vector<double>{1.0, 0.5, 0.25, 0.5, 1.0, 1.0 / 3});
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const auto opts = torch::TensorOptions().dtype(dtype);
    const Fn fused = [&](const std::vector<torch::Tensor>& in) {
      return add_gathered_sum(in[0], in[1], ptr, index, weight);
    };
    const Fn plain = [&](const std::vector<torch::Tensor>& in) {
      const auto rows = in[1].index_select(1, index) * weight.to(dtype).view({1, -1, 1});
      return in[0].unsqueeze(0) + torch::zeros({in[1].size(0), 5, in[0].size(1)}, opts).index_add(1, node_of, rows);
    };
    // H = 32 and 64: float rows summed in registers (kernel_base.h FloatRow); 7: any width.
    for (int64_t H : {7, 32, 64})
      expect_same(fused, plain, {torch::randn({5, H}, opts), torch::randn({3, 5, H}, opts)}, 1e-6, 1e-6);
  }
  expect_finite_differences([&](const std::vector<torch::Tensor>& in) {
    return add_gathered_sum(in[0], in[1], ptr, index, weight);
  }, {torch::randn({5, 2}, torch::kFloat64), torch::randn({2, 5, 2}, torch::kFloat64)});
  const auto node = torch::randn({5, 7}), table = torch::randn({3, 5, 7});
  const auto none = torch::zeros({0}, torch::kInt64);  // no rows at all: node's rows in every slot
  EXPECT_TRUE(torch::equal(add_gathered_sum(node, table, torch::zeros({6}, torch::kInt64), none, torch::zeros({0})),
                           node.unsqueeze(0).expand({3, 5, 7})));
  EXPECT_THROW(add_gathered_sum(node, table, ptr, index, weight.clone().requires_grad_()), c10::Error);
  EXPECT_THROW(add_gathered_sum(node, table, ptr, torch::tensor(std::vector<int64_t>{2, 1, 0, 1, 0, 5}), weight),
               c10::Error);  // a table row outside [0, 5)
  EXPECT_THROW(add_gathered_sum(node, table, ptr.narrow(0, 0, 5), index, weight), c10::Error);  // N offsets
  EXPECT_THROW(add_gathered_sum(node, table, torch::tensor(std::vector<int64_t>{0, 2, 1, 4, 6, 6}), index, weight),
               c10::Error);  // decreasing offsets
}

// ----------------------------------------------------------------------- embedding_sum
// Against LibTorch's EmbeddingBag in sum mode (the plain path), with rows that pick one
// table row several times, rows enough for several backward chunks (300 > 32) and a table
// row nobody picks; the gradient also against finite differences.
TEST_F(FusedOps, EmbeddingSumMatchesEmbeddingBagSum) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> picks;
  for (int i = 0; i < 300 * 18; ++i) picks.push_back(static_cast<int64_t>(rng() % 125));  // row 125 unused
  const auto values = torch::tensor(picks).view({300, 18});
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const auto opts = torch::TensorOptions().dtype(dtype);
    const Fn fused = [&](const std::vector<torch::Tensor>& in) { return embedding_sum(in[0], values); };
    const Fn plain = [&](const std::vector<torch::Tensor>& in) {
      return F::embedding_bag(values, in[0], F::EmbeddingBagFuncOptions().mode(torch::kSum));
    };
    for (int64_t H : {64, 32, 5}) expect_same(fused, plain, {torch::randn({126, H}, opts)}, 1e-5, 1e-5);
  }
  const auto few = torch::tensor(std::vector<int64_t>{0, 2, 2, 1, 0, 3}).view({3, 2});
  expect_finite_differences([&](const std::vector<torch::Tensor>& in) { return embedding_sum(in[0], few); },
                            {torch::randn({4, 3}, torch::kFloat64)});
  EXPECT_THROW(embedding_sum(torch::randn({4, 3}), torch::tensor(std::vector<int64_t>{0, 4}).view({1, 2})),
               c10::Error);
}

// ------------------------------------------------- gelu -> dropout -> add -> LayerNorm
// The mask of gelu_dropout_add_layer_norm as a tensor (1 / (1 - p) or 0), from the seed.
torch::Tensor mask_of(torch::IntArrayRef shape, double p, uint64_t seed, torch::Dtype dtype) {
  auto m = torch::empty(shape, torch::kFloat64);
  auto flat = m.view({-1});
  auto a = flat.accessor<double, 1>();
  for (int64_t i = 0; i < flat.size(0); ++i) a[i] = dropout_keeps(seed, i, p) ? 1.0 / (1.0 - p) : 0.0;
  return m.to(dtype);
}

// Rows of 32 and 64 (the bench and default widths: float takes the vector path) and 24
// (the generic loop).
TEST_F(FusedOps, EpilogueMatchesComposition) {
  const uint64_t seed = 12345;
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    for (int64_t H : {32, 64, 24}) {
      for (double p : {0.0, 0.1, 0.5}) {
        const auto opts = torch::TensorOptions().dtype(dtype);
        const std::vector<int64_t> shape = {3, 17, H};
        const auto mask = mask_of(shape, p, seed, dtype);
        const Fn fused = [&](const std::vector<torch::Tensor>& in) {
          return gelu_dropout_add_layer_norm(in[0], in[1], in[2], in[3], 1e-5, p, seed);
        };
        const Fn plain = [&](const std::vector<torch::Tensor>& in) {
          return F::layer_norm(in[1] + F::gelu(in[0]) * mask,
                               F::LayerNormFuncOptions({H}).weight(in[2]).bias(in[3]).eps(1e-5));
        };
        expect_same(fused, plain,
                    {2 * torch::randn(shape, opts), torch::randn(shape, opts),
                     1 + 0.3 * torch::randn({H}, opts), 0.3 * torch::randn({H}, opts)},
                    1e-5, 1e-5);
      }
    }
  }
}

// Float rows of 32 compute the GELU and its slope in the loop (an erf approximation):
// values and gradients against LibTorch's exact GELU from -20 to 20 (with and without
// dropout), and far out in both tails, one tail value per row (where the Gaussian factor
// is cut to 0), around 0 and at a denormal.
TEST_F(FusedOps, EpilogueGeluHoldsOverTheWholeRange) {
  const auto check = [](const torch::Tensor& z, double p) {
    const auto shape = z.sizes().vec();
    const Fn fused = [p](const std::vector<torch::Tensor>& in) {
      return gelu_dropout_add_layer_norm(in[0], in[1], in[2], in[3], 1e-5, p, 5);
    };
    const auto mask = mask_of(shape, p, 5, torch::kFloat32);
    const Fn plain = [mask](const std::vector<torch::Tensor>& in) {
      return F::layer_norm(in[1] + F::gelu(in[0]) * mask,
                           F::LayerNormFuncOptions({32}).weight(in[2]).bias(in[3]).eps(1e-5));
    };
    expect_same(fused, plain, {z, torch::randn(shape), 1 + 0.3 * torch::randn({32}), 0.3 * torch::randn({32})},
                1e-5, 1e-5);
  };
  const auto range = torch::linspace(-20, 20, 3 * 17 * 32).view({3, 17, 32}).contiguous();
  check(range, 0.0);
  check(range, 0.1);
  const std::vector<float> tails = {0.0f, 1e-40f, 1e-3f, -1e-3f, 5.0f, -5.0f, 13.0f, -13.0f, 60.0f, -60.0f, 1e4f, -1e4f};
  auto rows = torch::empty({static_cast<int64_t>(tails.size()), 1, 32});
  for (size_t i = 0; i < tails.size(); ++i)
    rows[static_cast<int64_t>(i)] = tails[i] * (1 + 0.01 * torch::randn({1, 32}));
  check(rows, 0.0);
}

// ------------------------------------------------------------------------- row_linear
// row_linear against F::linear, value and the gradients of x (when it needs one), W and b:
// the layout models' shapes (K = 27 without x's gradient, K = 64 with; 64 and 192 outputs),
// rows in 8 backward parts and blocks of 64 with shorter tails (1,003 rows), one row, and
// shapes the kernels leave to LibTorch (48 outputs; K = 27 with x's gradient; double). On
// a vector path the layout shapes must take it.
TEST_F(FusedOps, RowLinearMatchesLinear) {
  struct Case {
    int64_t K, M, rows;
    bool bias, x_grad, vector;  // vector: the shape is meant for the kernels
  };
  const std::vector<Case> cases = {{64, 64, 1003, true, true, true},   {27, 64, 1003, true, false, true},
                                   {64, 192, 1003, false, true, true}, {64, 192, 1, true, true, true},
                                   {128, 64, 70, true, true, true},    {27, 64, 70, true, true, false},
                                   {64, 48, 70, true, true, false}};
  for (const auto& c : cases) {
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
      const auto opts = torch::TensorOptions().dtype(dtype);
      const auto x = torch::randn({c.rows, 1, c.K}, opts), w = torch::randn({c.M, c.K}, opts) / std::sqrt(c.K),
                 b = c.bias ? torch::randn({c.M}, opts) : torch::Tensor();
      const bool vector = c.vector && dtype == torch::kFloat32 && kernels::vector_path();
      EXPECT_EQ(kernels::row_linear_path(x, w, c.x_grad) != nullptr, vector)
          << "K " << c.K << ", M " << c.M << ", x's gradient " << c.x_grad << ", " << dtype;
      const auto run_as = [&](bool fused, torch::Dtype as) {
        // Leaf copies (to() of the same type would return the tensor itself).
        auto xl = x.to(as).clone().set_requires_grad(c.x_grad), wl = w.to(as).clone().set_requires_grad(true);
        auto bl = c.bias ? b.to(as).clone().set_requires_grad(true) : torch::Tensor();
        const auto y = fused ? row_linear(xl, wl, bl) : F::linear(xl, wl, bl);
        (y * torch::linspace(-1, 1, y.numel(), opts).to(as).view(y.sizes())).sum().backward();
        const auto zero = torch::zeros({1}, opts);
        return std::vector<torch::Tensor>{y.detach().to(dtype), c.x_grad ? xl.grad().to(dtype) : zero,
                                          wl.grad().to(dtype), c.bias ? bl.grad().to(dtype) : zero};
      };
      const auto run = [&](bool fused) { return run_as(fused, dtype); };
      const auto run_double = [&](bool fused) { return run_as(fused, torch::kFloat64); };
      // The kernels' reference is F::linear in double: LibTorch's float sum of the bias's
      // gradient over 1,003 rows is 4e-5 off it, the kernels sum it in double. LibTorch's
      // path is F::linear's own ops, compared in its own type.
      const auto got = run(true), want = vector ? run_double(false) : run(false);
      const char* names[] = {"value", "x's gradient", "W's gradient", "b's gradient"};
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].sizes(), want[i].sizes()) << names[i];
        const double scale = std::max(1.0, want[i].abs().max().item<double>());
        EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-5 * scale))
            << names[i] << " (K " << c.K << ", M " << c.M << ", rows " << c.rows << "): max abs diff "
            << (got[i] - want[i]).abs().max().item<double>();
      }
    }
  }
}

// The backward's parts are a fixed split of the rows: the same bits with 1 and 3 threads.
TEST_F(FusedOps, RowLinearDoesNotDependOnTheThreadCount) {
  const std::vector<torch::Tensor> in{torch::randn({4, 250, 64}), torch::randn({192, 64}) / 8, torch::randn({192})};
  const Fn layer = [](const std::vector<torch::Tensor>& t) { return row_linear(t[0], t[1], t[2]); };
  const auto w = torch::randn({4, 250, 192});
  torch::set_num_threads(3);
  const auto three = value_and_grads(layer, in, w);
  torch::set_num_threads(1);
  const auto one = value_and_grads(layer, in, w);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], three[i])) << "output " << i;
}

// fused_gelu against LibTorch's GELU, value and gradient: float over the whole range (whole
// blocks of 16 and a tail: 3 x 7 x 5 = 105 elements), the tails, 0 and a denormal; double
// (LibTorch's path) on random values; a non-contiguous input.
TEST_F(FusedOps, FusedGeluMatchesGelu) {
  const Fn fused = [](const std::vector<torch::Tensor>& in) { return fused_gelu(in[0]); };
  const Fn plain = [](const std::vector<torch::Tensor>& in) { return F::gelu(in[0]); };
  expect_same(fused, plain, {torch::linspace(-20, 20, 105).view({3, 7, 5})}, 1e-5, 1e-6);
  const auto tails = torch::tensor({0.0f, 1e-40f, 1e-3f, -1e-3f, 5.0f, -5.0f, 13.0f, -13.0f, 60.0f, -60.0f, 1e4f, -1e4f});
  expect_same(fused, plain, {tails}, 1e-5, 1e-6);
  expect_same(fused, plain, {3 * torch::randn({4, 33}, torch::kFloat64)}, 1e-12, 1e-12);
  expect_same(fused, plain, {3 * torch::randn({40, 24}).t()}, 1e-5, 1e-6);
}

// A forward that will not be differentiated (no input needs a gradient, or NoGradGuard)
// stores nothing for backward (the vector path) and gives the same bits as one that will.
TEST_F(FusedOps, EpilogueWithoutGradientGivesTheSameValues) {
  for (int64_t H : {32, 64, 24}) {
    for (double p : {0.0, 0.1}) {
      const auto z = 2 * torch::randn({3, 17, H}), x = torch::randn({3, 17, H});
      const auto gamma = 1 + 0.3 * torch::randn({H}), beta = 0.3 * torch::randn({H});
      const auto plain = gelu_dropout_add_layer_norm(z, x, gamma, beta, 1e-5, p, 8);
      const auto leaf = z.clone().set_requires_grad(true);
      const auto tracked = gelu_dropout_add_layer_norm(leaf, x, gamma, beta, 1e-5, p, 8);
      EXPECT_TRUE(tracked.requires_grad());
      EXPECT_TRUE(torch::equal(plain, tracked.detach())) << "H " << H << ", p " << p;
      torch::NoGradGuard no_grad;
      const auto untracked = gelu_dropout_add_layer_norm(leaf, x, gamma, beta, 1e-5, p, 8);
      EXPECT_FALSE(untracked.requires_grad());
      EXPECT_TRUE(torch::equal(plain, untracked)) << "H " << H << ", p " << p;
    }
  }
}

TEST_F(FusedOps, EpilogueGradientsMatchFiniteDifferences) {
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  for (double p : {0.0, 0.3}) {
    // The same seed on every evaluation: finite differences see the forward's mask, so this
    // also checks that backward regenerates that mask.
    const Fn f = [p](const std::vector<torch::Tensor>& in) {
      return gelu_dropout_add_layer_norm(in[0], in[1], in[2], in[3], 1e-5, p, 99);
    };
    expect_finite_differences(f, {torch::randn({2, 5, 6}, opts), torch::randn({2, 5, 6}, opts),
                                  torch::randn({6}, opts), torch::randn({6}, opts)});
  }
}

// -------------------------------------------------------------------------- sage_block
// The block as one function against its two functions composed: the same bits in value and
// in every gradient (x's gradient is the two paths' sum either way: the engine's add there,
// the linear map's backward here), at H = 32 and 64 in float (the one function; 1085 rows,
// so several backward parts), with and without dropout; H = 24 and double take the two
// functions themselves. In training on a vector path the output comes from the one function.
TEST_F(FusedOps, SageBlockGivesTheBitsOfItsTwoFunctions) {
  std::mt19937_64 rng(5);
  const int64_t n = 217, S = 5;
  const auto edges = random_edges(rng, n, 3 * n);
  const auto adj = Adjacency::build(edges, n);
  const bool vector = tested_isa() != VectorIsa::kNone;
  for (const auto dtype : {torch::kFloat32, torch::kFloat64})
    for (const int64_t H : {32, 64, 24})
      for (const double p : {0.0, 0.1}) {
        const auto opts = torch::TensorOptions().dtype(dtype);
        const std::vector<torch::Tensor> in{torch::randn({S, n, H}, opts),
                                            torch::randn({H, 3 * H}, opts) / std::sqrt(3.0 * H),
                                            torch::randn({H}, opts), 1 + 0.1 * torch::randn({H}, opts),
                                            0.1 * torch::randn({H}, opts)};
        const Fn block = [&](const std::vector<torch::Tensor>& t) {
          return sage_block(t[0], t[1], t[2], adj, t[3], t[4], 1e-5, p, 11);
        };
        const Fn composed = [&](const std::vector<torch::Tensor>& t) {
          return gelu_dropout_add_layer_norm(sage_linear(t[0], t[1], t[2], adj), t[0], t[3], t[4], 1e-5, p, 11);
        };
        const auto w = torch::randn({S, n, H}, opts);
        const auto one = value_and_grads(block, in, w), two = value_and_grads(composed, in, w);
        const std::string what = "H " + std::to_string(H) + ", p " + std::to_string(p) + ", " +
                                 std::string(c10::toString(dtype));
        for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << what << ", output " << i;
        std::vector<torch::Tensor> leaves;
        for (const auto& t : in) leaves.push_back(t.clone().set_requires_grad(true));
        const bool one_function = vector && dtype == torch::kFloat32 && H != 24;
        EXPECT_EQ(block(leaves).grad_fn()->name().find("SageBlockFunction") != std::string::npos, one_function)
            << what << ": " << block(leaves).grad_fn()->name();
      }
}

// --------------------------------------------------------------------- segment pooling
TEST_F(FusedOps, SegmentMeanMaxMatchesScatterPooling) {
  // Graph 2 has no nodes and pools to 0.
  const std::vector<int64_t> offsets = {0, 4, 5, 5, 11};
  std::vector<int64_t> graph_of;
  for (int64_t g = 0; g + 1 < static_cast<int64_t>(offsets.size()); ++g)
    for (int64_t n = offsets[g]; n < offsets[g + 1]; ++n) graph_of.push_back(g);
  const auto segment = torch::tensor(graph_of);
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const Fn fused = [&](const std::vector<torch::Tensor>& in) { return segment_mean_max(in[0], offsets); };
    const Fn plain = [&](const std::vector<torch::Tensor>& in) {
      return torch::cat({segment_mean(in[0], segment, 4), segment_max(in[0], segment, 4)}, -1);
    };
    auto x = torch::randn({3, 11, 5}, torch::TensorOptions().dtype(dtype));
    expect_same(fused, plain, {x}, 1e-5, 1e-6);
    // Ties: a repeated maximum shares its gradient, as scatter_reduce's amax does.
    x[1][7].copy_(x[1][8]);
    x[2].select(1, 3).fill_(0.25);
    expect_same(fused, plain, {x}, 1e-5, 1e-6);
  }
  expect_finite_differences(
      [&](const std::vector<torch::Tensor>& in) { return segment_mean_max(in[0], offsets); },
      {torch::randn({2, 11, 3}, torch::kFloat64)});
}

// With picks: the picked rows' pooling against index_select and scatter pooling. Graph 0
// picks row 2 twice (a node listed twice), graph 1 none, graph 2 (no rows) none, graph 3
// three rows.
TEST_F(FusedOps, SegmentMeanMaxOfPickedRowsMatchesIndexSelectThenPooling) {
  const std::vector<int64_t> offsets = {0, 4, 5, 5, 11}, pick_offsets = {0, 3, 3, 3, 6};
  const auto picks = torch::tensor(std::vector<int64_t>{1, 2, 2, 5, 9, 10});
  const auto pick_graph = torch::tensor(std::vector<int64_t>{0, 0, 0, 3, 3, 3});
  std::vector<int64_t> graph_of;
  for (int64_t g = 0; g + 1 < static_cast<int64_t>(offsets.size()); ++g)
    for (int64_t n = offsets[g]; n < offsets[g + 1]; ++n) graph_of.push_back(g);
  const auto segment = torch::tensor(graph_of);
  const Fn fused = [&](const std::vector<torch::Tensor>& in) {
    return segment_mean_max(in[0], offsets, pick_offsets, picks);
  };
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const Fn plain = [&](const std::vector<torch::Tensor>& in) {
      const auto picked = in[0].index_select(1, picks);
      return torch::cat({segment_mean(in[0], segment, 4), segment_max(in[0], segment, 4),
                         segment_mean(picked, pick_graph, 4), segment_max(picked, pick_graph, 4)},
                        -1);
    };
    auto x = torch::randn({3, 11, 5}, torch::TensorOptions().dtype(dtype));
    expect_same(fused, plain, {x}, 1e-5, 1e-6);
    x[2].select(1, 3).fill_(0.25);  // ties among picked and unpicked rows
    expect_same(fused, plain, {x}, 1e-5, 1e-6);
  }
  expect_finite_differences(fused, {torch::randn({2, 11, 3}, torch::kFloat64)});
  EXPECT_THROW(segment_mean_max(torch::randn({2, 11, 3}), offsets, pick_offsets,
                                torch::tensor(std::vector<int64_t>{1, 2, 4, 5, 9, 10})),
               c10::Error);  // row 4 is graph 1's, not graph 0's
}

void expect_pooling_and_gathered_sums_thread_free(int64_t H) {
  const int64_t S = 6, G = 5, per = 30, N = G * per, T = 11;
  std::vector<int64_t> offsets, pick_offsets = {0}, picks, ptr = {0}, index;
  std::vector<double> weight;
  for (int64_t g = 0; g <= G; ++g) offsets.push_back(g * per);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t k = 0; k < 6; ++k) picks.push_back(g * per + (7 * k + g) % per);
    picks.push_back(picks.back());  // a node picked twice
    pick_offsets.push_back(static_cast<int64_t>(picks.size()));
  }
  for (int64_t u = 0; u < N; ++u) {
    for (int64_t k = 0; k < u % 3; ++k) index.push_back((7 * u + k) % T), weight.push_back(0.5);
    ptr.push_back(static_cast<int64_t>(index.size()));
  }
  const auto pt = torch::tensor(ptr), it = torch::tensor(index), wt = torch::tensor(weight), pk = torch::tensor(picks);
  const Fn f = [&](const std::vector<torch::Tensor>& in) {
    return segment_mean_max(add_gathered_sum(in[0], in[1], pt, it, wt), offsets, pick_offsets, pk);
  };
  const std::vector<torch::Tensor> in{torch::randn({N, H}), torch::randn({S, T, H})};
  const auto w = torch::randn({S, G, 4 * H});
  torch::set_num_threads(3);
  const auto three = value_and_grads(f, in, w);
  torch::set_num_threads(1);
  const auto one = value_and_grads(f, in, w);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], three[i])) << "H " << H << ", tensor " << i;
}

// The picked pooling's backward (tasks of one (slot, graph) each, picks added after the
// graph's rows are written) and add_gathered_sum's (its forward's tasks and, at H = 32, its
// table gradient's start inside a slot; at H = 16 a task per slot) give the same bits with
// 1 and 3 threads.
TEST_F(FusedOps, PickedPoolingAndGatheredSumsDoNotDependOnTheNumberOfThreads) {
  for (const int64_t H : {16, 32}) expect_pooling_and_gathered_sums_thread_free(H);
}

// ------------------------------------------------------------------------------ dropout
TEST_F(FusedOps, DropoutKeepRateIsOneMinusP) {
  const int64_t n = 1 << 20;
  for (double p : {0.1, 0.5}) {
    const auto out = counter_dropout(torch::ones({n}), p, 7);
    const double kept = out.ne(0).sum().item<double>() / n;
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(kept, 1 - p, 5 * sigma) << "p " << p;
    // Kept elements are scaled so that the expectation is unchanged.
    EXPECT_NEAR(out.max().item<float>(), 1 / (1 - p), 1e-6);
  }
  EXPECT_TRUE(torch::equal(counter_dropout(torch::ones({5}), 0.0, 7), torch::ones({5})));
}

TEST_F(FusedOps, DropoutMaskReplaysFromItsSeedAndBackwardUsesIt) {
  const auto x = torch::randn({4, 50, 8});
  const auto a = counter_dropout(x, 0.3, 1), b = counter_dropout(x, 0.3, 1), c = counter_dropout(x, 0.3, 2);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_GT(a.ne(c).sum().item<int64_t>(), 100);
  // Gradient of sum(dropout(x)) is the mask itself: zero exactly where the output was dropped.
  auto leaf = x.clone().set_requires_grad(true);
  counter_dropout(leaf, 0.3, 1).sum().backward();
  EXPECT_TRUE(torch::equal(leaf.grad().eq(0), a.eq(0)));
  EXPECT_TRUE(torch::allclose(leaf.grad() * x, a));
  // The epilogue's mask is the same function of (seed, index).
  const auto mask = mask_of(x.sizes(), 0.3, 1, torch::kFloat32);
  EXPECT_TRUE(torch::equal(a.eq(0), mask.eq(0)));
}

TEST_F(FusedOps, DropoutSeedsFollowTorchManualSeed) {
  torch::manual_seed(42);
  const uint64_t a = draw_dropout_seed(), b = draw_dropout_seed();
  torch::manual_seed(42);
  EXPECT_EQ(draw_dropout_seed(), a);
  EXPECT_EQ(draw_dropout_seed(), b);
  EXPECT_NE(a, b);
}

// The layer's value and gradients at width H with 1 and with 2 threads.
void expect_thread_independent(int64_t H) {
  std::mt19937_64 rng(4);
  const int64_t n = 150, S = 5;
  const auto edges = random_edges(rng, n, 3 * n);
  const auto adj = Adjacency::build(edges, n);
  const Fn layer = [&](const std::vector<torch::Tensor>& in) {
    const auto z = sage_linear(in[0], in[1], in[2], adj);
    const auto y = gelu_dropout_add_layer_norm(z, in[0], in[3], in[4], 1e-5, 0.2, 77);
    return add_gathered(in[5], y, torch::arange(n) % S);
  };
  const std::vector<torch::Tensor> inputs = {torch::randn({S, n, H}), torch::randn({H, 3 * H}) / 10,
                                             torch::randn({H}), 1 + torch::randn({H}) / 10,
                                             torch::randn({H}), torch::randn({n, H})};
  const auto w = torch::randn({S, n, H});
  const auto one = value_and_grads(layer, inputs, w);
  torch::set_num_threads(2);
  const auto two = value_and_grads(layer, inputs, w);
  torch::set_num_threads(1);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << "tensor " << i;
}

// The kernels split rows among LibTorch's threads; every sum is taken in an order fixed by
// the data (chunks of a fixed split, added in order), so 1 and 2 threads give the same bits.
TEST_F(FusedOps, ResultsDoNotDependOnTheNumberOfThreads) {
  for (int64_t H : {32, 64}) expect_thread_independent(H);
}

}  // namespace
}  // namespace tpuperf
