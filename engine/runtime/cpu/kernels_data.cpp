// CPU kernels that move or gather data, plus reductions and attention:
// reduce_sum/mean/max (oneDNN reduction); transpose, slice, concat and reshape
// as strided copies derived from the index projections (one oneDNN reorder per
// piece where the strides allow it, a plain loop otherwise: negative steps, i64);
// embedding and gather (plain loops; bad ids give NaN rows like the reference);
// attention (per batch·head: oneDNN matmul q·kᵀ with the scale and the masks as
// post-ops, softmax, matmul with v, written in place into y's head columns).
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/check.h"
#include "ops/op_util.h"
#include "runtime/cpu/dnnl_util.h"

namespace tapestry::cpu {

namespace {

using Strides = std::vector<std::int64_t>;
using dims = dnnl::memory::dims;

Strides canonical(const ZPoint &shape, Strides s) {
    for (int d = 0; d < shape.rank(); ++d)
        if (shape[d] == 1) s[static_cast<size_t>(d)] = 0;
    return s;
}

void check_view(const View &v, const Strides &expected, const char *what) {
    TAPESTRY_CHECK(canonical(v.shape, v.strides) == canonical(v.shape, expected), what);
}

class NoopKernel final : public Kernel {
public:
    void run(std::span<const View>, std::span<const View>) override {}
};

Expected<std::unique_ptr<Kernel>, std::string> noop() {
    return std::unique_ptr<Kernel>(new NoopKernel());
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

bool never_fuse(const KernelSpec &, const Epilogue &) {
    return false;
}

// Copies one element of `size` bytes.
inline void copy_element(std::byte *dst, const std::byte *src, int size) {
    switch (size) {
        case 1: *dst = *src; break;
        case 2: std::memcpy(dst, src, 2); break;
        case 4: std::memcpy(dst, src, 4); break;
        case 8: std::memcpy(dst, src, 8); break;
        default: std::memcpy(dst, src, static_cast<size_t>(size));
    }
}

// ---- strided copies -------------------------------------------------------------------
//
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
    c.shape = range.shape().coords();
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
                const bool positive = std::all_of(p.src.begin(), p.src.end(), [](std::int64_t s) { return s > 0; }) &&
                                      std::all_of(p.dst.begin(), p.dst.end(), [](std::int64_t s) { return s > 0; });
                // A single contiguous run is a memcpy; oneDNN is for real reshuffles.
                const bool contiguous = p.shape.size() <= 1 && (p.shape.empty() || (p.src[0] == 1 && p.dst[0] == 1));
                if (t && positive && !contiguous && p.shape.size() <= DNNL_MAX_NDIMS && p.elements() > 0) {
                    const dnnl::memory::desc smd(dims(p.shape.begin(), p.shape.end()), *t,
                                                 dims(p.src.begin(), p.src.end()));
                    const dnnl::memory::desc dmd(dims(p.shape.begin(), p.shape.end()), *t,
                                                 dims(p.dst.begin(), p.dst.end()));
                    const dnnl::reorder::primitive_desc pd(cpu_engine(), smd, cpu_engine(), dmd, user_scratchpad());
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
    KernelFactory f;
    f.kind = kind;
    f.can_fuse = never_fuse;
    f.make = [kind](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
        if (kind == "reshape") {
            const IndexProjection &px = spec.derivation.signature.inputs.at(0).operands.at(0).projection;
            const bool affine =
                std::all_of(px.window().coords().begin(), px.window().coords().end(), [](Coord w) { return w == 1; });
            if (!affine) return std::unique_ptr<Kernel>(new ReshapeGatherKernel(spec));
        }
        return make_affine_copy(spec);
    };
    return f;
}

// concat: one copy plan per input piece the shard touches.
KernelFactory concat_factory() {
    KernelFactory f;
    f.kind = "concat";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
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
    };
    return f;
}

// ---- reductions ---------------------------------------------------------------------

class ReduceKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, dnnl::algorithm alg) {
        return dnnl_guard(std::string(spec.def->kind()), [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<ReduceKernel>(new ReduceKernel());
            k->threads_ = spec.threads;
            k->x_strides_ = spec_input_strides(spec, 0);
            k->y_strides_ = spec_output_strides(spec, 0);
            const ZPoint &xs = spec.input_shapes.at(0), &ys = spec.output_shapes.at(0);
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            const int rank = xs.rank();
            const auto axes = op_util::checked_axes("reduce", "axes", spec.params.get_ints("axes", {}), rank);
            if (!axes) return unexpected(axes.error().message);
            const bool keep = spec.params.get_bool("keepdims", true);
            // y's descriptor in x's rank: reduced dims of extent 1.
            ZPoint dshape = ZPoint::filled(rank, 1);
            Strides dstrides(static_cast<size_t>(rank), 0);
            int j = 0;
            for (int d = 0; d < rank; ++d) {
                const bool reduced = std::find(axes->begin(), axes->end(), d) != axes->end();
                if (reduced) {
                    if (keep) ++j;
                    continue;
                }
                dshape[d] = ys[j];
                dstrides[static_cast<size_t>(d)] = k->y_strides_[static_cast<size_t>(j)];
                ++j;
            }
            auto xmd = make_md(xs, k->x_strides_, t);
            if (!xmd) return unexpected(xmd.error());
            auto ymd = make_md(dshape, dstrides, t);
            if (!ymd) return unexpected(ymd.error());
            if (dshape == xs) {
                // Every reduced axis has extent 1 (e.g. a [1, 1, 1] tensor summed to a
                // scalar): the result is x itself. oneDNN refuses a reduction that
                // reduces nothing, so copy instead (found by the equivalence properties).
                k->primitive_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), *xmd, cpu_engine(), *ymd));
                k->args_[DNNL_ARG_FROM] = dnnl::memory(*xmd, cpu_engine(), DNNL_MEMORY_NONE);
                k->args_[DNNL_ARG_TO] = dnnl::memory(*ymd, cpu_engine(), DNNL_MEMORY_NONE);
                return std::unique_ptr<Kernel>(std::move(k));
            }
            const dnnl::reduction::desc d(alg, *xmd, *ymd, 0.f, 0.f);
            const dnnl::reduction::primitive_desc pd(d, user_scratchpad(), cpu_engine());
            k->primitive_ = dnnl::reduction(pd);
            k->args_[DNNL_ARG_SRC] = dnnl::memory(*xmd, cpu_engine(), DNNL_MEMORY_NONE);
            k->args_[DNNL_ARG_DST] = dnnl::memory(*ymd, cpu_engine(), DNNL_MEMORY_NONE);
            k->scratchpad_.resize(pd.scratchpad_desc().get_size());
            k->args_[DNNL_ARG_SCRATCHPAD] = dnnl::memory(
                pd.scratchpad_desc(), cpu_engine(), k->scratchpad_.empty() ? DNNL_MEMORY_NONE : k->scratchpad_.data());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "reduce: x strides differ from the spec");
        check_view(outputs[0], y_strides_, "reduce: y strides differ from the spec");
        args_.at(DNNL_ARG_SRC).set_data_handle(inputs[0].data);
        args_.at(DNNL_ARG_DST).set_data_handle(outputs[0].data);
        set_omp_threads(threads_);
        dnnl::stream &s = thread_stream();
        primitive_.execute(s, args_);
        s.wait();
    }
    std::size_t scratch_bytes() const override { return scratchpad_.size(); }

