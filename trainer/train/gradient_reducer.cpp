#include "trainer/train/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "common/base/error.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

namespace {

// MPI counts are int: large buffers go in pieces.
constexpr int64_t kMaxMpiCount = int64_t{1} << 30;
// The tag of arrival announcements; the group communicator carries no other messages.
constexpr int kArrivalTag = 7301;

MPI_Datatype mpi_type_of(torch::ScalarType t) {
  if (t == torch::kFloat32) return MPI_FLOAT;
  if (t == torch::kFloat64) return MPI_DOUBLE;
  throw Error(std::string("gradient all-reduce: unsupported dtype ") + c10::toString(t));
}

// flat[at..] = grad of each p in turn (zeros for an undefined grad), as plain copies: a
// tensor op per parameter costs more than the copy itself at these sizes.
template <typename T>
void pack_gradients(const std::vector<torch::Tensor>& ps, T* flat) {
  for (const torch::Tensor& p : ps) {
    const torch::Tensor& g = p.grad();
    if (!g.defined()) {
      std::fill(flat, flat + p.numel(), T{0});
    } else {
      if (g.is_sparse()) throw Error("gradient all-reduce: sparse gradients are not supported");
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

int GradientReducer::world_rank_of(int group_rank) const {
  MPI_Group group, world;
  check_mpi(MPI_Comm_group(comm_, &group), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  int out = MPI_UNDEFINED;
  check_mpi(MPI_Group_translate_ranks(group, 1, &group_rank, world, &out), "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

GradientReducer::GradientReducer(torch::nn::Module& module, MPI_Comm comm, double stall_timeout_s,
                                 StallHandler on_stall)
    : comm_(comm), stall_timeout_s_(stall_timeout_s), on_stall_(std::move(on_stall)) {
  rank_ = mpi_rank(comm);
  size_ = mpi_size(comm);
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const torch::Tensor& p : module.parameters())
    if (p.requires_grad()) by_type[p.scalar_type()].push_back(p);
  // No structure check here, to keep one collective per step: verify_parameters, run
  // before training, compares the trainable values of every rank.
  for (auto& [type, ps] : by_type) {
    mpi_type_of(type);  // throws on an unsupported dtype before any step
    int64_t total = 0;
    for (const torch::Tensor& p : ps) total += p.numel();
    buckets_.push_back({ps, torch::empty({total}, ps.front().options().requires_grad(false))});
  }
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::allreduce() {
  if (size_ == 1) return;
  torch::NoGradGuard no_grad;
  const bool watched = stall_timeout_s_ > 0;
  int64_t arrival = reductions_;
  std::vector<MPI_Request> announce;
  if (watched)
    for (int peer = 0; peer < size_; ++peer)
      if (peer != rank_)
        check_mpi(MPI_Isend(&arrival, 1, MPI_INT64_T, peer, kArrivalTag, comm_, &announce.emplace_back()),
                  "MPI_Isend");
  std::vector<MPI_Request> requests;
  for (Bucket& b : buckets_) {
    AT_DISPATCH_FLOATING_TYPES(b.flat.scalar_type(), "GradientReducer pack", [&] {
      pack_gradients(b.params, b.flat.data_ptr<scalar_t>());
    });
    const MPI_Datatype type = mpi_type_of(b.flat.scalar_type());
    char* base = static_cast<char*>(b.flat.data_ptr());
    const auto elem = static_cast<int64_t>(b.flat.element_size());
    for (int64_t at = 0; at < b.flat.numel(); at += kMaxMpiCount) {
      const int count = static_cast<int>(std::min(kMaxMpiCount, b.flat.numel() - at));
      if (watched)
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, base + at * elem, count, type, MPI_SUM, comm_, &requests.emplace_back()),
                  "MPI_Iallreduce");
      else
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, base + at * elem, count, type, MPI_SUM, comm_), "MPI_Allreduce");
    }
  }
  if (watched) {
    wait_watched(requests);
    // Every peer reached this reduction, so its announcement is here: take it off the queue.
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      int64_t theirs = -1;
      check_mpi(MPI_Recv(&theirs, 1, MPI_INT64_T, peer, kArrivalTag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      if (theirs != reductions_)
        throw Error("gradient all-reduce: rank " + std::to_string(peer) + " is at reduction " + std::to_string(theirs) +
                    ", this rank at " + std::to_string(reductions_));
    }
    check_mpi(MPI_Waitall(static_cast<int>(announce.size()), announce.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  for (Bucket& b : buckets_)
    AT_DISPATCH_FLOATING_TYPES(b.flat.scalar_type(), "GradientReducer unpack", [&] {
      unpack_gradients(b.params, b.flat.data_ptr<scalar_t>(), size_);
    });
  ++reductions_;
}

void GradientReducer::wait_watched(std::vector<MPI_Request>& requests) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  bool reported = false;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (reported || waited < stall_timeout_s_) continue;
    const std::string message = late_ranks_message(waited);
    if (!on_stall_) throw Error(message);
    reported = on_stall_(message);
    if (!reported) throw Error(message);
  }
}

std::string GradientReducer::late_ranks_message(double waited_s) const {
  std::string late;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    int arrived = 0;
    check_mpi(MPI_Iprobe(peer, kArrivalTag, comm_, &arrived, MPI_STATUS_IGNORE), "MPI_Iprobe");
    if (!arrived)
      late += (late.empty() ? "" : ", ") + std::to_string(peer) + " (world rank " + std::to_string(world_rank_of(peer)) + ")";
  }
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", waited_s);
  return "stalled at the gradient all-reduce of step " + std::to_string(reductions_ + 1) + ": waited " + waited +
         " s (train.stall_timeout_s " + std::to_string(static_cast<int64_t>(stall_timeout_s_)) +
         ") for group rank(s) " + (late.empty() ? std::string("(none missing: the all-reduce itself is slow)") : late) +
         "; stopping the job";
}

}  // namespace tpuperf
