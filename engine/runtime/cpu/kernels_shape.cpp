// CPU kernels of the shape ops — transpose, slice, reshape and concat — as
// strided copies derived from the index projections: one oneDNN reorder per piece
// where the strides allow it, a plain loop otherwise (negative steps, steps that
// do not nest, i64); a reshape without a common refinement of its groups copies
// element by element.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "ops/op_util.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {

namespace {

using dims = dnnl::memory::dims;

// A copy of an index sub-range R through two affine projections: the point i
// reads src at P_src(i) and writes dst at P_dst(i). Relative to the views (which
// start at their selections), both addresses are affine in i, so the copy is a
// box of R's shape with one element stride per index dim on each side.

struct CopyPlan {
    std::vector<std::int64_t> shape;
    Strides src, dst;
    std::int64_t src_offset = 0, dst_offset = 0;  // elements from the views' origins
    size_t src_view = 0, dst_view = 0;            // input index, output index

    // Drops unit dims and merges dims contiguous on both sides.
    void simplify() {
        std::vector<std::int64_t> s;
        Strides a, b;
        for (size_t d = 0; d < shape.size(); ++d) {
            if (shape[d] == 1) continue;
            if (!s.empty() && a.back() == src[d] * shape[d] && b.back() == dst[d] * shape[d]) {
                s.back() *= shape[d];
                a.back() = src[d];
                b.back() = dst[d];
                continue;
            }
            s.push_back(shape[d]);
            a.push_back(src[d]);
            b.push_back(dst[d]);
        }
        shape = std::move(s);
        src = std::move(a);
        dst = std::move(b);
    }
    std::int64_t elements() const {
        std::int64_t n = 1;
        for (std::int64_t e : shape) n *= e;
        return n;
    }
};

// The element offset of P(point) inside a view whose origin is `sel_start`, and
// the element stride of each index dim.
void affine_address(const IndexProjection &p, const ZPoint &point, const ZPoint &sel_start, const Strides &view_strides,
                    std::int64_t &offset, Strides &strides) {
    const ZPoint at = p.map().apply(point);
    offset = 0;
    for (int r = 0; r < at.rank(); ++r) offset += (at[r] - sel_start[r]) * view_strides[static_cast<size_t>(r)];
    const ZMatrix &a = p.map().matrix();
    strides.assign(static_cast<size_t>(a.cols()), 0);
    for (int j = 0; j < a.cols(); ++j)
        for (int r = 0; r < a.rows(); ++r)
            strides[static_cast<size_t>(j)] += a.at(r, j) * view_strides[static_cast<size_t>(r)];
}

CopyPlan make_copy_plan(const ZRange &range, const IndexProjection &src_p, const ZPoint &src_sel_start,
                        const Strides &src_strides, const IndexProjection &dst_p, const ZPoint &dst_sel_start,
                        const Strides &dst_strides) {
    CopyPlan c;
    c.shape = range.shape().to_vector();
    affine_address(src_p, range.start(), src_sel_start, src_strides, c.src_offset, c.src);
    affine_address(dst_p, range.start(), dst_sel_start, dst_strides, c.dst_offset, c.dst);
    c.simplify();
    return c;
}

// Runs copy plans: each through a prepared oneDNN reorder when its dtype and
// strides allow one, else a loop (memcpy of contiguous runs).
class CopyKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, std::vector<CopyPlan> plans,
                                                               DType dtype) {
        return dnnl_guard(std::string(spec.def->kind()), [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<CopyKernel>(new CopyKernel());
            k->threads_ = spec.threads;
            k->esize_ = dtype_bytes(dtype);
            for (size_t i = 0; i < spec.input_shapes.size(); ++i) k->in_strides_.push_back(spec_input_strides(spec, i));
            k->out_strides_ = spec_output_strides(spec, 0);
            const auto t = dnnl_dtype(dtype);
            for (CopyPlan &p : plans) {
                Piece piece;
                // Negative steps, and steps that do not nest (a stepped read of a
                // tight box of a buffer), are layouts oneDNN cannot describe: a loop.
                const bool describable = dnnl_describable(p.shape, p.src) && dnnl_describable(p.shape, p.dst);
                // A single contiguous run is a memcpy; oneDNN is for real reshuffles.
                const bool contiguous = p.shape.size() <= 1 && (p.shape.empty() || (p.src[0] == 1 && p.dst[0] == 1));
                if (t && describable && !contiguous && p.shape.size() <= DNNL_MAX_NDIMS && p.elements() > 0) {
                    const dnnl::memory::desc smd(dims(p.shape.begin(), p.shape.end()), *t,
                                                 dims(p.src.begin(), p.src.end()));
                    const dnnl::memory::desc dmd(dims(p.shape.begin(), p.shape.end()), *t,
                                                 dims(p.dst.begin(), p.dst.end()));
                    const dnnl::reorder::primitive_desc pd(cpu_engine(), smd, cpu_engine(), dmd, make_attr());
                    piece.reorder = dnnl::reorder(pd);
                    piece.src = dnnl::memory(smd, cpu_engine(), DNNL_MEMORY_NONE);
                    piece.dst = dnnl::memory(dmd, cpu_engine(), DNNL_MEMORY_NONE);
                    piece.scratchpad.resize(pd.scratchpad_desc().get_size());
                    piece.args = {{DNNL_ARG_FROM, piece.src}, {DNNL_ARG_TO, piece.dst}};
                    if (!piece.scratchpad.empty())
                        piece.args.emplace(DNNL_ARG_SCRATCHPAD,
                                           dnnl::memory(pd.scratchpad_desc(), cpu_engine(), piece.scratchpad.data()));
                    piece.use_reorder = true;
                }
                piece.plan = std::move(p);
                k->pieces_.push_back(std::move(piece));
            }
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (size_t i = 0; i < in_strides_.size() && i < inputs.size(); ++i)
            check_view(inputs[i], in_strides_[i], "copy kernel: input view strides differ from the spec");
        check_view(outputs[0], out_strides_, "copy kernel: output view strides differ from the spec");
        for (Piece &p : pieces_) {
            const std::byte *src = inputs[p.plan.src_view].data + p.plan.src_offset * esize_;
            std::byte *dst = outputs[p.plan.dst_view].data + p.plan.dst_offset * esize_;
            if (src == dst && p.plan.src == p.plan.dst) continue;  // an aliased reshape: already in place
            if (p.use_reorder) {
                p.src.set_data_handle(const_cast<std::byte *>(src));
                p.dst.set_data_handle(dst);
                set_omp_threads(threads_);
                dnnl::stream &s = thread_stream();
                p.reorder.execute(s, p.args);
                s.wait();
            } else {
                loop_copy(p.plan, src, dst);
            }
        }
    }

private:
    struct Piece {
        CopyPlan plan;
        bool use_reorder = false;
        dnnl::reorder reorder;
        dnnl::memory src, dst;  // share their handles with `args`
        std::unordered_map<int, dnnl::memory> args;
        std::vector<std::uint8_t> scratchpad;
    };

    void loop_copy(const CopyPlan &p, const std::byte *src, std::byte *dst) const {
        if (p.shape.empty()) {
            copy_element(dst, src, esize_);
            return;
        }
        const size_t n = p.shape.size();
        const std::int64_t inner = p.shape[n - 1], si = p.src[n - 1], di = p.dst[n - 1];
        std::int64_t rows = 1;
        for (size_t d = 0; d + 1 < n; ++d) rows *= p.shape[d];
        const int es = esize_;
#pragma omp parallel for num_threads(threads_) if (threads_ > 1 && rows * inner > (1 << 16)) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            std::int64_t so = 0, dof = 0, rem = r;
            for (size_t d = n - 1; d-- > 0;) {
                const std::int64_t i = rem % p.shape[d];
                rem /= p.shape[d];
                so += i * p.src[d];
                dof += i * p.dst[d];
            }
            const std::byte *s = src + so * es;
            std::byte *t = dst + dof * es;
            if (si == 1 && di == 1) {
                std::memmove(t, s, static_cast<size_t>(inner * es));
            } else {
                for (std::int64_t j = 0; j < inner; ++j) copy_element(t + j * di * es, s + j * si * es, es);
            }
        }
    }

    int threads_ = 1;
    int esize_ = 4;
    std::vector<Strides> in_strides_;
    Strides out_strides_;
    std::vector<Piece> pieces_;
};