private:
    int threads_ = 1;
    Strides x_strides_, y_strides_;
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<std::uint8_t> scratchpad_;
};

KernelFactory reduce_factory(const std::string &kind, dnnl::algorithm alg) {
    KernelFactory f;
    f.kind = kind;
    f.can_fuse = never_fuse;
    f.make = [alg](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
        return ReduceKernel::make(spec, alg);
    };
    return f;
}

// ---- embedding and gather ------------------------------------------------------------------
//
// y = data.shape[:a] + indices.shape + data.shape[a+1:]: per (leading point, index)
// one block of data's trailing dims is copied, or filled with NaN for a bad index.

class TakeKernel final : public Kernel {
public:
    TakeKernel(const KernelSpec &spec, size_t data_view, size_t index_view, int axis, bool negative_ok)
        : data_view_(data_view),
          index_view_(index_view),
          axis_(axis),
          negative_ok_(negative_ok),
          threads_(spec.threads) {
        data_type_ = spec.operands.at(data_view).operands.at(0).dtype;
        index_type_ = spec.operands.at(index_view).operands.at(0).dtype;
        esize_ = dtype_bytes(data_type_);
        n_ = spec.operands.at(data_view).operands.at(0).shape[axis];
        data_strides_ = spec_input_strides(spec, data_view);
        index_strides_ = spec_input_strides(spec, index_view);
        y_strides_ = spec_output_strides(spec, 0);
        const ZPoint &ds = spec.input_shapes.at(data_view), &is = spec.input_shapes.at(index_view);
        const int r = is.rank();
        // Outer loop: leading dims, then index dims.
        for (int d = 0; d < axis; ++d) {
            outer_.push_back(ds[d]);
            outer_data_.push_back(data_strides_[static_cast<size_t>(d)]);
            outer_index_.push_back(0);
            outer_y_.push_back(y_strides_[static_cast<size_t>(d)]);
        }
        for (int d = 0; d < r; ++d) {
            outer_.push_back(is[d]);
            outer_data_.push_back(0);
            outer_index_.push_back(index_strides_[static_cast<size_t>(d)]);
            outer_y_.push_back(y_strides_[static_cast<size_t>(axis + d)]);
        }
        // Trailing block: offsets of its elements in data and y.
        std::vector<std::int64_t> block;
        Strides bd, by;
        for (int d = axis + 1; d < ds.rank(); ++d) {
            block.push_back(ds[d]);
            bd.push_back(data_strides_[static_cast<size_t>(d)]);
            by.push_back(y_strides_[static_cast<size_t>(d - 1 + r)]);
        }
        std::int64_t count = 1;
        for (std::int64_t e : block) count *= e;
        for (std::int64_t l = 0; l < count; ++l) {
            std::int64_t rem = l, od = 0, oy = 0;
            for (size_t d = block.size(); d-- > 0;) {
                const std::int64_t i = rem % block[d];
                rem /= block[d];
                od += i * bd[d];
                oy += i * by[d];
            }
            block_data_.push_back(od);
            block_y_.push_back(oy);
        }
        contiguous_ = true;
        for (size_t l = 0; l < block_data_.size(); ++l)
            contiguous_ = contiguous_ && block_data_[l] == static_cast<std::int64_t>(l) &&
                          block_y_[l] == static_cast<std::int64_t>(l);
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[data_view_], data_strides_, "take: data strides differ from the spec");
        check_view(inputs[index_view_], index_strides_, "take: index strides differ from the spec");
        check_view(outputs[0], y_strides_, "take: y strides differ from the spec");
        const std::byte *data = inputs[data_view_].data;
        const std::byte *idx = inputs[index_view_].data;
        std::byte *y = outputs[0].data;
        std::int64_t rows = 1;
        for (std::int64_t e : outer_) rows *= e;
        const std::int64_t axis_stride = data_strides_[static_cast<size_t>(axis_)];
        const std::int64_t block = static_cast<std::int64_t>(block_data_.size());
        std::byte nan_bytes[8] = {};
        nan_value(nan_bytes);
#pragma omp parallel for num_threads(threads_) if (threads_ > 1 && rows * block > (1 << 15)) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            std::int64_t rem = r, od = 0, oi = 0, oy = 0;
            for (size_t d = outer_.size(); d-- > 0;) {
                const std::int64_t i = rem % outer_[d];
                rem /= outer_[d];
                od += i * outer_data_[d];
                oi += i * outer_index_[d];
                oy += i * outer_y_[d];
            }
            std::int64_t id = index_type_ == DType::i64 ? reinterpret_cast<const std::int64_t *>(idx)[oi]
                                                        : reinterpret_cast<const std::int32_t *>(idx)[oi];
            if (negative_ok_ && id < 0) id += n_;
            std::byte *dst = y + oy * esize_;
            if (id < 0 || id >= n_) {
                for (std::int64_t l = 0; l < block; ++l)
                    std::memcpy(dst + block_y_[static_cast<size_t>(l)] * esize_, nan_bytes,
                                static_cast<size_t>(esize_));
                continue;
            }
            const std::byte *src = data + (od + id * axis_stride) * esize_;
            if (contiguous_) {
                std::memcpy(dst, src, static_cast<size_t>(block * esize_));
            } else {
                for (std::int64_t l = 0; l < block; ++l)
                    copy_element(dst + block_y_[static_cast<size_t>(l)] * esize_,
                                 src + block_data_[static_cast<size_t>(l)] * esize_, esize_);
            }
        }
    }

