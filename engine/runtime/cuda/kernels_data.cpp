// CUDA kernel factories of the data family (runtime/cuda/kernel.h): slice,
// transpose, reshape and concat as strided copies derived from the index
// projections (as the CPU's kernels_shape.cpp: both addresses are affine in the
// index point, so a shard is one box copy per input piece); reshape groups
// without a common refinement as a gather by row-major rank; embedding and
// gather; and move, a box move of x into y (box_move.h).
#include <algorithm>
#include <string>

#include "ops/op_util.h"
#include "runtime/cuda/box_move.h"
#include "runtime/cuda/kernel_args.h"

namespace tapestry::cuda {

namespace {

using Made = Expected<std::unique_ptr<Kernel>, std::string>;
using Strides = std::vector<std::int64_t>;

Made refuse(const KernelSpec &spec, const std::string &why) {
    return unexpected(std::string(spec.def->kind()) + ": " + why);
}

std::string too_many_dims() {
    return "the copy has more than " + std::to_string(kMaxLoopRank) + " dims after merging";
}

DType data_dtype(const KernelSpec &spec, size_t port) {
    return spec.operands.at(port).operands.at(0).dtype;
}

ZPoint selection_start(const OperandProjection &p, const ZRange &range, const ZPoint &shape) {
    return op_util::relative_selection(p, range, shape).start();
}

// Where P(point) lies in a view whose origin is `view_start` (elements), and the
// element stride of each index dim.
struct Affine {
    std::int64_t offset = 0;
    Strides steps;
};
Affine affine_address(const IndexProjection &p, const ZPoint &point, const ZPoint &view_start,
                      const Strides &view_strides) {
    Affine a;
    const ZPoint at = p.map().apply(point);
    for (int r = 0; r < at.rank(); ++r) a.offset += (at[r] - view_start[r]) * view_strides[static_cast<size_t>(r)];
    const ZMatrix &m = p.map().matrix();
    a.steps.assign(static_cast<size_t>(m.cols()), 0);
    for (int j = 0; j < m.cols(); ++j)
        for (int r = 0; r < m.rows(); ++r)
            a.steps[static_cast<size_t>(j)] += m.at(r, j) * view_strides[static_cast<size_t>(r)];
    return a;
}

// ---- copies: transpose, slice, refinable reshape, concat ------------------------------------

// One box of the index range copied from input view `input` into the output view.
struct Piece {
    CopyArgs copy;
    size_t input = 0;
    std::int64_t src_offset = 0, dst_offset = 0;  // elements from the views' origins
};

struct Pieces {
    std::vector<Piece> pieces;
};

Status run_pieces(const Pieces &p, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    for (const Piece &piece : p.pieces) {
        const std::int64_t bytes = piece.copy.element_bytes;
        const std::byte *src = in[piece.input].data + piece.src_offset * bytes;
        std::byte *dst = out[0].data + piece.dst_offset * bytes;
        const Loop<2> &l = piece.copy.loop;
        bool in_place = src == dst;  // an aliased reshape: every element is where it belongs
        for (int d = 0; d < l.rank && in_place; ++d) in_place = l.stride[0][d] == l.stride[1][d];
        if (in_place) continue;
        if (auto s = launch_copy(piece.copy, src, dst, stream); !s) return s;
    }
    return std::monostate{};
}

// The copy of index box `range` from input operand (port, operand) into y.
Expected<Piece, std::string> copy_piece(const KernelSpec &spec, const ViewLayouts &views, const ZRange &range,
                                        size_t port, size_t operand, size_t view) {
    const OperandProjection &px = spec.derivation.signature.inputs.at(port).operands.at(operand);
    const OperandProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0);
    const ZPoint &xshape = spec.operands.at(port).operands.at(operand).shape;
    const ZPoint &yshape = spec.derivation.outputs.at(0).operands.at(0).shape;
    const Affine src =
        affine_address(px.projection, range.start(), selection_start(px, spec.index_range, xshape), views.input(view));
    const Affine dst =
        affine_address(py.projection, range.start(), selection_start(py, spec.index_range, yshape), views.output(0));
    LoopBuilder<2> loop;
    for (int j = 0; j < range.rank(); ++j)
        loop.add(range.extent(j), {src.steps[static_cast<size_t>(j)], dst.steps[static_cast<size_t>(j)]});
    const auto l = loop.build();
    if (!l) return unexpected(too_many_dims());
    Piece p;
    p.copy.loop = *l;
    p.copy.element_bytes = dtype_bytes(data_dtype(spec, port));
    p.input = view;
    p.src_offset = src.offset;
    p.dst_offset = dst.offset;
    return p;
}

std::string copy_note(const KernelSpec &spec, const Pieces &p) {
    int engine = 0;
    for (const Piece &piece : p.pieces) {
        const Loop<2> &l = piece.copy.loop;
        const bool dense = l.rank == 0 || (l.rank == 1 && l.stride[0][0] == 1 && l.stride[1][0] == 1);
        const bool rows = l.rank == 2 && l.stride[0][1] == 1 && l.stride[1][1] == 1;
        engine += dense || rows ? 1 : 0;
    }
    return std::string(spec.def->kind()) + ": " + std::to_string(p.pieces.size()) + " box cop" +
           (p.pieces.size() == 1 ? "y" : "ies") + ", " + std::to_string(engine) +
           " by cudaMemcpy(2D)Async, the rest by a strided kernel";
}

Made make_affine_copy(const KernelSpec &spec) {
    const ViewLayouts views(spec);
    auto piece = copy_piece(spec, views, spec.index_range, 0, 0, 0);
    if (!piece) return refuse(spec, piece.error());
    Pieces p{{std::move(*piece)}};
    return launch_kernel<Pieces>(spec, p, run_pieces, copy_note(spec, p));
}

Made make_concat(const KernelSpec &spec) {
    const ViewLayouts views(spec);
    const PortTypes &port = spec.operands.at(0);
    const int rank = port.operands.at(0).shape.rank();
    const int axis = *op_util::normalize_axis(spec.params.get_int("axis", 0), rank);
    if (spec.input_shapes.size() != port.operands.size())
        return refuse(spec, "expects one view per input (" + std::to_string(port.operands.size()) + "), got " +
                                std::to_string(spec.input_shapes.size()));
    Pieces p;
    Coord offset = 0;
    for (size_t k = 0; k < port.operands.size(); ++k) {
        const ZPoint &shape = port.operands[k].shape;
        ZPoint lo = spec.index_range.start(), hi = spec.index_range.end();
        lo[axis] = std::max(lo[axis], offset);
        hi[axis] = std::min(hi[axis], offset + shape[axis]);
        offset += shape[axis];
        if (lo[axis] >= hi[axis]) continue;
        auto piece = copy_piece(spec, views, ZRange(lo, hi), 0, k, k);
        if (!piece) return refuse(spec, piece.error());
        p.pieces.push_back(std::move(*piece));
    }
    return launch_kernel<Pieces>(spec, p, run_pieces, copy_note(spec, p));
}

// ---- reshape without a common refinement --------------------------------------------------

struct Reshape {
    ReshapeArgs args;
    std::int64_t y_offset = 0;
};

Status run_reshape(const Reshape &r, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    return launch_reshape(r.args, in[0].data, out[0].data + r.y_offset * r.args.element_bytes, stream);
}

// Index point i writes y at P_y(i) and reads the x element of the same row-major
// rank; P_y is affine, so the rank and y's address are affine in i.
Made make_reshape_gather(const KernelSpec &spec) {
    const ViewLayouts views(spec);
    const ZRange &range = spec.index_range;
    const OperandProjection &px = spec.derivation.signature.inputs.at(0).operands.at(0);
    const OperandProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0);
    const ZPoint &in_shape = spec.operands.at(0).operands.at(0).shape;
    const ZPoint &out_shape = spec.derivation.outputs.at(0).operands.at(0).shape;
    if (in_shape.rank() > kMaxLoopRank)
        return refuse(spec, "x has more than " + std::to_string(kMaxLoopRank) + " dims");
    const std::vector<Coord> row_major = op_util::row_major_strides(out_shape);
    const Affine rank = affine_address(py.projection, range.start(), ZPoint::zeros(out_shape.rank()), row_major);
    const Affine y =
        affine_address(py.projection, range.start(), selection_start(py, range, out_shape), views.output(0));
    Reshape r;
    LoopBuilder<2> index;
    for (int j = 0; j < range.rank(); ++j)
        index.add(range.extent(j), {rank.steps[static_cast<size_t>(j)], y.steps[static_cast<size_t>(j)]});
    const auto l = index.build();
    if (!l) return refuse(spec, too_many_dims());
    r.args.index = *l;
    r.args.rank0 = rank.offset;
    r.args.element_bytes = dtype_bytes(data_dtype(spec, 0));
    r.y_offset = y.offset;
    const ZPoint x_start = selection_start(px, range, in_shape);
    r.args.x_rank = in_shape.rank();
    for (int d = 0; d < in_shape.rank(); ++d) {
        r.args.x_shape[d] = in_shape[d];
        r.args.x_start[d] = x_start[d];
        r.args.x_stride[d] = views.input(0)[static_cast<size_t>(d)];
    }
    return launch_kernel<Reshape>(spec, r, run_reshape, "reshape: a gather by row-major rank (no common refinement)");
}

