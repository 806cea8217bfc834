// Shared helpers for OpDef implementations (ops/<family>.cpp): derivation errors
// with their fields, axis normalisation, NumPy broadcasting, building index
// projections row by row, parameter specs, iterating a projected window, and the
// flat offsets and row walks of the kernels' fast paths.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/expected.h"
#include "graph/params.h"
#include "graph/signature.h"
#include "index/index_projection.h"
#include "ops/op_def.h"

namespace tapestry::op_util {

// ---- errors and fields ---------------------------------------------------------

// A DerivationError value (for `return unexpected(derivation_error(...))`).
DerivationError derivation_error(std::string code, std::string field, std::string message);
// "inputs.w[0]" — the field of operand `operand` of input port `port`.
std::string input_field(std::string_view port, size_t operand = 0);
// "params.axes"
std::string param_field(std::string_view param);
// "[2, 3]" ("[]" for rank 0).
std::string shape_string(const ZPoint &shape);

// ---- operands ------------------------------------------------------------------

// The port named `port` among `inputs` (which OpLibrary passes in declared port
// order, absent optional ports left out), or nullptr.
const PortTypes *find_port(const std::vector<PortTypes> &inputs, std::string_view port);
// The first operand of a port; nullptr when the port is absent or empty.
const OperandType *find_operand(const std::vector<PortTypes> &inputs, std::string_view port);

// "dtype-mismatch" unless `t` is a floating dtype:
// "<kind>: <port> must have a floating dtype, got i32".
std::optional<DerivationError> require_float(std::string_view kind, std::string_view port, const OperandType &t,
                                             size_t operand = 0);
// "dtype-mismatch" unless `t` has dtype `expected`:
// "<kind>: <port> is i32 but <reference_port> is f32".
std::optional<DerivationError> require_same_dtype(std::string_view kind, std::string_view port, const OperandType &t,
                                                  std::string_view reference_port, DType expected,
                                                  size_t operand = 0);
// "rank-mismatch" unless t.shape.rank() >= min_rank:
// "<kind>: <port> must have rank at least 2, got rank 1 [5]".
std::optional<DerivationError> require_min_rank(std::string_view kind, std::string_view port, const OperandType &t,
                                                int min_rank, size_t operand = 0);

// ---- axes ------------------------------------------------------------------------

// NumPy axis normalisation: axis in [-rank, rank) → [0, rank); nullopt otherwise.
std::optional<int> normalize_axis(std::int64_t axis, int rank);
// One axis parameter checked against an operand of rank `rank`; the error is
// "bad-param" at params.<param>: "<kind>: axis 3 is out of range for x of rank 2".
Expected<int, DerivationError> checked_axis(std::string_view kind, std::string_view param, std::int64_t axis,
                                            int rank, std::string_view port = "x");
// A list of axes: normalised, sorted ascending. Errors (bad-param at
// params.<param>): empty list (unless allow_empty), an axis out of range, an axis
// named twice ("<kind>: axis 1 is named twice in axes").
Expected<std::vector<int>, DerivationError> checked_axes(std::string_view kind, std::string_view param,
                                                         const std::vector<std::int64_t> &axes, int rank,
                                                         std::string_view port = "x", bool allow_empty = false);

// ---- broadcasting -----------------------------------------------------------------

// The NumPy broadcast of two shapes (aligned on the right; a size-1 or missing
// dimension stretches), or nullopt when some aligned pair differs and neither is 1.
std::optional<ZPoint> broadcast_shapes(const ZPoint &a, const ZPoint &b);
// The projection by which an index point of the broadcast output `out_shape` reads
// an operand of shape `operand_shape` (rank <= out rank): tensor dim j follows index
// dim (out_rank - rank + j), except a stretched dim (operand 1, output not 1),
// which gets a zero row. Unit window. A rank-0 operand gives a 0-row projection.
// Example: [1, 10] in [10, 10, 10] → "[0 0 0 | 0 | 1; 0 0 1 | 0 | 1]".
IndexProjection broadcast_projection(const ZPoint &operand_shape, const ZPoint &out_shape);

// ---- building projections -------------------------------------------------------------

// Row-by-row construction of an IndexProjection over an index space of rank
// `index_rank`. Each call adds one tensor dimension (row).
class ProjectionBuilder {
public:
    explicit ProjectionBuilder(int index_rank) : index_rank_(index_rank) {}
    // Row coefficient 1 on index dim `index_dim`, with an offset and a window.
    ProjectionBuilder &follow(int index_dim, Coord offset = 0, Coord window = 1);
    // Row coefficient `coef` on index dim `index_dim`.
    ProjectionBuilder &scaled(int index_dim, Coord coef, Coord offset = 0, Coord window = 1);
    // Zero row: every index point reads [offset, offset + window) along this dim
    // (a broadcast dim with window 1, a contraction or reduction with window = extent).
    ProjectionBuilder &fixed(Coord window, Coord offset = 0);
    // Arbitrary row: coefficients per index dim.
    ProjectionBuilder &row(const std::vector<Coord> &coefficients, Coord offset = 0, Coord window = 1);
    IndexProjection build() const;

private:
    int index_rank_;
    std::vector<std::vector<Coord>> rows_;
    std::vector<Coord> offsets_;
    std::vector<Coord> windows_;
};

// An unclipped operand projection (OperandProjection{p, false}).
OperandProjection unclipped(IndexProjection p);
// Port projections with one operand each: {{"x", {P}}, …}.
PortProjections port_projection(std::string port, IndexProjection p, bool clipped = false);

// The common single-output derivation: output port "y" of `dtype` and `shape`,
// index space `index_space`, output projection identity (rank of shape must equal
// rank of the index space) unless `output_projection` is given.
Derivation single_output(DType dtype, const ZPoint &shape, const ZRange &index_space,
                         std::vector<PortProjections> inputs,
                         std::optional<IndexProjection> output_projection = std::nullopt);

// ---- parameter specs --------------------------------------------------------------------

ParamSpec required_param(std::string name, ParamKind kind, std::string doc);
ParamSpec int_param(std::string name, std::int64_t default_value, std::string doc);
ParamSpec float_param(std::string name, double default_value, std::string doc);
ParamSpec bool_param(std::string name, bool default_value, std::string doc);
ParamSpec ints_param(std::string name, std::vector<std::int64_t> default_value, std::string doc);
ParamSpec choice_param(std::string name, std::string default_value, std::vector<std::string> choices,
                       std::string doc);

// ---- windows ------------------------------------------------------------------------------

// Calls f(element) for every element of the box projection `p` touches at index
// point `i` (row-major): the elements a reference kernel reads at that point.
template <typename F> void for_each_window_element(const IndexProjection &p, const ZPoint &i, F &&f) {
    p.apply(i).for_each_point(f);
}

// Number of elements of one projected window (the product of the window).
inline Coord window_size(const IndexProjection &p) { return p.window().product(); }

// The selection an index sub-range touches through a relative operand projection
// of an operand of `shape`: its image, intersected with [0, shape) when clipped
// (graph/resolve.h's selection_of for zero-origin operands).
ZRange relative_selection(const OperandProjection &p, const ZRange &index_range, const ZPoint &shape);

// ---- reference kernels ------------------------------------------------------------------

// The relative projection of operand `operand` of input port `port` (TAPESTRY_CHECK
// that it exists — a kernel asks only for ports its derive() produced).
const IndexProjection &input_projection(const Derivation &d, std::string_view port, size_t operand = 0);
// The projection of output port "y" (or `port`).
const IndexProjection &output_projection(const Derivation &d, std::string_view port = "y", size_t operand = 0);

// ---- fast paths of reference kernels ------------------------------------------------------
// Building blocks for RefContext::fast() paths: they walk the arrays' data with
// flat offsets instead of building a ZPoint per element.

// Row-major strides of an array of `shape` (the last dim has stride 1).
std::vector<Coord> row_major_strides(const ZPoint &shape);

// Where the element a projection's map sends an index point to lies in the data
// of a zero-origin row-major array: a linear function of the point (strides ·
// (A·i + b)), so it steps by a constant along each index dim. Valid for points
// whose element lies inside the array: an unclipped projection's do; a clipped
// one's need a bounds check first.
class FlatOffset {
public:
    FlatOffset(const IndexProjection &p, const ZPoint &array_shape);
    Coord at(const ZPoint &index_point) const;
    // How far the offset moves when index dim `d` grows by one; 0 for a dim the
    // map does not have (d < 0 or beyond its index rank: a rank-0 space's rows).
    Coord step(int d) const;

private:
    std::vector<Coord> steps_;
    Coord constant_ = 0;
};

// Calls f(corner) for every point of `range` whose last `inner` coordinates are
// at the range's start — the corners of its inner blocks of that many dims — in
// row-major order. inner >= rank: one call with range.start(). No call for an
// empty range.
template <typename F>
void for_each_block(const ZRange &range, int inner, F &&f) {
    if (range.empty()) return;
    const int outer = std::max(range.rank() - inner, 0);
    ZPoint end = range.start();
    for (int d = 0; d < outer; ++d) end[d] = range.end()[d];
    for (int d = outer; d < range.rank(); ++d) end[d] = range.start()[d] + 1;
    ZRange(range.start(), end).for_each_point(f);
}

// Calls f(start, length) for every row of `range` along its last dim, in
// row-major order; a rank-0 range is one row of length 1.
template <typename F>
void for_each_row(const ZRange &range, F &&f) {
    const Coord length = range.rank() == 0 ? 1 : range.extent(range.rank() - 1);
    for_each_block(range, 1, [&](const ZPoint &start) { f(start, length); });
}

// The fast path of a kernel each of whose index points reads one element of each
// input of `in` (port i, operand 0, through projection in[i]) and writes f(those
// values…) to one element of output 0 through `out`: elementwise ops and copies.
// The projections must be unclipped with unit windows; f takes N doubles.
template <size_t N, typename F>
void map_elements(const RefContext &ctx, const std::array<const IndexProjection *, N> &in, const IndexProjection &out,
                  F &&f) {
    std::vector<FlatOffset> from;
    for (size_t k = 0; k < N; ++k) from.emplace_back(*in[k], ctx.input_shape(static_cast<int>(k)));
    const FlatOffset to(out, ctx.output(0).range.end());
    const int last = ctx.index_range.rank() - 1;
    for_each_row(ctx.index_range, [&](const ZPoint &start, Coord length) {
        std::array<const double *, N> x;
        std::array<Coord, N> x_step;
        for (size_t k = 0; k < N; ++k) {
            x[k] = ctx.input(static_cast<int>(k)).data.data() + from[k].at(start);
            x_step[k] = from[k].step(last);
        }
        double *y = ctx.output(0).data.data() + to.at(start);
        std::array<double, N> values;
        for (Coord j = 0; j < length; ++j) {
            for (size_t k = 0; k < N; ++k) values[k] = x[k][j * x_step[k]];
            y[j * to.step(last)] = std::apply(f, values);
        }
    });
}

// ---- reduction monoids --------------------------------------------------------------------

ReductionMonoid sum_monoid();
ReductionMonoid max_monoid();
// Mean as (n, Σx); lower = Σx / n.
ReductionMonoid mean_monoid();
// Moments (n, Σx, Σx²); lower = the population variance Σx²/n − (Σx/n)².
ReductionMonoid moments_monoid();
// Mean square (n, Σx²); lower = Σx²/n (rmsnorm's statistic).
ReductionMonoid mean_square_monoid();
// Online softmax (m, s) with m = max x and s = Σ exp(x − m); lower = log-sum-exp
// m + log s. softmax(x_i) = exp(x_i − lower).
ReductionMonoid logsumexp_monoid();

// Folds values into a fresh accumulator of `m` and lowers it (for tests and kernels).
double reduce_with(const ReductionMonoid &m, const std::vector<double> &values);

}  // namespace tapestry::op_util