private:
    // The "bad index" value in the data's dtype: NaN for floats, 0 for integers
    // (which have no NaN).
    void nan_value(std::byte *out) const {
        switch (data_type_) {
            case DType::f32: {
                const float v = std::numeric_limits<float>::quiet_NaN();
                std::memcpy(out, &v, 4);
                break;
            }
            case DType::f16: {
                const std::uint16_t v = 0x7E00;
                std::memcpy(out, &v, 2);
                break;
            }
            case DType::bf16: {
                const std::uint16_t v = 0x7FC0;
                std::memcpy(out, &v, 2);
                break;
            }
            default: break;
        }
    }

    size_t data_view_, index_view_;
    int axis_;
    bool negative_ok_;
    int threads_;
    DType data_type_ = DType::f32, index_type_ = DType::i64;
    int esize_ = 4;
    std::int64_t n_ = 0;
    Strides data_strides_, index_strides_, y_strides_;
    std::vector<std::int64_t> outer_;
    Strides outer_data_, outer_index_, outer_y_;
    std::vector<std::int64_t> block_data_, block_y_;
    bool contiguous_ = false;
};

KernelFactory embedding_factory() {
    KernelFactory f;
    f.kind = "embedding";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
        return std::unique_ptr<Kernel>(new TakeKernel(spec, 1, 0, 0, false));
    };
    return f;
}

