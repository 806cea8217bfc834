// Shared helpers for OpDef implementations.
#include "ops/op_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace tapestry::op_util {

DerivationError derivation_error(std::string code, std::string field, std::string message) {
    return DerivationError{std::move(code), std::move(field), std::move(message)};
}

std::string input_field(std::string_view port, size_t operand) {
    return "inputs." + std::string(port) + "[" + std::to_string(operand) + "]";
}

std::string param_field(std::string_view param) { return "params." + std::string(param); }

std::string shape_string(const ZPoint &shape) { return shape.to_string(); }

const PortTypes *find_port(const std::vector<PortTypes> &inputs, std::string_view port) {
    for (const PortTypes &p : inputs)
        if (p.port == port) return &p;
    return nullptr;
}

const OperandType *find_operand(const std::vector<PortTypes> &inputs, std::string_view port) {
    const PortTypes *p = find_port(inputs, port);
    return p && !p->operands.empty() ? &p->operands.front() : nullptr;
}

std::optional<DerivationError> require_float(std::string_view kind, std::string_view port, const OperandType &t,
                                             size_t operand) {
    if (dtype_is_float(t.dtype)) return std::nullopt;
    return derivation_error("dtype-mismatch", input_field(port, operand),
                            std::string(kind) + ": " + std::string(port) + " must have a floating dtype, got " +
                                std::string(dtype_name(t.dtype)));
}

std::optional<DerivationError> require_same_dtype(std::string_view kind, std::string_view port, const OperandType &t,
                                                  std::string_view reference_port, DType expected, size_t operand) {
    if (t.dtype == expected) return std::nullopt;
    return derivation_error("dtype-mismatch", input_field(port, operand),
                            std::string(kind) + ": " + std::string(port) + " is " + std::string(dtype_name(t.dtype)) +
                                " but " + std::string(reference_port) + " is " + std::string(dtype_name(expected)));
}

std::optional<DerivationError> require_min_rank(std::string_view kind, std::string_view port, const OperandType &t,
                                                int min_rank, size_t operand) {
    if (t.shape.rank() >= min_rank) return std::nullopt;
    return derivation_error("rank-mismatch", input_field(port, operand),
                            std::string(kind) + ": " + std::string(port) + " must have rank at least " +
                                std::to_string(min_rank) + ", got rank " + std::to_string(t.shape.rank()) + " " +
                                shape_string(t.shape));
}

std::optional<int> normalize_axis(std::int64_t axis, int rank) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Expected<int, DerivationError> checked_axis(std::string_view kind, std::string_view param, std::int64_t axis, int rank,
                                            std::string_view port) {
    std::optional<int> a = normalize_axis(axis, rank);
    if (!a)
        return unexpected(derivation_error("bad-param", param_field(param),
                                           std::string(kind) + ": axis " + std::to_string(axis) +
                                               " is out of range for " + std::string(port) + " of rank " +
                                               std::to_string(rank)));
    return *a;
}

