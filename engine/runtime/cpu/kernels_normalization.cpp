// CPU kernels of the normalization family: softmax (oneDNN softmax_v2), layernorm
// (oneDNN layer_normalization over one merged trailing dim), rmsnorm (a plain
// loop) and batchnorm (a per-channel scale/shift loop). Shards that split a
// normalized axis still read whole rows; they go through the plain row loop,
// which writes only the shard's part of each row (vectorized where the row is
// contiguous and the part one run of it).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "common/check.h"
#include "ops/op_util.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {

namespace {

// Calls f(linear, offsets) for every point of `shape`, with offsets[k] the
// element offset of that point under strides[k]. Serial.
template <size_t K, typename F>
void for_each_offset(const std::vector<std::int64_t> &shape, const std::array<const Strides *, K> &strides, F &&f) {
    const size_t n = shape.size();
    std::int64_t total = 1;
    for (std::int64_t e : shape) total *= e;
    if (total == 0) return;
    std::vector<std::int64_t> idx(n, 0);
    std::array<std::int64_t, K> off{};
    for (std::int64_t linear = 0; linear < total; ++linear) {
        f(linear, off);
        for (size_t d = n; d-- > 0;) {
            ++idx[d];
            for (size_t k = 0; k < K; ++k) off[k] += (*strides[k])[d];
            if (idx[d] < shape[d]) break;
            for (size_t k = 0; k < K; ++k) off[k] -= (*strides[k])[d] * shape[d];
            idx[d] = 0;
        }
    }
}

// The offsets of point `linear` (row-major in `shape`) under each stride vector.
template <size_t K>
std::array<std::int64_t, K> offsets_of(std::int64_t linear, const std::vector<std::int64_t> &shape,
                                       const std::array<const Strides *, K> &strides) {
    std::array<std::int64_t, K> off{};
    for (size_t d = shape.size(); d-- > 0;) {
        const std::int64_t i = linear % shape[d];
        linear /= shape[d];
        for (size_t k = 0; k < K; ++k) off[k] += i * (*strides[k])[d];
    }
    return off;
}

// ---- the row loop ------------------------------------------------------------------
//
// Splits the dims of x into outer dims (one row per point) and normalized dims
// (the row). Per row it reads the whole row of x and writes the shard's part of
// the row of y; gamma/beta (when given) are shaped like the shard's part.

enum class RowOp { softmax, layernorm, rmsnorm };

class RowLoopKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, RowOp op,
                                                               std::vector<int> normalized, bool has_gamma,
                                                               bool has_beta, double epsilon) {
        if (spec.operands.at(0).operands.at(0).dtype != DType::f32)
            return unexpected(std::string(spec.def->kind()) + ": the CPU row kernel supports f32 only, got " +
                              std::string(dtype_name(spec.operands.at(0).operands.at(0).dtype)));
        auto k = std::unique_ptr<RowLoopKernel>(new RowLoopKernel());
        k->op_ = op;
        k->epsilon_ = static_cast<float>(epsilon);
        k->threads_ = spec.threads;
        const ZPoint &xs = spec.input_shapes.at(0);
        const ZPoint &ys = spec.output_shapes.at(0);
        const Strides xst = spec_input_strides(spec, 0), yst = spec_output_strides(spec, 0);
        k->x_strides_ = xst;
        k->y_strides_ = yst;
        const int rank = xs.rank();
        auto is_norm = [&](int d) { return std::find(normalized.begin(), normalized.end(), d) != normalized.end(); };
        for (int d = 0; d < rank; ++d) {
            if (is_norm(d)) continue;
            k->outer_shape_.push_back(ys[d]);
            k->outer_x_.push_back(xst[static_cast<size_t>(d)]);
            k->outer_y_.push_back(yst[static_cast<size_t>(d)]);
        }
        // Whole row of x; the shard's part (index_range along the normalized dims) of y.
        std::vector<std::int64_t> row_shape, part_shape, part_start;
        Strides row_x, part_x, part_y;
        for (int d : normalized) {
            row_shape.push_back(xs[d]);
            row_x.push_back(xst[static_cast<size_t>(d)]);
            part_shape.push_back(ys[d]);
            part_start.push_back(spec.index_range.start()[d]);
            part_x.push_back(xst[static_cast<size_t>(d)]);
            part_y.push_back(yst[static_cast<size_t>(d)]);
        }
        for_each_offset<1>(row_shape, {&row_x}, [&](std::int64_t, const std::array<std::int64_t, 1> &o) {
            k->row_offsets_.push_back(o[0]);
        });
        std::int64_t part_base = 0;
        for (size_t a = 0; a < part_start.size(); ++a) part_base += part_start[a] * part_x[a];
        // gamma/beta views cover the shard's part of the normalized shape.
        Strides g_st, b_st;
        if (has_gamma) g_st = spec_input_strides(spec, 1);
        if (has_beta) b_st = spec_input_strides(spec, has_gamma ? 2 : 1);
        if (!has_gamma) g_st.assign(part_shape.size(), 0);
        if (!has_beta) b_st.assign(part_shape.size(), 0);
        for_each_offset<4>(part_shape, {&part_x, &part_y, &g_st, &b_st},
                           [&](std::int64_t, const std::array<std::int64_t, 4> &o) {
                               k->part_.push_back({part_base + o[0], o[1], o[2], o[3]});
                           });
        k->has_gamma_ = has_gamma;
        k->has_beta_ = has_beta;
        k->gamma_index_ = has_gamma ? 1 : -1;
        k->beta_index_ = has_beta ? (has_gamma ? 2 : 1) : -1;
        // Fast path: a single contiguous normalized run, the whole row written.
        bool contiguous = true;
        std::int64_t expect = 1;
        for (size_t a = row_shape.size(); a-- > 0;) {
            if (row_shape[a] != 1 && (row_x[a] != expect || part_y[a] != expect || part_shape[a] != row_shape[a]))
                contiguous = false;
            if (row_shape[a] != 1 && ((has_gamma && g_st[a] != expect) || (has_beta && b_st[a] != expect)))
                contiguous = false;
            expect *= row_shape[a];
        }
        k->contiguous_ = contiguous;
        // Second fast path: one normalized dim, its row of x contiguous, of which
        // the shard writes a contiguous part (the normalized dim split: a layer norm
        // split along its features) — the same vectorized loops, the part written.
        int live = -1, lives = 0;
        for (size_t a = 0; a < row_shape.size(); ++a)
            if (row_shape[a] != 1) {
                live = static_cast<int>(a);
                ++lives;
            }
        if (!contiguous && lives == 1) {
            const size_t a = static_cast<size_t>(live);
            if (row_x[a] == 1 && part_y[a] == 1 && (!has_gamma || g_st[a] == 1) && (!has_beta || b_st[a] == 1)) {
                k->part_row_ = true;
                k->part_offset_ = part_base;
                k->part_length_ = part_shape[a];
            }
        }
        return std::unique_ptr<Kernel>(std::move(k));
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "row kernel: x strides differ from the spec");
        check_view(outputs[0], y_strides_, "row kernel: y strides differ from the spec");
        const float *x = inputs[0].f32();
        float *y = outputs[0].f32();
        const float *g = gamma_index_ >= 0 ? inputs[static_cast<size_t>(gamma_index_)].f32() : nullptr;
        const float *b = beta_index_ >= 0 ? inputs[static_cast<size_t>(beta_index_)].f32() : nullptr;
        std::int64_t rows = 1;
        for (std::int64_t e : outer_shape_) rows *= e;
        const std::array<const Strides *, 2> st{&outer_x_, &outer_y_};
