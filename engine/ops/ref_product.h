// The matrix product of the reference kernels' fast paths (matmul, linear,
// partial_matmul, conv2d as an implicit product, attention): C += A·B in double,
// cache-blocked and packed, our own loops — no BLAS, so the oracle stays
// independent of what it checks.
#pragma once

#include "index/zpoint.h"

namespace tapestry {

// A strided view of a matrix of doubles: element (r, c) at data[r·row_stride + c·col_stride].
struct ConstMatrixView {
    const double *data = nullptr;
    Coord row_stride = 0, col_stride = 0;
};
struct MatrixView {
    double *data = nullptr;
    Coord row_stride = 0, col_stride = 0;
};

// C (rows × cols) += A (rows × depth) · B (depth × cols). Each element of C adds
// its `depth` products onto its current value one at a time, in the order
// k = 0, 1, …, each product rounded before it is added (no fused multiply-add),
// exactly as the naive loop `c += a[k]·b[k]` does: the result equals that loop's
// bit for bit, whatever the blocking, and does not depend on which other
// elements are computed in the same call. Views may have any strides; C must not
// overlap A or B. Nothing happens when a dimension is 0.
void accumulate_product(Coord rows, Coord cols, Coord depth, ConstMatrixView a, ConstMatrixView b, MatrixView c);

}  // namespace tapestry