Made make_reshape(const KernelSpec &spec) {
    const IndexProjection &px = spec.derivation.signature.inputs.at(0).operands.at(0).projection;
    const auto &w = px.window().coords();
    if (std::all_of(w.begin(), w.end(), [](Coord e) { return e == 1; })) return make_affine_copy(spec);
    return make_reshape_gather(spec);
}

// ---- embedding and gather -----------------------------------------------------------------

struct Take {
    TakeArgs args;
    size_t data_view = 0, ids_view = 1;
};

Status run_take(const Take &t, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    return launch_take(t.args, in[t.data_view].data, in[t.ids_view].data, out[0].data, stream);
}

// y = data.shape[:axis] + ids.shape + data.shape[axis+1:]: per leading point and id
// one block of data's trailing dims.
Made make_take(const KernelSpec &spec, size_t data_view, size_t ids_view, int axis, bool negative_ok) {
    const ViewLayouts views(spec);
    Take t;
    t.data_view = data_view;
    t.ids_view = ids_view;
    t.args.data = data_dtype(spec, data_view);
    t.args.ids = data_dtype(spec, ids_view);
    if (t.args.ids != DType::i32 && t.args.ids != DType::i64)
        return refuse(spec, "ids must be i32 or i64, got " + std::string(dtype_name(t.args.ids)));
    t.args.negative_ok = negative_ok;
    t.args.n = spec.operands.at(data_view).operands.at(0).shape[axis];
    const ZPoint &ds = spec.input_shapes.at(data_view), &is = spec.input_shapes.at(ids_view);
    const Strides &dst = views.input(data_view), &ist = views.input(ids_view), &yst = views.output(0);
    t.args.axis_stride = dst.at(static_cast<size_t>(axis));
    const int r = is.rank();
    LoopBuilder<3> outer;
    for (int d = 0; d < axis; ++d) outer.add(ds[d], {dst[static_cast<size_t>(d)], 0, yst[static_cast<size_t>(d)]});
    for (int d = 0; d < r; ++d) outer.add(is[d], {0, ist[static_cast<size_t>(d)], yst[static_cast<size_t>(axis + d)]});
    LoopBuilder<2> block;
    for (int d = axis + 1; d < ds.rank(); ++d)
        block.add(ds[d], {dst[static_cast<size_t>(d)], yst[static_cast<size_t>(d - 1 + r)]});
    const auto o = outer.build();
    const auto b = block.build();
    if (!o || !b) return refuse(spec, too_many_dims());
    t.args.outer = *o;
    t.args.block = *b;
    return launch_kernel<Take>(spec, t, run_take,
                               std::string(spec.def->kind()) + ": " + std::to_string(t.args.outer.count()) +
                                   " blocks of " + std::to_string(t.args.block.count()) +
                                   " elements; a bad id gives a NaN (0 for integers) block");
}

