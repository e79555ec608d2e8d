#include "trainer/train/distributed.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <sstream>

#include "common/mpi/collectives.h"
#include "common/base/error.h"
#include "common/base/hash.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

namespace {

void free_comm(MPI_Comm& comm) {
  if (comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

// Parameters, then buffers: the module's whole state, in its registration order.
std::vector<torch::Tensor> state_tensors(torch::nn::Module& module) {
  std::vector<torch::Tensor> out = module.parameters();
  for (const torch::Tensor& b : module.buffers()) out.push_back(b);
  return out;
}

int64_t total_bytes(const std::vector<torch::Tensor>& ts) {
  int64_t n = 0;
  for (const torch::Tensor& t : ts) n += static_cast<int64_t>(t.nbytes());
  return n;
}

// Every rank must agree on these values before a collective whose counts depend on them,
// or the collective would truncate or hang instead of failing.
void require_same(std::vector<int64_t> values, MPI_Comm comm, const char* what) {
  std::vector<int64_t> lo(values), hi(values);
  const int n = static_cast<int>(values.size());
  check_mpi(MPI_Allreduce(values.data(), lo.data(), n, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(values.data(), hi.data(), n, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  if (lo != hi)
    throw Error(std::string(what) + ": the module's structure differs across the group (rank " +
                std::to_string(mpi_rank(comm)) + ")");
}

// What verify_parameters compares; plain integers and doubles so it travels as bytes.
struct StateDigest {
  int64_t tensors = 0;
  int64_t values = 0;
  int64_t trainable = 0;  // values of parameters that require a gradient
  uint64_t hash = 0;
  double sum = 0.0;
};

StateDigest digest_of(torch::nn::Module& module) {
  StateDigest d;
  Hasher h;
  for (const torch::Tensor& t : state_tensors(module)) {
    const torch::Tensor c = t.detach().contiguous();
    ++d.tensors;
    d.values += c.numel();
    const std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
    h.update(shape.data(), shape.size() * sizeof(int64_t));
    h.update(c.data_ptr(), c.nbytes());
    // A plain sequential loop: the same bits give the same sum on every rank.
    const torch::Tensor d64 = c.to(torch::kFloat64).contiguous();
    const double* p = d64.data_ptr<double>();
    for (int64_t i = 0; i < d64.numel(); ++i) d.sum += p[i];
  }
  for (const torch::Tensor& p : module.parameters())
    if (p.requires_grad()) d.trainable += p.numel();
  d.hash = h.digest();
  return d;
}

std::string describe(int rank, const StateDigest& d) {
  std::ostringstream s;
  s.precision(17);
  s << "rank " << rank << " (" << d.tensors << " tensors, " << d.values << " values, "
    << d.trainable << " trainable, sum "
    << d.sum << ", hash " << std::hex << d.hash << ")";
  return s.str();
}

}  // namespace

std::vector<int> FoldLayout::folds_of_group(int g) const {
  std::vector<int> out;
  for (int f = g; f < k; f += groups) out.push_back(f);
  return out;
}

FoldLayout::~FoldLayout() {
  free_comm(group_comm);
  free_comm(leaders_comm);
}

FoldLayout::FoldLayout(FoldLayout&& o) noexcept
    : k(o.k),
      groups(o.groups),
      group(o.group),
      group_comm(o.group_comm),
      group_rank(o.group_rank),
      group_size(o.group_size),
      leaders_comm(o.leaders_comm) {
  o.group_comm = MPI_COMM_NULL;
  o.leaders_comm = MPI_COMM_NULL;
}

FoldLayout& FoldLayout::operator=(FoldLayout&& o) noexcept {
  if (this == &o) return *this;
  free_comm(group_comm);
  free_comm(leaders_comm);
  k = o.k;
  groups = o.groups;
  group = o.group;
  group_comm = o.group_comm;
  group_rank = o.group_rank;
  group_size = o.group_size;
  leaders_comm = o.leaders_comm;
  o.group_comm = MPI_COMM_NULL;
  o.leaders_comm = MPI_COMM_NULL;
  return *this;
}

FoldLayout make_fold_layout(MPI_Comm world, int k) {
  if (k < 1) throw Error("fold layout: k = " + std::to_string(k) + ", need at least 1 fold");
  const int size = mpi_size(world), rank = mpi_rank(world);
  FoldLayout l;
  l.k = k;
  l.groups = std::min(size, k);
  l.group = rank % l.groups;
  check_mpi(MPI_Comm_split(world, l.group, rank, &l.group_comm), "MPI_Comm_split (fold groups)");
  l.group_rank = mpi_rank(l.group_comm);
  l.group_size = mpi_size(l.group_comm);
  check_mpi(MPI_Comm_split(world, l.is_leader() ? 0 : MPI_UNDEFINED, l.group, &l.leaders_comm),
            "MPI_Comm_split (group leaders)");
  return l;
}

void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm) {
  if (mpi_size(comm) == 1) return;
  std::vector<torch::Tensor> ts = state_tensors(module);
  const int64_t bytes = total_bytes(ts);
  require_same({static_cast<int64_t>(ts.size()), bytes}, comm, "broadcast_parameters");

  std::vector<char> buf(static_cast<size_t>(bytes));
  int64_t at = 0;
  for (const torch::Tensor& t : ts) {
    const torch::Tensor c = t.detach().contiguous();
    std::memcpy(buf.data() + at, c.data_ptr(), c.nbytes());
    at += static_cast<int64_t>(c.nbytes());
  }
  broadcast_bytes(buf.data(), bytes, 0, comm);

  torch::NoGradGuard no_grad;
  at = 0;
  for (torch::Tensor& t : ts) {
    const torch::Tensor src = torch::from_blob(buf.data() + at, t.sizes(),
                                               torch::TensorOptions().dtype(t.scalar_type()));
    t.copy_(src);
    at += static_cast<int64_t>(t.nbytes());
  }
}

void verify_parameters(torch::nn::Module& module, MPI_Comm comm) {
  const int size = mpi_size(comm);
  if (size == 1) return;
  const StateDigest mine = digest_of(module);
  std::vector<StateDigest> all(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&mine, sizeof(StateDigest), MPI_BYTE, all.data(), sizeof(StateDigest),
                          MPI_BYTE, comm),
            "MPI_Allgather");
  std::string differ;
  for (int r = 1; r < size; ++r) {
    const StateDigest& a = all[0];
    const StateDigest& b = all[static_cast<size_t>(r)];
    if (a.tensors != b.tensors || a.values != b.values || a.trainable != b.trainable ||
        a.hash != b.hash)
      differ += (differ.empty() ? "" : ", ") + describe(r, b);
  }
  if (!differ.empty())
    throw Error("model parameters differ across the fold group: " + differ + " vs " +
                describe(0, all[0]));
}

void allreduce_doubles(std::vector<double>& values, MPI_Comm comm) {
  if (values.empty() || mpi_size(comm) == 1) return;
  allreduce_sum(values.data(), static_cast<int>(values.size()), comm);
}

double allreduce_double(double value, MPI_Comm comm) {
  std::vector<double> v{value};
  allreduce_doubles(v, comm);
  return v[0];
}

}  // namespace tpuperf