KernelFactory gather_factory() {
    KernelFactory f;
    f.kind = "gather";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
        const int rank = spec.operands.at(0).operands.at(0).shape.rank();
        const int axis = *op_util::normalize_axis(spec.params.get_int("axis", 0), rank);
        return std::unique_ptr<Kernel>(new TakeKernel(spec, 0, 1, axis, true));
    };
    return f;
}

// ---- attention -----------------------------------------------------------------------------

class AttentionKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        return dnnl_guard("attention", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<AttentionKernel>(new AttentionKernel());
            if (auto e = k->build(spec); !e) return unexpected(e.error());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (size_t i = 0; i < in_strides_.size(); ++i)
            check_view(inputs[i], in_strides_[i], "attention: input view strides differ from the spec");
        check_view(outputs[0], y_strides_, "attention: output view strides differ from the spec");
        const std::int64_t pairs = b_ * h_;
        const int workers = static_cast<int>(std::min<std::int64_t>(workers_.size(), pairs));
        if (workers <= 1) {
            set_omp_threads(threads_);
            for (std::int64_t p = 0; p < pairs; ++p) pair(workers_[0], p, inputs, outputs);
            thread_stream().wait();
            return;
        }
        // One (batch, head) pair per worker at a time, each with its own scores
        // and memory objects; oneDNN runs single-threaded inside.
#pragma omp parallel num_threads(workers)
        {
            omp_set_num_threads(1);
            const int w = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
            for (std::int64_t p = 0; p < pairs; ++p) pair(workers_[static_cast<size_t>(w)], p, inputs, outputs);
            thread_stream().wait();
        }
    }
    std::size_t scratch_bytes() const override {
        std::size_t n = causal_.size() * sizeof(float);
        for (const Worker &w : workers_) n += w.scores.size() * sizeof(float) + w.scratchpad.size();
        return n;
    }