const IndexProjection &y_projection(const KernelSpec &spec) {
    return spec.derivation.signature.outputs.at(0).operands.at(0).projection;
}

ZPoint selection_start(const OperandProjection &p, const ZRange &range, const ZPoint &shape) {
    return op_util::relative_selection(p, range, shape).start();
}

// transpose, slice, and reshape groups with a common refinement: one copy plan.
Expected<std::unique_ptr<Kernel>, std::string> make_affine_copy(const KernelSpec &spec) {
    const OperandProjection &px = spec.derivation.signature.inputs.at(0).operands.at(0);
    const OperandProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0);
    const ZPoint &xshape = spec.operands.at(0).operands.at(0).shape;
    const ZPoint &yshape = spec.derivation.outputs.at(0).operands.at(0).shape;
    CopyPlan plan = make_copy_plan(spec.index_range, px.projection, selection_start(px, spec.index_range, xshape),
                                   spec_input_strides(spec, 0), py.projection,
                                   selection_start(py, spec.index_range, yshape), spec_output_strides(spec, 0));
    return CopyKernel::make(spec, {std::move(plan)}, spec.operands.at(0).operands.at(0).dtype);
}

// A reshape group without a common refinement reads one element of a block: the
// source element of each index point comes from the row-major rank of its
// destination element. General, element by element.
class ReshapeGatherKernel final : public Kernel {
public:
    explicit ReshapeGatherKernel(const KernelSpec &spec)
        : range_(spec.index_range),
          py_(y_projection(spec)),
          in_shape_(spec.operands.at(0).operands.at(0).shape),
          out_shape_(spec.derivation.outputs.at(0).operands.at(0).shape),
          x_start_(selection_start(spec.derivation.signature.inputs.at(0).operands.at(0), spec.index_range, in_shape_)),
          y_start_(
              selection_start(spec.derivation.signature.outputs.at(0).operands.at(0), spec.index_range, out_shape_)),
          x_strides_(spec_input_strides(spec, 0)),
          y_strides_(spec_output_strides(spec, 0)),
          esize_(dtype_bytes(spec.operands.at(0).operands.at(0).dtype)) {}

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "reshape: x strides differ from the spec");
        check_view(outputs[0], y_strides_, "reshape: y strides differ from the spec");
        const std::byte *x = inputs[0].data;
        std::byte *y = outputs[0].data;
        range_.for_each_point([&](const ZPoint &i) {
            const ZPoint dst = py_.map().apply(i);
            Coord linear = 0;
            std::int64_t yo = 0;
            for (int d = 0; d < out_shape_.rank(); ++d) {
                linear = linear * out_shape_[d] + dst[d];
                yo += (dst[d] - y_start_[d]) * y_strides_[static_cast<size_t>(d)];
            }
            std::int64_t xo = 0;
            for (int d = in_shape_.rank() - 1; d >= 0; --d) {
                xo += (linear % in_shape_[d] - x_start_[d]) * x_strides_[static_cast<size_t>(d)];
                linear /= in_shape_[d];
            }
            if (x + xo * esize_ != y + yo * esize_) copy_element(y + yo * esize_, x + xo * esize_, esize_);
        });
    }

