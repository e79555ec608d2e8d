// Fold groups, parameter broadcast/verification and the gradient all-reduce, run with 2
// ranks: data-parallel SGD on different halves of the data must keep the ranks'
// parameters bit-identical and equal to one process stepping with the mean gradient of
// both halves.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/config/config.h"
#include "common/base/error.h"
#include "trainer/train/compute_threads.h"
#include "trainer/train/distributed.h"
#include "trainer/train/gradient_reducer.h"

using namespace tpuperf;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

int size_of(MPI_Comm c) {
  int s = 0;
  MPI_Comm_size(c, &s);
  return s;
}

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

// Two linear layers and a head only some batches use (its gradient stays undefined on a
// rank whose batch does not reach it), plus a buffer.
struct NetImpl : torch::nn::Module {
  NetImpl()
      : a(register_module("a", torch::nn::Linear(4, 8))),
        b(register_module("b", torch::nn::Linear(8, 1))),
        extra(register_module("extra", torch::nn::Linear(8, 1))) {
    scale = register_buffer("scale", torch::ones({1}));
  }
  torch::Tensor forward(const torch::Tensor& x, bool use_extra) {
    torch::Tensor h = torch::tanh(a(x));
    torch::Tensor y = b(h) * scale;
    return use_extra ? y + extra(h) : y;
  }
  torch::nn::Linear a, b, extra;
  torch::Tensor scale;
};
TORCH_MODULE(Net);

// Half `part` of the data at step `step`; half 1 also goes through the extra head.
struct Half {
  torch::Tensor x, y;
  bool use_extra;
};

Half half(int part, int step) {
  torch::manual_seed(1000 + 10 * step + part);
  Half h;
  h.x = torch::randn({16, 4});
  h.y = torch::randn({16, 1});
  h.use_extra = part == 1;
  return h;
}

void compute_grads(Net& net, const Half& h) {
  net->zero_grad(/*set_to_none=*/true);  // so an unused head's gradient is undefined
  torch::Tensor loss = torch::mse_loss(net->forward(h.x, h.use_extra), h.y);
  loss.backward();
}

void sgd_step(Net& net, double lr) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : net->parameters())
    if (p.grad().defined()) p.sub_(p.grad() * lr);
}