private:
    struct Worker {
        std::vector<float> scores;
        std::vector<std::uint8_t> scratchpad;
        std::unordered_map<int, dnnl::memory> mm1, soft, mm2;
    };

    void pair(Worker &w, std::int64_t p, std::span<const View> inputs, std::span<const View> outputs) {
        const std::int64_t b = p / h_, h = p % h_;
        const size_t es = sizeof(float);
        auto at = [&](const View &v, std::int64_t off) {
            return static_cast<void *>(v.data + off * static_cast<std::int64_t>(es));
        };
        w.mm1.at(DNNL_ARG_SRC).set_data_handle(at(inputs[0], b * q_[0] + h * e_ * q_[2]));
        w.mm1.at(DNNL_ARG_WEIGHTS).set_data_handle(at(inputs[1], b * k_[0] + h * e_ * k_[2]));
        if (has_mask_) w.mm1.at(post_op_arg(0)).set_data_handle(inputs[3].data);
        w.mm2.at(DNNL_ARG_WEIGHTS).set_data_handle(at(inputs[2], b * v_[0] + h * ev_ * v_[2]));
        w.mm2.at(DNNL_ARG_DST).set_data_handle(at(outputs[0], b * y_[0] + h * ev_ * y_[2]));
        dnnl::stream &s = thread_stream();
        mm1_.execute(s, w.mm1);
        softmax_.execute(s, w.soft);
        mm2_.execute(s, w.mm2);
    }

    Expected<bool, std::string> build(const KernelSpec &spec) {
        if (spec.operands.at(0).operands.at(0).dtype != DType::f32)
            return unexpected(std::string("the CPU attention kernel supports f32 only"));
        const ZRange &r = spec.index_range;
        const ZPoint &qshape = spec.operands.at(0).operands.at(0).shape;
        const ZPoint &kshape = spec.operands.at(1).operands.at(0).shape;
        const std::int64_t heads = spec.params.get_int("heads", 1);
        e_ = qshape[2] / heads;
        const std::int64_t sk = kshape[1];
        const std::int64_t ev_full = spec.operands.at(2).operands.at(0).shape[2] / heads;
        ev_ = ev_full;
        b_ = r.extent(0);
        h_ = r.extent(1);
        const std::int64_t sq = r.extent(2), evl = r.extent(3);
        has_mask_ = spec.derivation.signature.input("mask", 0) != nullptr;
        const bool causal = spec.params.get_bool("causal", false);
        double scale = spec.params.get_float("scale", 0.0);
        if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(e_));
        threads_ = spec.threads;
        for (size_t i = 0; i < spec.input_shapes.size(); ++i) in_strides_.push_back(spec_input_strides(spec, i));
        y_strides_ = spec_output_strides(spec, 0);
        q_ = in_strides_[0];
        k_ = in_strides_[1];
        v_ = in_strides_[2];
        y_ = y_strides_;
        const auto f32 = dnnl::memory::data_type::f32;
        const auto &eng = cpu_engine();
        const dnnl::memory::desc q_md(dims{sq, e_}, f32, dims{q_[1], q_[2]});
        const dnnl::memory::desc k_md(dims{e_, sk}, f32, dims{k_[2], k_[1]});
        const dnnl::memory::desc s_md(dims{sq, sk}, f32, dims{sk, 1});
        const dnnl::memory::desc v_md(dims{sk, evl}, f32, dims{v_[1], v_[2]});
        const dnnl::memory::desc y_md(dims{sq, evl}, f32, dims{y_[1], y_[2]});

        dnnl::post_ops ops;
        dnnl::memory::desc mask_md;
        if (has_mask_) {
            const Strides &m = in_strides_[3];
            mask_md = dnnl::memory::desc(dims{sq, sk}, f32, dims{m[0], m[1]});
            ops.append_binary(dnnl::algorithm::binary_add, mask_md);
        }
        if (causal) {
            // Query s (global) sees keys j <= s: an additive mask of 0 / −∞, built once.
            causal_.assign(static_cast<size_t>(sq * sk), 0.f);
            for (std::int64_t s = 0; s < sq; ++s)
                for (std::int64_t j = 0; j < sk; ++j)
                    if (j > s + r.start()[2])
                        causal_[static_cast<size_t>(s * sk + j)] = -std::numeric_limits<float>::infinity();
            ops.append_binary(dnnl::algorithm::binary_add, s_md);
        }
        dnnl::primitive_attr a1 = user_scratchpad();
        a1.set_output_scales(0, {static_cast<float>(scale)});
        a1.set_post_ops(ops);
        const dnnl::matmul::primitive_desc pd1(dnnl::matmul::desc(q_md, k_md, s_md), a1, eng);
        const dnnl::softmax_v2_forward::primitive_desc pds(
            dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, s_md,
                                           s_md, 1),
            user_scratchpad(), eng);
        const dnnl::matmul::primitive_desc pd2(dnnl::matmul::desc(s_md, v_md, y_md), user_scratchpad(), eng);
        mm1_ = dnnl::matmul(pd1);
        softmax_ = dnnl::softmax_v2_forward(pds);
        mm2_ = dnnl::matmul(pd2);
        const size_t pad = std::max(
            {pd1.scratchpad_desc().get_size(), pds.scratchpad_desc().get_size(), pd2.scratchpad_desc().get_size()});

        const std::int64_t pairs = b_ * h_;
        const int nworkers = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads_, pairs)));
        workers_.resize(static_cast<size_t>(nworkers));
        for (Worker &w : workers_) {
            w.scores.assign(static_cast<size_t>(sq * sk), 0.f);
            w.scratchpad.resize(pad);
            void *sp = w.scratchpad.empty() ? DNNL_MEMORY_NONE : w.scratchpad.data();
            const dnnl::memory scores(s_md, eng, w.scores.data());
            w.mm1[DNNL_ARG_SRC] = dnnl::memory(q_md, eng, DNNL_MEMORY_NONE);
            w.mm1[DNNL_ARG_WEIGHTS] = dnnl::memory(k_md, eng, DNNL_MEMORY_NONE);
            w.mm1[DNNL_ARG_DST] = scores;
            w.mm1[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd1.scratchpad_desc(), eng, sp);
            int post = 0;
            if (has_mask_) w.mm1[post_op_arg(post++)] = dnnl::memory(mask_md, eng, DNNL_MEMORY_NONE);
            if (causal) w.mm1[post_op_arg(post++)] = dnnl::memory(s_md, eng, causal_.data());
            w.soft[DNNL_ARG_SRC] = scores;
            w.soft[DNNL_ARG_DST] = scores;
            w.soft[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pds.scratchpad_desc(), eng, sp);
            w.mm2[DNNL_ARG_SRC] = scores;
            w.mm2[DNNL_ARG_WEIGHTS] = dnnl::memory(v_md, eng, DNNL_MEMORY_NONE);
            w.mm2[DNNL_ARG_DST] = dnnl::memory(y_md, eng, DNNL_MEMORY_NONE);
            w.mm2[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd2.scratchpad_desc(), eng, sp);
        }
        return true;
    }

    std::int64_t e_ = 1, ev_ = 1, b_ = 1, h_ = 1;
    bool has_mask_ = false;
    int threads_ = 1;
    std::vector<Strides> in_strides_;
    Strides y_strides_, q_, k_, v_, y_;
    std::vector<float> causal_;
    dnnl::primitive mm1_, softmax_, mm2_;
    std::vector<Worker> workers_;
};

KernelFactory attention_factory() {
    KernelFactory f;
    f.kind = "attention";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop();
        return AttentionKernel::make(spec);
    };
    return f;
}

}  // namespace

void register_kernels_data(std::vector<KernelFactory> &out) {
    out.push_back(reduce_factory("reduce_sum", dnnl::algorithm::reduction_sum));
    out.push_back(reduce_factory("reduce_mean", dnnl::algorithm::reduction_mean));
    out.push_back(reduce_factory("reduce_max", dnnl::algorithm::reduction_max));
    out.push_back(copy_factory("transpose"));
    out.push_back(copy_factory("reshape"));
    out.push_back(copy_factory("slice"));
    out.push_back(concat_factory());
    out.push_back(embedding_factory());
    out.push_back(gather_factory());
    out.push_back(attention_factory());
}

}  // namespace tapestry::cpu