#pragma omp parallel for num_threads(threads_) if (threads_ > 1 && rows > 1) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            const auto o = offsets_of<2>(r, outer_shape_, st);
            row(x + o[0], y + o[1], g, b);
        }
    }

private:
    struct PartElement {
        std::int64_t x, y, gamma, beta;
    };

    void row(const float *x, float *y, const float *g, const float *b) const {
        const std::int64_t n = static_cast<std::int64_t>(row_offsets_.size());
        if (contiguous_) {
            row_contiguous(x, n, 0, y, g, b, n);
            return;
        }
        if (part_row_) {
            row_contiguous(x, n, part_offset_, y, g, b, part_length_);
            return;
        }
        const double inv_n = 1.0 / static_cast<double>(n);
        if (op_ == RowOp::softmax) {
            float mx = -std::numeric_limits<float>::infinity();
            for (std::int64_t off : row_offsets_) mx = std::max(mx, x[off]);
            double sum = 0;
            for (std::int64_t off : row_offsets_) sum += std::exp(static_cast<double>(x[off] - mx));
            const double inv = 1.0 / sum;
            for (const PartElement &p : part_)
                y[p.y] = static_cast<float>(std::exp(static_cast<double>(x[p.x] - mx)) * inv);
            return;
        }
        double mean = 0, var = 0;
        if (op_ == RowOp::layernorm) {
            for (std::int64_t off : row_offsets_) mean += x[off];
            mean *= inv_n;
            for (std::int64_t off : row_offsets_) {
                const double d = x[off] - mean;
                var += d * d;
            }
        } else {
            for (std::int64_t off : row_offsets_) var += static_cast<double>(x[off]) * x[off];
        }
        const double rstd = 1.0 / std::sqrt(var * inv_n + epsilon_);
        for (const PartElement &p : part_) {
            double v = (x[p.x] - mean) * rstd;
            if (g) v *= g[p.gamma];
            if (b) v += b[p.beta];
            y[p.y] = static_cast<float>(v);
        }
    }

    // One dense row x[0, n) read whole, of which the part x[at, at + m) is
    // normalized into y[0, m) (the whole row: at 0, m n): simple loops the compiler
    // vectorizes. gamma and beta are the part's.
    void row_contiguous(const float *x_row, std::int64_t n, std::int64_t at, float *y, const float *g, const float *b,
                        std::int64_t m) const {
        const float *x = x_row + at;
        if (op_ == RowOp::softmax) {
            float mx = -std::numeric_limits<float>::infinity();
            for (std::int64_t i = 0; i < n; ++i) mx = std::max(mx, x_row[i]);
            if (m == n) {
                float sum = 0;
                for (std::int64_t i = 0; i < n; ++i) {
                    y[i] = std::exp(x[i] - mx);
                    sum += y[i];
                }
                const float inv = 1.0f / sum;
                for (std::int64_t i = 0; i < n; ++i) y[i] *= inv;
                return;
            }
            float sum = 0;
            for (std::int64_t i = 0; i < n; ++i) sum += std::exp(x_row[i] - mx);
            const float inv = 1.0f / sum;
            for (std::int64_t i = 0; i < m; ++i) y[i] = std::exp(x[i] - mx) * inv;
            return;
        }
        // Four partial sums: stable enough in float for rows of realistic length, and vectorizable.
        float mean = 0;
        if (op_ == RowOp::layernorm) {
            float s[4] = {0, 0, 0, 0};
            std::int64_t i = 0;
            for (; i + 4 <= n; i += 4)
                for (int l = 0; l < 4; ++l) s[l] += x_row[i + l];
            for (; i < n; ++i) s[0] += x_row[i];
            mean = (s[0] + s[1] + s[2] + s[3]) / static_cast<float>(n);
        }
        float q[4] = {0, 0, 0, 0};
        std::int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int l = 0; l < 4; ++l) {
                const float d = x_row[i + l] - mean;
                q[l] += d * d;
            }
        for (; i < n; ++i) q[0] += (x_row[i] - mean) * (x_row[i] - mean);
        const float rstd = 1.0f / std::sqrt((q[0] + q[1] + q[2] + q[3]) / static_cast<float>(n) + epsilon_);
        if (g && b)
            for (std::int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * rstd * g[j] + b[j];
        else if (g)
            for (std::int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * rstd * g[j];
        else if (b)
            for (std::int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * rstd + b[j];
        else
            for (std::int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * rstd;
    }

    RowOp op_ = RowOp::softmax;
    float epsilon_ = 0;
    int threads_ = 1;
    bool has_gamma_ = false, has_beta_ = false;
    int gamma_index_ = -1, beta_index_ = -1;
    bool contiguous_ = false;
    bool part_row_ = false;  // the second fast path: part_length_ elements from part_offset_ of a dense row
    std::int64_t part_offset_ = 0, part_length_ = 0;
    Strides x_strides_, y_strides_;
    std::vector<std::int64_t> outer_shape_;
    Strides outer_x_, outer_y_;
    std::vector<std::int64_t> row_offsets_;
    std::vector<PartElement> part_;
};

// ---- oneDNN-backed kernels --------------------------------------------------------------

// One primitive with its argument memories; run binds the views' pointers.
class PrimitiveKernel : public Kernel {
public:
    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (const Binding &b : bindings_) {
            const View &v = b.output ? outputs[b.view] : inputs[b.view];
            check_view(v, b.strides, "oneDNN kernel: view strides differ from the spec");
            args_.at(b.arg).set_data_handle(static_cast<void *>(v.data));
        }
        set_omp_threads(threads_);
        dnnl::stream &s = thread_stream();
        primitive_.execute(s, args_);
        s.wait();
    }
    std::size_t scratch_bytes() const override { return scratch_.size() * sizeof(float); }

protected:
    struct Binding {
        int arg;
        size_t view;
        bool output;
        Strides strides;
    };
    void bind(int arg, const dnnl::memory::desc &md, size_t view, bool output, Strides strides) {
        args_[arg] = dnnl::memory(md, cpu_engine(), DNNL_MEMORY_NONE);
        bindings_.push_back({arg, view, output, std::move(strides)});
    }
    // Memory owned by the kernel (statistics, scratchpad), allocated once.
    void own(int arg, const dnnl::memory::desc &md) {
        const size_t bytes = md.get_size();
        if (bytes == 0) return;
        const size_t at = scratch_.size();
        scratch_.resize(at + (bytes + sizeof(float) - 1) / sizeof(float) + 16);
        owned_.push_back({arg, at});
        args_[arg] = dnnl::memory(md, cpu_engine(), DNNL_MEMORY_NONE);
    }
    // Called after every own(): the scratch vector no longer moves.
    void finish_owned() {
        for (const auto &[arg, at] : owned_) args_.at(arg).set_data_handle(static_cast<void *>(scratch_.data() + at));
    }

    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<Binding> bindings_;
    std::vector<float> scratch_;
    std::vector<std::pair<int, size_t>> owned_;
    int threads_ = 1;
};

class SoftmaxKernel final : public PrimitiveKernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, int axis) {
        return dnnl_guard("softmax", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<SoftmaxKernel>(new SoftmaxKernel());
            k->threads_ = spec.threads;
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            const Strides xst = spec_input_strides(spec, 0), yst = spec_output_strides(spec, 0);
            auto xmd = make_md(spec.input_shapes.at(0), xst, t);
            if (!xmd) return unexpected(xmd.error());
            auto ymd = make_md(spec.output_shapes.at(0), yst, t);
            if (!ymd) return unexpected(ymd.error());
            const dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::softmax_accurate, *xmd, *ymd, axis);
            const dnnl::softmax_v2_forward::primitive_desc pd(d, make_attr(), cpu_engine());
            k->primitive_ = dnnl::softmax_v2_forward(pd);
            k->bind(DNNL_ARG_SRC, *xmd, 0, false, xst);
            k->bind(DNNL_ARG_DST, *ymd, 0, true, yst);
            k->own(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc());
            k->finish_owned();
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }
};

