// The blocked double product of the reference fast paths. Goto-style: panels of
// B (kKc × kNc) and of A (kMc × kKc) are packed into contiguous micro-panels, and
// a kMr × kNr register tile of C accumulates one k at a time, so that every
// element still sums its products in k order.
#include "ops/ref_product.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tapestry {
namespace {

constexpr Coord kMr = 4;     // rows of the register tile
constexpr Coord kNr = 8;     // columns of the register tile: two vectors of 4 doubles
constexpr Coord kKc = 256;   // depth of a packed panel: a micro-panel of B (16 KiB) stays in L1
constexpr Coord kMc = 96;    // rows of a packed A block (192 KiB, in L2)
constexpr Coord kNc = 1024;  // columns of a packed B block (2 MiB, in L3)

Coord round_up(Coord v, Coord to) {
    return (v + to - 1) / to * to;
}

// Built for AVX2 and for the x86-64 baseline, picked at load time by the CPU
// (function multiversioning). AVX2 without FMA on purpose: a fused multiply-add
// rounds once where the naive loop rounds twice, and the fast path must give the
// naive loop's values.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TAPESTRY_PRODUCT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TAPESTRY_PRODUCT_CLONES
#endif

using Vec4 = double __attribute__((vector_size(32)));

// tile (kMr × kNr, row-major) += a · b over `depth` steps, a packed as depth × kMr
// and b as depth × kNr. Written out by hand so that the eight accumulators stay
// in registers; vectors never cross a call (their ABI differs between clones).
TAPESTRY_PRODUCT_CLONES
void multiply_tile(Coord depth, const double *a, const double *b, double *tile) {
    Vec4 c00, c01, c10, c11, c20, c21, c30, c31;
    std::memcpy(&c00, tile + 0, sizeof(Vec4));
    std::memcpy(&c01, tile + 4, sizeof(Vec4));
    std::memcpy(&c10, tile + 8, sizeof(Vec4));
    std::memcpy(&c11, tile + 12, sizeof(Vec4));
    std::memcpy(&c20, tile + 16, sizeof(Vec4));
    std::memcpy(&c21, tile + 20, sizeof(Vec4));
    std::memcpy(&c30, tile + 24, sizeof(Vec4));
    std::memcpy(&c31, tile + 28, sizeof(Vec4));
    for (Coord k = 0; k < depth; ++k) {
        Vec4 b0, b1;
        std::memcpy(&b0, b + k * kNr, sizeof(Vec4));
        std::memcpy(&b1, b + k * kNr + 4, sizeof(Vec4));
        const double *ak = a + k * kMr;
        c00 += ak[0] * b0;
        c01 += ak[0] * b1;
        c10 += ak[1] * b0;
        c11 += ak[1] * b1;
        c20 += ak[2] * b0;
        c21 += ak[2] * b1;
        c30 += ak[3] * b0;
        c31 += ak[3] * b1;
    }
    std::memcpy(tile + 0, &c00, sizeof(Vec4));
    std::memcpy(tile + 4, &c01, sizeof(Vec4));
    std::memcpy(tile + 8, &c10, sizeof(Vec4));
    std::memcpy(tile + 12, &c11, sizeof(Vec4));
    std::memcpy(tile + 16, &c20, sizeof(Vec4));
    std::memcpy(tile + 20, &c21, sizeof(Vec4));
    std::memcpy(tile + 24, &c30, sizeof(Vec4));
    std::memcpy(tile + 28, &c31, sizeof(Vec4));
}

// Packs an n × depth block, element (i, k) at m[i·stride_i + k·stride_k], into
// micro-panels of `width` values of i: element (i, k) goes to panel i / width at
// k·width + i % width, and the i past n are zero. The source is walked along its
// smaller stride (a weight matrix by rows, kᵀ by columns): cache lines are read
// whole and in order, where walking across them would wait on memory per value.
template <Coord width>
void pack_panels(const double *m, Coord n, Coord depth, Coord stride_i, Coord stride_k, double *to) {
    const Coord padded = round_up(n, width);
    auto at = [&](Coord i, Coord k) -> double & { return to[(i / width) * depth * width + k * width + i % width]; };
    if (std::abs(stride_k) <= std::abs(stride_i)) {
        for (Coord i = 0; i < n; ++i)
            for (Coord k = 0; k < depth; ++k) at(i, k) = m[i * stride_i + k * stride_k];
    } else {
        for (Coord k = 0; k < depth; ++k)
            for (Coord i = 0; i < n; ++i) at(i, k) = m[i * stride_i + k * stride_k];
    }
    for (Coord i = n; i < padded; ++i)
        for (Coord k = 0; k < depth; ++k) at(i, k) = 0.0;
}

// One register tile: C's rows × cols corner (at most kMr × kNr) through a local
// copy, so that edges and any strides of C take the same path.
void update_tile(Coord rows, Coord cols, Coord depth, const double *a_panel, const double *b_panel, MatrixView c) {
    double tile[kMr * kNr] = {};
    if (cols == kNr && c.col_stride == 1) {  // whole rows of C: copied as such
        for (Coord r = 0; r < rows; ++r) std::memcpy(tile + r * kNr, c.data + r * c.row_stride, sizeof(double) * kNr);
        multiply_tile(depth, a_panel, b_panel, tile);
        for (Coord r = 0; r < rows; ++r) std::memcpy(c.data + r * c.row_stride, tile + r * kNr, sizeof(double) * kNr);
        return;
    }
    for (Coord r = 0; r < rows; ++r)
        for (Coord col = 0; col < cols; ++col) tile[r * kNr + col] = c.data[r * c.row_stride + col * c.col_stride];
    multiply_tile(depth, a_panel, b_panel, tile);
    for (Coord r = 0; r < rows; ++r)
        for (Coord col = 0; col < cols; ++col) c.data[r * c.row_stride + col * c.col_stride] = tile[r * kNr + col];
}

ConstMatrixView offset(ConstMatrixView m, Coord row, Coord col) {
    return {m.data + row * m.row_stride + col * m.col_stride, m.row_stride, m.col_stride};
}
MatrixView offset(MatrixView m, Coord row, Coord col) {
    return {m.data + row * m.row_stride + col * m.col_stride, m.row_stride, m.col_stride};
}

}  // namespace