private:
    ZRange range_;
    IndexProjection py_;
    ZPoint in_shape_, out_shape_, x_start_, y_start_;
    Strides x_strides_, y_strides_;
    int esize_;
};

KernelFactory copy_factory(const std::string &kind) {
    return unfused_factory(kind, [kind](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (kind == "reshape") {
            const IndexProjection &px = spec.derivation.signature.inputs.at(0).operands.at(0).projection;
            const bool affine =
                std::all_of(px.window().coords().begin(), px.window().coords().end(), [](Coord w) { return w == 1; });
            if (!affine) return std::unique_ptr<Kernel>(new ReshapeGatherKernel(spec));
        }
        return make_affine_copy(spec);
    });
}

// concat: one copy plan per input piece the shard touches.
Expected<std::unique_ptr<Kernel>, std::string> make_concat(const KernelSpec &spec) {
    const PortTypes &port = spec.operands.at(0);
    const int rank = port.operands.at(0).shape.rank();
    const int axis = *op_util::normalize_axis(spec.params.get_int("axis", 0), rank);
    const OperandProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0);
    const ZPoint &yshape = spec.derivation.outputs.at(0).operands.at(0).shape;
    const ZPoint ystart = selection_start(py, spec.index_range, yshape);
    std::vector<CopyPlan> plans;
    Coord offset = 0;
    for (size_t k = 0; k < port.operands.size(); ++k) {
        const ZPoint &shape = port.operands[k].shape;
        ZPoint lo = spec.index_range.start(), hi = spec.index_range.end();
        lo[axis] = std::max(lo[axis], offset);
        hi[axis] = std::min(hi[axis], offset + shape[axis]);
        const ZRange piece(lo, hi);
        const OperandProjection &pk = spec.derivation.signature.inputs.at(0).operands.at(k);
        if (!piece.empty()) {
            CopyPlan c =
                make_copy_plan(piece, pk.projection, selection_start(pk, spec.index_range, shape),
                               spec_input_strides(spec, k), py.projection, ystart, spec_output_strides(spec, 0));
            c.src_view = k;
            plans.push_back(std::move(c));
        }
        offset += shape[axis];
    }
    return CopyKernel::make(spec, std::move(plans), port.operands.at(0).dtype);
}

}  // namespace

void register_kernels_shape(std::vector<KernelFactory> &out) {
    out.push_back(copy_factory("transpose"));
    out.push_back(copy_factory("reshape"));
    out.push_back(copy_factory("slice"));
    out.push_back(unfused_factory("concat", make_concat));
}

}  // namespace tapestry::cpu