// oneDNN normalizes over the last dim only: the normalized dims are merged into one,
// which needs a dense normalized block with equal x and y layouts.
class LayerNormKernel final : public PrimitiveKernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, int axis, bool has_gamma,
                                                               bool has_beta, double epsilon) {
        return dnnl_guard("layernorm", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<LayerNormKernel>(new LayerNormKernel());
            k->threads_ = spec.threads;
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            const ZPoint &xs = spec.input_shapes.at(0);
            const Strides xst = spec_input_strides(spec, 0);
            const int rank = xs.rank();
            std::int64_t n = 1;
            for (int d = axis; d < rank; ++d) n *= xs[d];
            std::vector<Coord> dims(xs.coords().begin(), xs.coords().begin() + axis);
            Strides st(xst.begin(), xst.begin() + axis);
            if (dims.empty()) {
                dims.push_back(1);
                st.push_back(n);
            }
            dims.push_back(n);
            st.push_back(1);
            auto md = make_md(ZPoint(dims), st, t);
            if (!md) return unexpected(md.error());
            std::vector<Coord> stat_dims(dims.begin(), dims.end() - 1);
            auto stat_md = dense_md(ZPoint(stat_dims), DType::f32);
            if (!stat_md) return unexpected(stat_md.error());
            auto flags = dnnl::normalization_flags::none;
            if (has_gamma) flags |= dnnl::normalization_flags::use_scale;
            if (has_beta) flags |= dnnl::normalization_flags::use_shift;
            const dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, *md, *stat_md,
                                                            static_cast<float>(epsilon), flags);
            const dnnl::layer_normalization_forward::primitive_desc pd(d, make_attr(), cpu_engine());
            k->primitive_ = dnnl::layer_normalization_forward(pd);
            k->bind(DNNL_ARG_SRC, *md, 0, false, xst);
            k->bind(DNNL_ARG_DST, *md, 0, true, spec_output_strides(spec, 0));
            auto cmd = dense_md(ZPoint{n}, DType::f32);
            if (!cmd) return unexpected(cmd.error());
            if (has_gamma) k->bind(DNNL_ARG_SCALE, *cmd, 1, false, spec_input_strides(spec, 1));
            if (has_beta)
                k->bind(DNNL_ARG_SHIFT, *cmd, has_gamma ? 2 : 1, false, spec_input_strides(spec, has_gamma ? 2 : 1));
            k->own(DNNL_ARG_MEAN, pd.mean_desc());
            k->own(DNNL_ARG_VARIANCE, pd.variance_desc());
            k->own(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc());
            k->finish_owned();
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }
};