void accumulate_product(Coord rows, Coord cols, Coord depth, ConstMatrixView a, ConstMatrixView b, MatrixView c) {
    if (rows <= 0 || cols <= 0 || depth <= 0) return;
    std::vector<double> a_pack(static_cast<size_t>(round_up(std::min(rows, kMc), kMr) * std::min(depth, kKc)));
    std::vector<double> b_pack(static_cast<size_t>(round_up(std::min(cols, kNc), kNr) * std::min(depth, kKc)));
    for (Coord jc = 0; jc < cols; jc += kNc) {
        const Coord nc = std::min(kNc, cols - jc);
        // Blocks of k in increasing order: each element keeps summing in k order.
        for (Coord pc = 0; pc < depth; pc += kKc) {
            const Coord kc = std::min(kKc, depth - pc);
            const ConstMatrixView bp = offset(b, pc, jc);
            pack_panels<kNr>(bp.data, nc, kc, bp.col_stride, bp.row_stride, b_pack.data());
            for (Coord ic = 0; ic < rows; ic += kMc) {
                const Coord mc = std::min(kMc, rows - ic);
                const ConstMatrixView ap = offset(a, ic, pc);
                pack_panels<kMr>(ap.data, mc, kc, ap.row_stride, ap.col_stride, a_pack.data());
                for (Coord jr = 0; jr < nc; jr += kNr)
                    for (Coord ir = 0; ir < mc; ir += kMr)
                        update_tile(std::min(kMr, mc - ir), std::min(kNr, nc - jr), kc, a_pack.data() + ir * kc,
                                    b_pack.data() + jr * kc, offset(c, ic + ir, jc + jr));
            }
        }
    }
}

}  // namespace tapestry
