// The SAGE layer's small-matrix kernels (trainer/kernels/vector/small_matmul.h) at the shapes of
// H = 32 and 64, for several register-block sizes: GF/s on one core, best of `rounds`.
// Chooses the blocks the kernels use (outer_block_rows and outer_block_vectors,
// small_matmul_rows' kR); prints a table, asserts nothing.
//   kernel_blocks [ROWS] [ROUNDS]     (default 100000 rows, 3 rounds)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "trainer/kernels/vector/small_matmul.h"

namespace {

using namespace tpuperf::kernels::TPUPERF_VECTOR_NS;
using Clock = std::chrono::steady_clock;

struct Data {
  explicit Data(int64_t rows) : rows(rows), a(rows * 128, 0.5f), b(rows * 128, 0.25f), w(128 * 192, 0.01f), out(rows * 192) {}
  int64_t rows;
  std::vector<float> a, b, w, out;
};

// Best GF/s of `rounds` timed calls of f, which does `flops` floating-point operations.
template <typename F>
double best_gflops(int rounds, double flops, F&& f) {
  double best = 0.0;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    f();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flops / s / 1e9);
  }
  return best;
}

// The weight gradient's kernel as sage_rows.cpp calls it: out (kJ x kM) += g^T b over all
// rows, a block of means (kMeansBlockRows) a call, register blocks of kJB rows x kVB vectors.
template <int kJ, int kM, int kJB, int kVB>
double outer_tile(Data& d, int rounds) {
  return best_gflops(rounds, 2.0 * d.rows * kJ * kM, [&] {
    for (int64_t r = 0; r < d.rows; r += kMeansBlockRows)
      small_outer_rows<kJ, kM, kJB, kVB>(d.a.data(), kJ, d.b.data(), kM, r, std::min(d.rows, r + kMeansBlockRows),
                                         d.out.data(), kM);
  });
}

// Rows of the kernel's whole-row blocks at kM columns, 0 if its blocks are narrower.
constexpr int whole_row_blocks(int kM) { return outer_block_vectors(kM) == kM / kLanes ? outer_block_rows(kM) : 0; }

// The same with blocks of whole rows of outputs (kJB rows).
template <int kJ, int kM, int kJB>
double outer(Data& d, int rounds) {
  return outer_tile<kJ, kM, kJB, kM / kLanes>(d, rounds);
}

// A row of the register-block table: kJ x 64 outputs, the AVX2 blocks to choose from.
template <int kJ>
void outer_tile_row(Data& d, int rounds) {
  std::printf("| %d x 64 | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d x %d |\n", kJ,
              outer_tile<kJ, 64, 1, 8>(d, rounds), outer_tile<kJ, 64, 2, 4>(d, rounds),
              outer_tile<kJ, 64, 4, 2>(d, rounds), outer_tile<kJ, 64, 5, 2>(d, rounds),
              outer_tile<kJ, 64, 6, 2>(d, rounds), outer_tile<kJ, 64, 8, 1>(d, rounds),
              outer_tile<kJ, 64, 3, 4>(d, rounds), outer_tile<kJ, 64, 7, 2>(d, rounds), outer_block_rows(64),
              outer_block_vectors(64));
}

// The SAGE layer's matmuls as sage_rows.cpp calls them (matmul_rows, the blocks it chooses),
// per block of means (kMeansBlockRows): x @ w_x, then means @ w_means (forward); x's
// gradient has the same shapes (g, then the means of g).
template <int kH>
double forward_as_called(Data& d, int rounds) {
  return best_gflops(rounds, 2.0 * d.rows * 3 * kH * kH, [&] {
    for (int64_t r = 0; r < d.rows; r += kMeansBlockRows) {
      const int64_t e = std::min(d.rows, r + kMeansBlockRows);
      matmul_rows<kH, kH>(d.a.data(), kH, r, e, d.w.data(), d.out.data(), kH, true);
      matmul_rows<2 * kH, kH>(d.b.data(), 2 * kH, r, e, d.w.data() + kH * kH, d.out.data(), kH, true);
    }
  });
}

// The forward's kernel: out[r] += a[r] @ w over all rows, kR rows per register block, in
// the kernels' tasks of 32 rows.
template <int kK, int kM, int kR>
double matmul(Data& d, int rounds) {
  return best_gflops(rounds, 2.0 * d.rows * kK * kM, [&] {
    for (int64_t r = 0; r < d.rows; r += 32)
      small_matmul_rows<kK, kM, kR>(d.a.data(), kK, r, std::min(d.rows, r + 32), d.w.data(), kM, d.out.data(), kM, true);
  });
}

// The weight gradient in blocks of kMB output columns, kJB output rows each.
template <int kJ, int kM, int kMB, int kJB>
double outer_split(Data& d, int rounds) {
  return best_gflops(rounds, 2.0 * d.rows * kJ * kM, [&] {
    for (int c = 0; c < kM; c += kMB)
      small_outer_rows<kJ, kMB, kJB>(d.a.data(), kJ, d.b.data() + c, kM, 0, d.rows, d.out.data() + c, kM);
  });
}