std::vector<float> flat_params(Net& net) {
  std::vector<float> out;
  for (const torch::Tensor& p : net->parameters()) {
    torch::Tensor c = p.detach().contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every rank's vector equals rank 0's, bit for bit.
bool same_on_all_ranks(std::vector<float> v, MPI_Comm comm) {
  std::vector<float> root = v;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, comm);
  int ok = same_bits(v, root) ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace

TEST(FoldLayout, OneFoldIsOneGroupOfTwo) {
  ASSERT_EQ(world_size(), 2);
  FoldLayout l = make_fold_layout(MPI_COMM_WORLD, 1);
  EXPECT_EQ(l.groups, 1);
  EXPECT_EQ(l.group, 0);
  EXPECT_EQ(l.group_size, 2);
  EXPECT_EQ(l.group_rank, world_rank());
  EXPECT_EQ(size_of(l.group_comm), 2);
  EXPECT_EQ(l.folds_of_group(0), std::vector<int>{0});
  if (world_rank() == 0) {
    ASSERT_NE(l.leaders_comm, MPI_COMM_NULL);
    EXPECT_EQ(size_of(l.leaders_comm), 1);
  } else {
    EXPECT_EQ(l.leaders_comm, MPI_COMM_NULL);
    EXPECT_FALSE(l.is_leader());
  }
}

TEST(FoldLayout, TwoFoldsAreTwoGroupsOfOne) {
  FoldLayout l = make_fold_layout(MPI_COMM_WORLD, 2);
  EXPECT_EQ(l.groups, 2);
  EXPECT_EQ(l.group, world_rank());
  EXPECT_EQ(l.group_size, 1);
  EXPECT_EQ(l.group_rank, 0);
  EXPECT_TRUE(l.is_leader());
  ASSERT_NE(l.leaders_comm, MPI_COMM_NULL);
  EXPECT_EQ(size_of(l.leaders_comm), 2);
  EXPECT_EQ(rank_of(l.leaders_comm), l.group);
  EXPECT_EQ(l.my_folds(), std::vector<int>{world_rank()});
}

TEST(FoldLayout, ThreeFoldsOnTwoRanks) {
  FoldLayout l = make_fold_layout(MPI_COMM_WORLD, 3);
  EXPECT_EQ(l.groups, 2);
  EXPECT_EQ(l.group, world_rank());
  EXPECT_EQ(l.folds_of_group(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.folds_of_group(1), (std::vector<int>{1}));
  // Moving keeps the communicators usable and leaves the source empty.
  FoldLayout moved = std::move(l);
  EXPECT_EQ(l.group_comm, MPI_COMM_NULL);
  EXPECT_EQ(size_of(moved.group_comm), 1);
  EXPECT_THROW(make_fold_layout(MPI_COMM_WORLD, 0), Error);
}

TEST(Distributed, BroadcastMakesModelsIdentical) {
  torch::manual_seed(world_rank() + 1);  // a different init on each rank
  Net net;
  net->scale.fill_(world_rank() + 2.0);
  EXPECT_FALSE(same_on_all_ranks(flat_params(net), MPI_COMM_WORLD));
  std::vector<float> before_on_root = flat_params(net);
  MPI_Bcast(before_on_root.data(), static_cast<int>(before_on_root.size()), MPI_FLOAT, 0,
            MPI_COMM_WORLD);

  broadcast_parameters(*net, MPI_COMM_WORLD);
  EXPECT_TRUE(same_on_all_ranks(flat_params(net), MPI_COMM_WORLD));
  EXPECT_TRUE(same_bits(flat_params(net), before_on_root)) << "root's values win";
  EXPECT_EQ(net->scale.item<float>(), 2.0f) << "buffers are broadcast too";
  EXPECT_NO_THROW(verify_parameters(*net, MPI_COMM_WORLD));
  EXPECT_TRUE(net->a->weight.requires_grad());
}

TEST(Distributed, DataParallelSgdEqualsMeanGradientSteps) {
  const int rank = world_rank();
  torch::manual_seed(77 + rank);
  Net net;
  broadcast_parameters(*net, MPI_COMM_WORLD);

  // The reference, on every rank: the same start, stepping with the mean of both halves'
  // gradients (an undefined gradient counts as zero).
  Net ref;
  {
    torch::NoGradGuard no_grad;
    auto src = net->parameters();
    auto dst = ref->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  const double lr = 0.05;
  // Watched (a stall timeout: non-blocking all-reduce and arrival messages) on even steps'
  // reducer, plain on the other: both must average the same way.
  GradientReducer watched(*net, MPI_COMM_WORLD, 60.0), plain(*net, MPI_COMM_WORLD);
  for (int step = 0; step < 4; ++step) {
    compute_grads(net, half(rank, step));
    if (rank == 0) {
      EXPECT_FALSE(net->extra->weight.grad().defined());
    }
    (step % 2 == 0 ? watched : plain).allreduce();
    // EXPECT, not ASSERT: a rank leaving the test early would hang its peer.
    EXPECT_TRUE(net->extra->weight.grad().defined()) << "defined after the all-reduce";
    sgd_step(net, lr);

    std::vector<std::vector<torch::Tensor>> grads;
    for (int part = 0; part < 2; ++part) {
      compute_grads(ref, half(part, step));
      std::vector<torch::Tensor> g;
      for (const torch::Tensor& p : ref->parameters())
        g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
      grads.push_back(g);
    }
    {
      torch::NoGradGuard no_grad;
      auto ps = ref->parameters();
      for (size_t i = 0; i < ps.size(); ++i) ps[i].sub_(((grads[0][i] + grads[1][i]) / 2) * lr);
    }
    EXPECT_TRUE(same_on_all_ranks(flat_params(net), MPI_COMM_WORLD)) << "step " << step;
    EXPECT_TRUE(same_bits(flat_params(net), flat_params(ref))) << "step " << step;
    EXPECT_NO_THROW(verify_parameters(*net, MPI_COMM_WORLD));
  }
}

// Float64 parameters take the double buffer; a non-contiguous gradient (a transposed view)
// is read and written in its parameter's shape.
TEST(Distributed, AllreduceAveragesDoubleAndStridedGradients) {
  const int rank = world_rank();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  torch::nn::Linear lin(3, 2);
  lin->to(torch::kFloat64);
  lin->weight.mutable_grad() = torch::arange(6, torch::kFloat64).view({3, 2}).t() * (rank + 1);
  lin->bias.mutable_grad() = torch::full({2}, 0.5 * (rank + 1), torch::kFloat64);
  EXPECT_FALSE(lin->weight.grad().is_contiguous());
  GradientReducer(*lin, MPI_COMM_WORLD).allreduce();
  const double mean_factor = (size + 1) / 2.0;  // mean of 1..size
  EXPECT_TRUE(torch::equal(lin->weight.grad(), torch::arange(6, torch::kFloat64).view({3, 2}).t() * mean_factor));
  EXPECT_TRUE(torch::equal(lin->bias.grad(), torch::full({2}, 0.5 * mean_factor, torch::kFloat64)));
  EXPECT_EQ(lin->weight.grad().scalar_type(), torch::kFloat64);
}

// A rank that waits longer than the stall timeout names the late rank (here rank 1,
// which sleeps before its all-reduce) once, and the reduction still completes correctly
// when the late rank arrives. (By default the handler throws and the tool aborts the job:
// tests/trainer/train/test_train.sh runs that with a hung rank.)
TEST(Distributed, StalledAllreduceNamesTheLateRank) {
  const int rank = world_rank();
  torch::nn::Linear lin(2, 2);
  std::vector<std::string> reports;
  GradientReducer reducer(*lin, MPI_COMM_WORLD, 0.3, [&](const std::string& message) {
    reports.push_back(message);
    return true;  // keep waiting
  });
  for (int step = 0; step < 2; ++step) {
    lin->weight.mutable_grad() = torch::full({2, 2}, float(rank + 1));
    lin->bias.mutable_grad() = torch::full({2}, float(rank + 1));
    if (rank == 1 && step == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    reducer.allreduce();
    EXPECT_TRUE(torch::equal(lin->weight.grad(), torch::full({2, 2}, 1.5f))) << "step " << step;
  }
  EXPECT_EQ(reducer.reductions(), 2);
  if (rank == 0) {
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_NE(reports[0].find("step 2"), std::string::npos) << reports[0];
    EXPECT_NE(reports[0].find("group rank(s) 1 (world rank 1)"), std::string::npos) << reports[0];
  } else {
    EXPECT_TRUE(reports.empty()) << "the late rank found everybody there";
  }
}

TEST(Distributed, VerifyNamesThePerturbedRank) {
  torch::manual_seed(5);
  Net net;
  broadcast_parameters(*net, MPI_COMM_WORLD);
  verify_parameters(*net, MPI_COMM_WORLD);
  if (world_rank() == 1) {
    torch::NoGradGuard no_grad;
    net->b->bias.add_(1e-6f);
  }
  try {
    verify_parameters(*net, MPI_COMM_WORLD);
    FAIL() << "perturbed parameters verified";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 1 ("), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 0 ("), std::string::npos) << msg;
  }
}

TEST(Distributed, GroupsOfOneAreNoOps) {
  FoldLayout l = make_fold_layout(MPI_COMM_WORLD, 2);
  torch::manual_seed(11 + world_rank());
  Net net;
  const std::vector<float> before = flat_params(net);
  broadcast_parameters(*net, l.group_comm);
  EXPECT_TRUE(same_bits(flat_params(net), before));
  verify_parameters(*net, l.group_comm);  // differs from the other rank, but not in-group
  compute_grads(net, half(world_rank(), 0));
  const torch::Tensor g = net->a->weight.grad().clone();
  GradientReducer(*net, l.group_comm, 1.0).allreduce();
  EXPECT_TRUE(torch::equal(g, net->a->weight.grad()));
  if (world_rank() == 0) {
    EXPECT_FALSE(net->extra->weight.grad().defined());
  }
  EXPECT_EQ(allreduce_double(2.5, l.group_comm), 2.5);
}

TEST(Distributed, AllreduceDoublesSums) {
  std::vector<double> v = {1.0 + world_rank(), 10.0 * (world_rank() + 1), 0.5};
  allreduce_doubles(v, MPI_COMM_WORLD);
  EXPECT_EQ(v, (std::vector<double>{3.0, 30.0, 1.0}));
  EXPECT_EQ(allreduce_double(world_rank() == 0 ? 1.25 : 2.0, MPI_COMM_WORLD), 3.25);
}

// Both ranks run on this node: by default they split its cores; a set value wins. Setting
// the threads reaches LibTorch and, when it is OpenBLAS, the BLAS's own pool (which
// otherwise keeps one spinning thread per core in every rank).
TEST(ComputeThreads, RanksOfANodeShareItsCoresAndTheBlasKeepsOneThread) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Config cfg = Config::from_text("train: {threads_per_rank: 0}", "test");
  EXPECT_EQ(choose_threads(cfg, MPI_COMM_WORLD), std::max(1, cores / world_size()));
  cfg.set("train.threads_per_rank", "3");
  EXPECT_EQ(choose_threads(cfg, MPI_COMM_WORLD), 3);
  for (int threads : {2, 1}) {
    set_compute_threads(threads);
    EXPECT_EQ(torch::get_num_threads(), threads);
    if (blas_threads() != -1) {
      EXPECT_EQ(blas_threads(), 1);
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  torch::set_num_threads(1);  // 2 ranks share the machine
  int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