Made make_embedding(const KernelSpec &spec) {
    return make_take(spec, 1, 0, 0, false);
}

Made make_gather(const KernelSpec &spec) {
    const int rank = spec.operands.at(0).operands.at(0).shape.rank();
    return make_take(spec, 0, 1, *op_util::normalize_axis(spec.params.get_int("axis", 0), rank), true);
}

// ---- move ------------------------------------------------------------------------------------

struct Move {};

Status run_move(const Move &, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    return enqueue_box_move(in[0], out[0], 0, in[0].elements(), false, stream);
}

Made make_move(const KernelSpec &spec) {
    if (spec.input_shapes.at(0) != spec.output_shapes.at(0))
        return refuse(spec, "x and y views differ in shape: " + spec.input_shapes.at(0).to_string() + " and " +
                                spec.output_shapes.at(0).to_string());
    return launch_kernel<Move>(spec, Move{}, run_move, "move: a box move (cudaMemcpy(2D)Async where the boxes allow)");
}

KernelFactory factory(std::string kind, Made (*make)(const KernelSpec &)) {
    KernelFactory f;
    f.kind = std::move(kind);
    f.make = [make](const KernelSpec &spec, Context &) -> Made {
        if (spec.index_range.empty()) return std::unique_ptr<Kernel>(new NoopKernel());
        return make(spec);
    };
    return f;
}

}  // namespace

std::vector<KernelFactory> data_factories() {
    return {factory("slice", make_affine_copy), factory("transpose", make_affine_copy),
            factory("reshape", make_reshape),   factory("concat", make_concat),
            factory("gather", make_gather),     factory("embedding", make_embedding),
            factory("move", make_move)};
}

}  // namespace tapestry::cuda