Expected<std::vector<int>, DerivationError> checked_axes(std::string_view kind, std::string_view param,
                                                         const std::vector<std::int64_t> &axes, int rank,
                                                         std::string_view port, bool allow_empty) {
    if (axes.empty() && !allow_empty)
        return unexpected(derivation_error("bad-param", param_field(param),
                                           std::string(kind) + ": " + std::string(param) +
                                               " must name at least one axis"));
    std::vector<int> out;
    for (std::int64_t a : axes) {
        Expected<int, DerivationError> n = checked_axis(kind, param, a, rank, port);
        if (!n) return unexpected(n.error());
        if (std::find(out.begin(), out.end(), *n) != out.end())
            return unexpected(derivation_error("bad-param", param_field(param),
                                               std::string(kind) + ": axis " + std::to_string(*n) +
                                                   " is named twice in " + std::string(param)));
        out.push_back(*n);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::optional<ZPoint> broadcast_shapes(const ZPoint &a, const ZPoint &b) {
    const int rank = std::max(a.rank(), b.rank());
    ZPoint out = ZPoint::zeros(rank);
    for (int d = 0; d < rank; ++d) {
        const int da = d - (rank - a.rank()), db = d - (rank - b.rank());
        const Coord ea = da >= 0 ? a[da] : 1, eb = db >= 0 ? b[db] : 1;
        if (ea == eb || eb == 1) out[d] = ea;
        else if (ea == 1) out[d] = eb;
        else return std::nullopt;
    }
    return out;
}

IndexProjection broadcast_projection(const ZPoint &operand_shape, const ZPoint &out_shape) {
    TAPESTRY_CHECK(operand_shape.rank() <= out_shape.rank(), "broadcast_projection: operand rank above output rank");
    const int lead = out_shape.rank() - operand_shape.rank();
    ProjectionBuilder b(out_shape.rank());
    for (int j = 0; j < operand_shape.rank(); ++j) {
        if (operand_shape[j] == 1 && out_shape[lead + j] != 1) b.fixed(1);
        else b.follow(lead + j);
    }
    return b.build();
}

ProjectionBuilder &ProjectionBuilder::follow(int index_dim, Coord offset, Coord window) {
    return scaled(index_dim, 1, offset, window);
}

ProjectionBuilder &ProjectionBuilder::scaled(int index_dim, Coord coef, Coord offset, Coord window) {
    TAPESTRY_CHECK(index_dim >= 0 && index_dim < index_rank_, "ProjectionBuilder: index dim out of range");
    std::vector<Coord> r(static_cast<size_t>(index_rank_), 0);
    r[static_cast<size_t>(index_dim)] = coef;
    return row(r, offset, window);
}

ProjectionBuilder &ProjectionBuilder::fixed(Coord window, Coord offset) {
    return row(std::vector<Coord>(static_cast<size_t>(index_rank_), 0), offset, window);
}

ProjectionBuilder &ProjectionBuilder::row(const std::vector<Coord> &coefficients, Coord offset, Coord window) {
    TAPESTRY_CHECK(static_cast<int>(coefficients.size()) == index_rank_, "ProjectionBuilder: row length mismatch");
    rows_.push_back(coefficients);
    offsets_.push_back(offset);
    windows_.push_back(window);
    return *this;
}

IndexProjection ProjectionBuilder::build() const {
    ZMatrix a(static_cast<int>(rows_.size()), index_rank_);
    for (size_t r = 0; r < rows_.size(); ++r)
        for (int c = 0; c < index_rank_; ++c) a.at(static_cast<int>(r), c) = rows_[r][static_cast<size_t>(c)];
    return IndexProjection(AffineMap(a, ZPoint(offsets_)), ZPoint(windows_));
}

OperandProjection unclipped(IndexProjection p) { return OperandProjection{std::move(p), false}; }

PortProjections port_projection(std::string port, IndexProjection p, bool clipped) {
    return PortProjections{std::move(port), {OperandProjection{std::move(p), clipped}}};
}

Derivation single_output(DType dtype, const ZPoint &shape, const ZRange &index_space,
                         std::vector<PortProjections> inputs, std::optional<IndexProjection> output_projection) {
    Derivation d;
    d.outputs.push_back(PortTypes{"y", {OperandType{dtype, shape}}});
    d.signature.index_space = index_space;
    d.signature.inputs = std::move(inputs);
    if (!output_projection) {
        TAPESTRY_CHECK(shape.rank() == index_space.rank(), "single_output: identity output needs equal ranks");
        output_projection = IndexProjection::identity(shape.rank());
    }
    d.signature.outputs.push_back(port_projection("y", std::move(*output_projection)));
    return d;
}

ParamSpec required_param(std::string name, ParamKind kind, std::string doc) {
    ParamSpec s;
    s.name = std::move(name);
    s.kind = kind;
    s.required = true;
    s.doc = std::move(doc);
    return s;
}

static ParamSpec optional_param(std::string name, ParamKind kind, ParamValue value, std::string doc) {
    ParamSpec s;
    s.name = std::move(name);
    s.kind = kind;
    s.default_value = std::move(value);
    s.doc = std::move(doc);
    return s;
}

ParamSpec int_param(std::string name, std::int64_t default_value, std::string doc) {
    return optional_param(std::move(name), ParamKind::integer, default_value, std::move(doc));
}

ParamSpec float_param(std::string name, double default_value, std::string doc) {
    return optional_param(std::move(name), ParamKind::number, default_value, std::move(doc));
}

ParamSpec bool_param(std::string name, bool default_value, std::string doc) {
    return optional_param(std::move(name), ParamKind::boolean, default_value, std::move(doc));
}

ParamSpec ints_param(std::string name, std::vector<std::int64_t> default_value, std::string doc) {
    return optional_param(std::move(name), ParamKind::int_list, std::move(default_value), std::move(doc));
}

ParamSpec choice_param(std::string name, std::string default_value, std::vector<std::string> choices,
                       std::string doc) {
    ParamSpec s = optional_param(std::move(name), ParamKind::string, std::move(default_value), std::move(doc));
    s.choices = std::move(choices);
    return s;
}

ZRange relative_selection(const OperandProjection &p, const ZRange &index_range, const ZPoint &shape) {
    ZRange r = p.projection.image(index_range);
    if (p.clipped) r = r.intersect(ZRange::of_shape(shape));
    return r;
}

std::vector<Coord> row_major_strides(const ZPoint &shape) {
    std::vector<Coord> strides(static_cast<size_t>(shape.rank()), 1);
    for (int d = shape.rank() - 2; d >= 0; --d)
        strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * shape[d + 1];
    return strides;
}

FlatOffset::FlatOffset(const IndexProjection &p, const ZPoint &array_shape)
    : steps_(static_cast<size_t>(p.index_rank()), 0) {
    TAPESTRY_CHECK(p.tensor_rank() == array_shape.rank(), "FlatOffset: the projection's rank is not the array's");
    const std::vector<Coord> strides = row_major_strides(array_shape);
    const ZMatrix &a = p.map().matrix();
    for (int r = 0; r < p.tensor_rank(); ++r) {
        const Coord stride = strides[static_cast<size_t>(r)];
        constant_ += stride * p.map().offset()[r];
        for (int c = 0; c < p.index_rank(); ++c) steps_[static_cast<size_t>(c)] += stride * a.at(r, c);
    }
}

Coord FlatOffset::at(const ZPoint &index_point) const {
    Coord offset = constant_;
    for (size_t c = 0; c < steps_.size(); ++c) offset += steps_[c] * index_point[static_cast<int>(c)];
    return offset;
}

Coord FlatOffset::step(int d) const {
    return d >= 0 && static_cast<size_t>(d) < steps_.size() ? steps_[static_cast<size_t>(d)] : 0;
}

const IndexProjection &input_projection(const Derivation &d, std::string_view port, size_t operand) {
    const OperandProjection *p = d.signature.input(std::string(port), operand);
    TAPESTRY_CHECK(p != nullptr, "input_projection: no such input operand in the derivation");
    return p->projection;
}

const IndexProjection &output_projection(const Derivation &d, std::string_view port, size_t operand) {
    const OperandProjection *p = d.signature.output(std::string(port), operand);
    TAPESTRY_CHECK(p != nullptr, "output_projection: no such output operand in the derivation");
    return p->projection;
}

// ---- monoids ---------------------------------------------------------------------

ReductionMonoid sum_monoid() {
    ReductionMonoid m;
    m.name = "sum";
    m.width = 1;
    m.identity = {0.0};
    m.lift_into = [](std::span<double> acc, double v) { acc[0] += v; };
    m.combine = [](std::span<double> acc, std::span<const double> o) { acc[0] += o[0]; };
    m.lower = [](std::span<const double> acc) { return acc[0]; };
    return m;
}

ReductionMonoid max_monoid() {
    ReductionMonoid m;
    m.name = "max";
    m.width = 1;
    m.identity = {-std::numeric_limits<double>::infinity()};
    m.lift_into = [](std::span<double> acc, double v) { acc[0] = std::max(acc[0], v); };
    m.combine = [](std::span<double> acc, std::span<const double> o) { acc[0] = std::max(acc[0], o[0]); };
    m.lower = [](std::span<const double> acc) { return acc[0]; };
    return m;
}

ReductionMonoid mean_monoid() {
    ReductionMonoid m;
    m.name = "mean";
    m.width = 2;
    m.identity = {0.0, 0.0};
    m.lift_into = [](std::span<double> acc, double v) {
        acc[0] += 1;
        acc[1] += v;
    };
    m.combine = [](std::span<double> acc, std::span<const double> o) {
        acc[0] += o[0];
        acc[1] += o[1];
    };
    m.lower = [](std::span<const double> acc) { return acc[1] / acc[0]; };
    return m;
}

ReductionMonoid moments_monoid() {
    ReductionMonoid m;
    m.name = "moments";
    m.width = 3;
    m.identity = {0.0, 0.0, 0.0};
    m.lift_into = [](std::span<double> acc, double v) {
        acc[0] += 1;
        acc[1] += v;
        acc[2] += v * v;
    };
    m.combine = [](std::span<double> acc, std::span<const double> o) {
        for (int k = 0; k < 3; ++k) acc[static_cast<size_t>(k)] += o[static_cast<size_t>(k)];
    };
    m.lower = [](std::span<const double> acc) {
        const double mean = acc[1] / acc[0];
        return acc[2] / acc[0] - mean * mean;
    };
    return m;
}

ReductionMonoid mean_square_monoid() {
    ReductionMonoid m;
    m.name = "mean_square";
    m.width = 2;
    m.identity = {0.0, 0.0};
    m.lift_into = [](std::span<double> acc, double v) {
        acc[0] += 1;
        acc[1] += v * v;
    };
    m.combine = [](std::span<double> acc, std::span<const double> o) {
        acc[0] += o[0];
        acc[1] += o[1];
    };
    m.lower = [](std::span<const double> acc) { return acc[1] / acc[0]; };
    return m;
}

// Rescale s (relative to max m) onto a new max; an empty accumulator (m = −∞,
// s = 0) stays empty instead of producing NaN from (−∞) − (−∞).
static double rescaled(double s, double m_old, double m_new) {
    if (s == 0.0) return 0.0;
    return s * std::exp(m_old - m_new);
}

ReductionMonoid logsumexp_monoid() {
    ReductionMonoid m;
    m.name = "logsumexp";
    m.width = 2;
    m.identity = {-std::numeric_limits<double>::infinity(), 0.0};
    m.lift_into = [](std::span<double> acc, double v) {
        const double mx = std::max(acc[0], v);
        acc[1] = rescaled(acc[1], acc[0], mx) + std::exp(v - mx);
        acc[0] = mx;
    };
    m.combine = [](std::span<double> acc, std::span<const double> o) {
        const double mx = std::max(acc[0], o[0]);
        acc[1] = rescaled(acc[1], acc[0], mx) + rescaled(o[1], o[0], mx);
        acc[0] = mx;
    };
    m.lower = [](std::span<const double> acc) { return acc[0] + std::log(acc[1]); };
    return m;
}

double reduce_with(const ReductionMonoid &m, const std::vector<double> &values) {
    std::vector<double> acc = m.identity;
    for (double v : values) m.lift_into(acc, v);
    return m.lower(acc);
}

}  // namespace tapestry::op_util