// ---- factories ------------------------------------------------------------------------

bool same_layout(const KernelSpec &spec) {
    return canonical_strides(spec.input_shapes.at(0), spec_input_strides(spec, 0)) ==
           canonical_strides(spec.output_shapes.at(0), spec_output_strides(spec, 0));
}

// Whether the shard covers the whole extent of every normalized dim.
bool whole_rows(const KernelSpec &spec, const std::vector<int> &normalized) {
    for (int d : normalized)
        if (spec.output_shapes.at(0)[d] != spec.input_shapes.at(0)[d]) return false;
    return true;
}

// Whether the dims [from, rank) form one dense run (innermost stride 1).
bool dense_tail(const ZPoint &shape, const Strides &strides, int from) {
    std::int64_t expect = 1;
    for (int d = shape.rank() - 1; d >= from; --d) {
        if (shape[d] != 1 && strides[static_cast<size_t>(d)] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

bool view_dense(const ZPoint &shape, const Strides &strides) {
    return dense_tail(shape, strides, 0);
}

KernelFactory softmax_factory() {
    KernelFactory f;
    f.kind = "softmax";
    f.can_fuse = never_fuse;
    f.tile_invariant = true;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        const int rank = spec.input_shapes.at(0).rank();
        const int axis = *op_util::normalize_axis(spec.params.get_int("axis", -1), rank);
        if (whole_rows(spec, {axis})) {
            auto k = SoftmaxKernel::make(spec, axis);
            if (k || spec.operands.at(0).operands.at(0).dtype != DType::f32) return k;
        }
        return RowLoopKernel::make(spec, RowOp::softmax, {axis}, false, false, 0);
    };
    return f;
}

KernelFactory norm_factory(bool rms) {
    KernelFactory f;
    f.kind = rms ? "rmsnorm" : "layernorm";
    f.can_fuse = never_fuse;
    f.make = [rms](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        const ZPoint &xs = spec.input_shapes.at(0);
        const int rank = xs.rank();
        const int axis = *op_util::normalize_axis(spec.params.get_int("axis", -1), rank);
        const bool has_gamma = spec.derivation.signature.input("gamma", 0) != nullptr;
        const bool has_beta = !rms && spec.derivation.signature.input("beta", 0) != nullptr;
        const double eps = spec.params.get_float("epsilon", rms ? 1e-6 : 1e-5);
        std::vector<int> normalized;
        for (int d = axis; d < rank; ++d) normalized.push_back(d);
        // oneDNN's layer normalization walks the rows as if they were consecutive in
        // memory: a strided shard view (e.g. a split along a middle dim) computes wrong
        // values instead of being refused. Only fully dense views go to oneDNN.
        if (!rms && whole_rows(spec, normalized) && same_layout(spec) && view_dense(xs, spec_input_strides(spec, 0)) &&
            view_dense(spec.output_shapes.at(0), spec_output_strides(spec, 0))) {
            bool params_dense = true;
            for (size_t i = 1; i < 1 + (has_gamma ? 1u : 0u) + (has_beta ? 1u : 0u); ++i)
                params_dense = params_dense && view_dense(spec.input_shapes.at(i), spec_input_strides(spec, i));
            // oneDNN takes scale and shift in f32 only: bf16/f16 data without them.
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            if (params_dense && (t == DType::f32 || (!has_gamma && !has_beta))) {
                auto k = LayerNormKernel::make(spec, axis, has_gamma, has_beta, eps);
                if (k) return k;
            }
        }
        return RowLoopKernel::make(spec, rms ? RowOp::rmsnorm : RowOp::layernorm, normalized, has_gamma, has_beta, eps);
    };
    return f;
}

// y = x·a[c] + b[c] with a = scale/√(var + ε), b = bias − mean·a, computed per run
// from the statistics (C values) and applied in one strided pass.
class BatchNormKernel final : public Kernel {
public:
    explicit BatchNormKernel(const KernelSpec &spec)
        : shape_(spec.output_shapes.at(0).to_vector()),
          x_strides_(spec_input_strides(spec, 0)),
          y_strides_(spec_output_strides(spec, 0)),
          epsilon_(spec.params.get_float("epsilon", 1e-5)),
          threads_(spec.threads) {
        for (size_t i = 1; i <= 4; ++i) param_strides_.push_back(spec_input_strides(spec, i).at(0));
        a_.resize(static_cast<size_t>(shape_.at(1)));
        b_.resize(a_.size());
        // Rows: every dim but the last; the channel of a row is its dim-1 coordinate
        // (with rank 2 the channel is the inner dim itself).
        outer_.assign(shape_.begin(), shape_.end() - 1);
        ox_.assign(x_strides_.begin(), x_strides_.end() - 1);
        oy_.assign(y_strides_.begin(), y_strides_.end() - 1);
        oc_.assign(outer_.size(), 0);
        channel_inner_ = shape_.size() == 2;
        if (!channel_inner_) oc_[1] = 1;
    }
    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "batchnorm: x strides differ from the spec");
        check_view(outputs[0], y_strides_, "batchnorm: y strides differ from the spec");
        const float *scale = inputs[1].f32(), *bias = inputs[2].f32(), *mean = inputs[3].f32(), *var = inputs[4].f32();
        for (size_t c = 0; c < a_.size(); ++c) {
            const auto i = static_cast<std::int64_t>(c);
            const double a =
                scale[i * param_strides_[0]] / std::sqrt(static_cast<double>(var[i * param_strides_[3]]) + epsilon_);
            a_[c] = static_cast<float>(a);
            b_[c] = static_cast<float>(bias[i * param_strides_[1]] - mean[i * param_strides_[2]] * a);
        }
        const std::vector<std::int64_t> &outer = outer_;
        const std::int64_t inner = shape_.back();
        const std::int64_t xs = x_strides_.back(), ys = y_strides_.back();
        std::int64_t rows = 1;
        for (std::int64_t e : outer) rows *= e;
        const bool channel_inner = channel_inner_;
        const std::array<const Strides *, 3> st{&ox_, &oy_, &oc_};
        const float *x = inputs[0].f32();
        float *y = outputs[0].f32();
#pragma omp parallel for num_threads(threads_) if (threads_ > 1 && rows > 1) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            const auto o = offsets_of<3>(r, outer, st);
            const float *xr = x + o[0];
            float *yr = y + o[1];
            if (channel_inner) {
                for (std::int64_t j = 0; j < inner; ++j)
                    yr[j * ys] = xr[j * xs] * a_[static_cast<size_t>(j)] + b_[static_cast<size_t>(j)];
            } else {
                const float a = a_[static_cast<size_t>(o[2])], b = b_[static_cast<size_t>(o[2])];
                if (xs == 1 && ys == 1)
                    for (std::int64_t j = 0; j < inner; ++j) yr[j] = xr[j] * a + b;
                else
                    for (std::int64_t j = 0; j < inner; ++j) yr[j * ys] = xr[j * xs] * a + b;
            }
        }
    }
    std::size_t scratch_bytes() const override {
        return 2 * a_.size() * sizeof(float);
    }

private:
    std::vector<std::int64_t> shape_;
    Strides x_strides_, y_strides_, param_strides_;
    double epsilon_;
    int threads_;
    std::vector<float> a_, b_;
    std::vector<std::int64_t> outer_;
    Strides ox_, oy_, oc_;
    bool channel_inner_ = false;
};

KernelFactory batchnorm_factory() {
    KernelFactory f;
    f.kind = "batchnorm";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        if (spec.operands.at(0).operands.at(0).dtype != DType::f32)
            return unexpected("batchnorm: the CPU kernel supports f32 only, got " +
                              std::string(dtype_name(spec.operands.at(0).operands.at(0).dtype)));
        return std::unique_ptr<Kernel>(new BatchNormKernel(spec));
    };
    return f;
}

}  // namespace

void register_kernels_normalization(std::vector<KernelFactory> &out) {
    out.push_back(softmax_factory());
    out.push_back(norm_factory(false));
    out.push_back(norm_factory(true));
    out.push_back(batchnorm_factory());
}

}  // namespace tapestry::cpu
