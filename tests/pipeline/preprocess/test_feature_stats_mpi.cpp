// Two ranks each add half of a deterministic dataset; after mpi_allreduce both hold
// exactly (bit for bit) the statistics of the whole dataset computed on one rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>

#include "pipeline/preprocess/features.h"
#include "tests/mpi_test_util.h"

using namespace tpuperf;

namespace {

// Graph g of the dataset: sizes and values derived from g only, with heavy tails,
// negatives and fractions so that sums are not trivially exact in double.
std::vector<float> dataset_graph(int g, int64_t* n) {
  *n = 3 + (g * 7) % 23;
  std::vector<float> f(static_cast<size_t>(*n) * kNodeFeatDim);
  for (int64_t i = 0; i < *n; ++i)
    for (int c = 0; c < kNodeFeatDim; ++c) {
      const double t = std::sin(0.37 * g + 1.3 * i + 0.11 * c);
      double v = c % 3 == 0 ? std::exp(18.0 * std::fabs(t)) : t * (c + 1) / 3.0;
      if (c == 7) v = 4.0;  // a constant column
      f[static_cast<size_t>(i) * kNodeFeatDim + c] = static_cast<float>(v);
    }
  return f;
}

constexpr int kGraphs = 101;

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST(FeatureStatsMpi, AllreduceEqualsWholeDataset) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  FeatureStats whole, mine;
  for (int g = 0; g < kGraphs; ++g) {
    int64_t n = 0;
    std::vector<float> f = dataset_graph(g, &n);
    whole.add_graph(f, n);
    // Uneven halves: rank 0 takes the first third, the rest goes round-robin.
    const int owner = g < kGraphs / 3 ? 0 : g % size;
    if (owner == rank) mine.add_graph(f, n);
  }
  mine.mpi_allreduce(MPI_COMM_WORLD);

  EXPECT_TRUE(same_bits(mine.to_flat(), whole.to_flat())) << "rank " << rank;
  for (int c : {0, 3, 7, 139}) {
    EXPECT_EQ(mine.count(c), whole.count(c));
    EXPECT_EQ(mine.min(c), whole.min(c));
    EXPECT_EQ(mine.max(c), whole.max(c));
    EXPECT_EQ(mine.mean(c), whole.mean(c));
    EXPECT_EQ(mine.variance(c), whole.variance(c));
  }
  // The fitted transform is the same everywhere.
  FeatureTransform a = fit_transform(mine, {}), b = fit_transform(whole, {});
  EXPECT_EQ(a.kept_columns, b.kept_columns);
  EXPECT_EQ(a.log1p, b.log1p);
  EXPECT_TRUE(same_bits(a.mean, b.mean));
  EXPECT_TRUE(same_bits(a.stddev, b.stddev));

  // Every rank holds the same bits as rank 0.
  std::vector<double> flat = mine.to_flat(), root = flat;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_TRUE(same_bits(flat, root));
}

TEST(FeatureStatsMpi, EmptyRankContributesNothing) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  FeatureStats whole, mine;
  int64_t n = 0;
  std::vector<float> f = dataset_graph(5, &n);
  whole.add_graph(f, n);
  if (rank == 0) mine.add_graph(f, n);
  mine.mpi_allreduce(MPI_COMM_WORLD);
  EXPECT_TRUE(same_bits(mine.to_flat(), whole.to_flat()));
}

int main(int argc, char** argv) { return run_mpi_tests(argc, argv); }
