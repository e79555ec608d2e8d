// row_linear's loops (trainer/kernels/row_linear.cpp splits the rows into tasks and owns
// the tensors): a linear layer y = x W^T + b over float rows, out features a multiple of
// 64, any number of in features K, with the register-blocked kernels of small_matmul.h in
// place of the BLAS, which packs both operands first: at the layout default's config terms
// (9,600 rows; K = 27 and 64; 64 and 192 outputs) F::linear's forward and backward took
// 1.10-1.28x as long on the AVX2 path and 1.97-2.10x with AVX-512 (in-process, E52).
#include "trainer/kernels/vector/rows.h"

#include <algorithm>

#include "trainer/kernels/vector/small_matmul.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {
namespace {

// Rows per block: a block's rows of x and of the gradient stay in cache between the input
// gradient, the weight gradient and the bias sums.
constexpr int64_t kLinearBlockRows = 64;

// The weight gradient's output columns per pass: the 64-column register blocks
// (outer_block_rows / outer_block_vectors) the SAGE backward uses.
constexpr int kOuterColumns = 64;

// out rows [0, J) (row stride ldo) += sum over n rows r of a[r, :J]^T b[r, vectors 0 .. kVB)
// (row strides lda, ldb), J any: register blocks of kJB rows, the rest in halves.
template <int kJB, int kVB>
void outer_any_rows(const float* a, int64_t lda, int64_t J, const float* b, int64_t ldb, int64_t n, float* out,
                    int64_t ldo) {
  int64_t j = 0;
  for (; j + kJB <= J; j += kJB) outer_register_block<kJB, kVB>(a + j, lda, b, ldb, n, out + j * ldo, ldo);
  if constexpr (kJB > 1) {
    if (j < J) outer_any_rows<kJB / 2, kVB>(a + j, lda, J - j, b, ldb, n, out + j * ldo, ldo);
  }
}

// out (J x 64, row stride ldo) += sum over n rows r of a[r, :J]^T b[r, :64].
void outer_columns(const float* a, int64_t lda, int64_t J, const float* b, int64_t ldb, int64_t n, float* out,
                   int64_t ldo) {
  constexpr int kJB = outer_block_rows(kOuterColumns), kVB = outer_block_vectors(kOuterColumns);
  for (int c = 0; c < kOuterColumns / kLanes; c += kVB)
    outer_any_rows<kJB, kVB>(a, lda, J, b + c * kLanes, ldb, n, out + c * kLanes, ldo);
}

}  // namespace

void linear_forward(int64_t K, int64_t M, const float* x, int64_t r0, int64_t r1, const float* wt,
                    const float* bias, float* y) {
  constexpr int kMB = matmul_column_block(kOuterColumns);
  for (int64_t b0 = r0; b0 < r1; b0 += kLinearBlockRows) {
    const int64_t e0 = std::min(r1, b0 + kLinearBlockRows);
    for (int64_t r = b0; r < e0; ++r)
      for (int64_t j = 0; j < M; j += kLanes) store_vec(y + r * M + j, bias ? load_vec(bias + j) : FloatVec{});
    for (int64_t c = 0; c < M; c += kMB) matmul_rows_k<kMB>(x, K, K, b0, e0, wt + c, M, y + c, M, true);
  }
}

void linear_backward(int64_t K, int64_t M, const float* x, const float* g, int64_t r0, int64_t r1, const float* w,
                     float* gx, float* gwt, double* gb) {
  constexpr int kMB = matmul_column_block(kOuterColumns);
  std::fill(gwt, gwt + K * M, 0.0f);
  std::fill(gb, gb + M, 0.0);
  for (int64_t b0 = r0; b0 < r1; b0 += kLinearBlockRows) {
    const int64_t e0 = std::min(r1, b0 + kLinearBlockRows);
    if (gx)
      for (int64_t c = 0; c < K; c += kMB) matmul_rows_k<kMB>(g, M, M, b0, e0, w + c, K, gx + c, K, false);
    for (int64_t c = 0; c < M; c += kOuterColumns)
      outer_columns(x + b0 * K, K, K, g + b0 * M + c, M, e0 - b0, gwt + c, M);
    for (int64_t c = 0; c < M; c += 32) {  // the bias's sums, 32 columns at a time, rows in order
      Row32Double sums;
      for (int64_t r = b0; r < e0; ++r) sums.add(load_row32(g + r * M + c));
      double partial[32];
      sums.store(partial);
      for (int j = 0; j < 32; ++j) gb[c + j] += partial[j];
    }
  }
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