// The same in blocks of kMB output columns (each block's rows stream again), for register
// files too small for a whole row's outputs (AVX2's 16 registers at 64 columns).
template <int kK, int kM, int kMB, int kR>
double matmul_split(Data& d, int rounds) {
  return best_gflops(rounds, 2.0 * d.rows * kK * kM, [&] {
    for (int64_t r = 0; r < d.rows; r += 32)
      for (int c = 0; c < kM; c += kMB)
        small_matmul_rows<kK, kMB, kR>(d.a.data(), kK, r, std::min(d.rows, r + 32), d.w.data() + c, kM,
                                       d.out.data() + c, kM, true);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  Data d(rows);
  std::printf("%lld rows, best of %d rounds, GF/s on one core (%d floats a vector)\n\n",
              static_cast<long long>(rows), rounds, kLanes);
  // used: the rows of the whole-row blocks the kernel uses; 0 where it uses narrower blocks (below).
  std::printf("| weight gradient g^T b, whole rows | 2 rows | 4 rows | 8 rows | 16 rows | used |\n|---|---:|---:|---:|---:|---:|\n");
  std::printf("| 32 x 32 | %.0f | %.0f | %.0f | %.0f | %d |\n", outer<32, 32, 2>(d, rounds), outer<32, 32, 4>(d, rounds),
              outer<32, 32, 8>(d, rounds), outer<32, 32, 16>(d, rounds), whole_row_blocks(32));
  std::printf("| 64 x 32 | %.0f | %.0f | %.0f | %.0f | %d |\n", outer<64, 32, 2>(d, rounds), outer<64, 32, 4>(d, rounds),
              outer<64, 32, 8>(d, rounds), outer<64, 32, 16>(d, rounds), whole_row_blocks(32));
  std::printf("| 64 x 64 | %.0f | %.0f | %.0f | %.0f | %d |\n", outer<64, 64, 2>(d, rounds), outer<64, 64, 4>(d, rounds),
              outer<64, 64, 8>(d, rounds), outer<64, 64, 16>(d, rounds), whole_row_blocks(64));
  std::printf("| 128 x 64 | %.0f | %.0f | %.0f | %.0f | %d |\n", outer<128, 64, 2>(d, rounds), outer<128, 64, 4>(d, rounds),
              outer<128, 64, 8>(d, rounds), outer<128, 64, 16>(d, rounds), whole_row_blocks(64));
  if constexpr (kLanes == 8) {  // AVX2's 16 registers: blocks narrower than a row of 64 outputs
    std::printf("\n| g^T b, register blocks of rows x vectors | 1 x 8 | 2 x 4 | 4 x 2 | 5 x 2 | 6 x 2 | 8 x 1 | 3 x 4 | 7 x 2 | used |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    outer_tile_row<64>(d, rounds);
    outer_tile_row<128>(d, rounds);
  }
  std::printf("\n| as sage_rows.cpp calls them | H = 32 | H = 64 |\n|---|---:|---:|\n");
  std::printf("| forward, x's gradient | %.0f | %.0f |\n", forward_as_called<32>(d, rounds), forward_as_called<64>(d, rounds));
  std::printf("\n| g^T b in 32-column blocks | 2 rows | 4 rows | 8 rows | 16 rows |\n|---|---:|---:|---:|---:|\n");
  std::printf("| 128 x 64 | %.0f | %.0f | %.0f | %.0f |\n", outer_split<128, 64, 32, 2>(d, rounds),
              outer_split<128, 64, 32, 4>(d, rounds), outer_split<128, 64, 32, 8>(d, rounds),
              outer_split<128, 64, 32, 16>(d, rounds));
  std::printf("| 64 x 64 | %.0f | %.0f | %.0f | %.0f |\n", outer_split<64, 64, 32, 2>(d, rounds),
              outer_split<64, 64, 32, 4>(d, rounds), outer_split<64, 64, 32, 8>(d, rounds),
              outer_split<64, 64, 32, 16>(d, rounds));
  std::printf("\n| rows @ w | 1 row | 2 rows | 3 rows | 4 rows | 6 rows | used |\n|---|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| 32 -> 32 | %.0f | %.0f | %.0f | %.0f | %.0f | %d |\n", matmul<32, 32, 1>(d, rounds), matmul<32, 32, 2>(d, rounds),
              matmul<32, 32, 3>(d, rounds), matmul<32, 32, 4>(d, rounds), matmul<32, 32, 6>(d, rounds), matmul_block_rows(32));
  std::printf("| 64 -> 64 | %.0f | %.0f | %.0f | %.0f | %.0f | %d |\n", matmul<64, 64, 1>(d, rounds), matmul<64, 64, 2>(d, rounds),
              matmul<64, 64, 3>(d, rounds), matmul<64, 64, 4>(d, rounds), matmul<64, 64, 6>(d, rounds), matmul_block_rows(64));
  std::printf("| 128 -> 64 | %.0f | %.0f | %.0f | %.0f | %.0f | %d |\n", matmul<128, 64, 1>(d, rounds), matmul<128, 64, 2>(d, rounds),
              matmul<128, 64, 3>(d, rounds), matmul<128, 64, 4>(d, rounds), matmul<128, 64, 6>(d, rounds), matmul_block_rows(64));
  std::printf("\n| rows @ w in 32-column blocks | 1 row | 2 rows | 3 rows | 4 rows | 6 rows | used |\n"
              "|---|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| 64 -> 64 | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", matmul_split<64, 64, 32, 1>(d, rounds),
              matmul_split<64, 64, 32, 2>(d, rounds), matmul_split<64, 64, 32, 3>(d, rounds),
              matmul_split<64, 64, 32, 4>(d, rounds), matmul_split<64, 64, 32, 6>(d, rounds),
              matmul_column_block(64) == 32 ? "yes" : "no");
  std::printf("| 128 -> 64 | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", matmul_split<128, 64, 32, 1>(d, rounds),
              matmul_split<128, 64, 32, 2>(d, rounds), matmul_split<128, 64, 32, 3>(d, rounds),
              matmul_split<128, 64, 32, 4>(d, rounds), matmul_split<128, 64, 32, 6>(d, rounds),
              matmul_column_block(64) == 32 ? "yes" : "no");
  return 0;
}
