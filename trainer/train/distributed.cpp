#include "trainer/train/distributed.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <sstream>

#include "common/collectives.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/mpi_env.h"

namespace tpuperf {

namespace {

// MPI counts are int: large buffers go in pieces.
constexpr int64_t kMaxMpiCount = int64_t{1} << 30;

int comm_size(MPI_Comm comm) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

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
                std::to_string(comm_rank(comm)) + ")");
}

MPI_Datatype mpi_type_of(torch::ScalarType t) {
  if (t == torch::kFloat32) return MPI_FLOAT;
  if (t == torch::kFloat64) return MPI_DOUBLE;
  throw Error(std::string("gradient all-reduce: unsupported dtype ") + c10::toString(t));
}

void allreduce_in_place(torch::Tensor& flat, MPI_Comm comm) {
  const MPI_Datatype type = mpi_type_of(flat.scalar_type());
  const int64_t n = flat.numel();
  char* base = static_cast<char*>(flat.data_ptr());
  const auto elem = static_cast<int64_t>(flat.element_size());
  for (int64_t at = 0; at < n; at += kMaxMpiCount) {
    const int count = static_cast<int>(std::min(kMaxMpiCount, n - at));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, base + at * elem, count, type, MPI_SUM, comm),
              "MPI_Allreduce");
  }
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
  const int size = comm_size(world), rank = comm_rank(world);
  FoldLayout l;
  l.k = k;
  l.groups = std::min(size, k);
  l.group = rank % l.groups;
  check_mpi(MPI_Comm_split(world, l.group, rank, &l.group_comm), "MPI_Comm_split (fold groups)");
  l.group_rank = comm_rank(l.group_comm);
  l.group_size = comm_size(l.group_comm);
  check_mpi(MPI_Comm_split(world, l.is_leader() ? 0 : MPI_UNDEFINED, l.group, &l.leaders_comm),
            "MPI_Comm_split (group leaders)");
  return l;
}

void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm) {
  if (comm_size(comm) == 1) return;
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
  const int size = comm_size(comm);
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

namespace {

// flat[at..] = grad of each p in turn (zeros for an undefined grad), as plain copies: a
// tensor op per parameter costs more than the copy itself at these sizes.
template <typename T>
void pack_gradients(const std::vector<torch::Tensor>& ps, T* flat) {
  for (const torch::Tensor& p : ps) {
    const torch::Tensor& g = p.grad();
    if (!g.defined()) {
      std::fill(flat, flat + p.numel(), T{0});
    } else {
      const torch::Tensor c = g.contiguous();
      std::memcpy(flat, c.data_ptr<T>(), static_cast<size_t>(p.numel()) * sizeof(T));
    }
    flat += p.numel();
  }
}

// grad of each p = flat[at..] / size, in p's shape; an undefined grad is created.
template <typename T>
void unpack_gradients(const std::vector<torch::Tensor>& ps, const T* flat, int size) {
  const auto divisor = static_cast<T>(size);
  for (const torch::Tensor& p : ps) {
    if (!p.grad().defined() || !p.grad().is_contiguous())
      p.mutable_grad() = torch::empty_like(p, torch::MemoryFormat::Contiguous);
    T* g = p.mutable_grad().data_ptr<T>();
    for (int64_t i = 0; i < p.numel(); ++i) g[i] = flat[i] / divisor;
    flat += p.numel();
  }
}

}  // namespace

void allreduce_gradients(torch::nn::Module& module, MPI_Comm comm) {
  const int size = comm_size(comm);
  if (size == 1) return;
  // One buffer per dtype (normally just float32), in parameter order.
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const torch::Tensor& p : module.parameters())
    if (p.requires_grad()) by_type[p.scalar_type()].push_back(p);
  // No structure check here, to keep one collective per step: verify_parameters, run
  // before training, compares the trainable values of every rank.
  torch::NoGradGuard no_grad;
  for (auto& [type, ps] : by_type) {
    int64_t total = 0;
    for (const torch::Tensor& p : ps) {
      if (p.grad().defined() && p.grad().is_sparse())
        throw Error("gradient all-reduce: sparse gradients are not supported");
      total += p.numel();
    }
    torch::Tensor flat = torch::empty({total}, ps.front().options().requires_grad(false));
    mpi_type_of(type);  // throws on an unsupported dtype before any copy
    AT_DISPATCH_FLOATING_TYPES(type, "allreduce_gradients", [&] {
      pack_gradients(ps, flat.data_ptr<scalar_t>());
      allreduce_in_place(flat, comm);
      unpack_gradients(ps, flat.data_ptr<scalar_t>(), size);
    });
  }
}

void allreduce_doubles(std::vector<double>& values, MPI_Comm comm) {
  if (values.empty() || comm_size(comm) == 1) return;
  allreduce_sum(values.data(), static_cast<int>(values.size()), comm);
}

double allreduce_double(double value, MPI_Comm comm) {
  std::vector<double> v{value};
  allreduce_doubles(v, comm);
  return v[0];
}

}  // namespace tpuperf
