// OpDef: one kind of the operation library — its ports and parameters, shape
// inference, index space and projections, FLOP count, reduction monoid and naive
// reference kernel (DESIGN.md §3–§4). Each kind is one subclass registered in the
// OpLibrary (ops/library.h).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "graph/params.h"
#include "graph/signature.h"
#include "ops/reference.h"

namespace tapestry {

enum class ParamKind { boolean, integer, number, string, int_list };
std::string_view param_kind_name(ParamKind k);  // "bool", "int", "float", "string", "int list"

struct ParamSpec {
    std::string name;
    ParamKind kind = ParamKind::integer;
    bool required = false;
    ParamValue default_value{std::int64_t{0}};  // used when not required and absent
    std::string doc;
    std::vector<std::string> choices;  // allowed values for string params (empty = any)
};

struct PortSpec {
    std::string name;
    std::string doc;
    bool optional = false;  // may be absent (e.g. linear's bias)
    bool variadic = false;  // takes one or more operands (e.g. concat's inputs)
};

// A reduction's monoid: what makes it splittable (DESIGN.md §3). Values are lifted
// into an accumulator of `width` components, combined associatively and
// commutatively, and lowered back: sum (width 1), max (1), mean as (n, Σx),
// variance as (n, Σx, Σx²).
struct ReductionMonoid {
    std::string name;
    int width = 1;
    std::vector<double> identity;
    std::function<void(std::span<double> acc, double value)> lift_into;  // acc ⊕= lift(value)
    std::function<void(std::span<double> acc, std::span<const double> other)> combine;  // acc ⊕= other
    std::function<double(std::span<const double> acc)> lower;
};

// How the reference kernel's reads relate to the projected selections; used by
// the touched-element tests.
enum class ReadPattern {
    dense,          // reads every element of each input selection
    strided,        // reads inside the selection with holes (strided/dilated windows)
    data_dependent, // which elements depends on data (embedding rows)
    subset          // reads inside the selection but need not span it: the projection
                    // over-approximates (a reshape group with no affine form reads one
                    // element of its block; dilated taps cut off by padding)
};

class OpDef {
public:
    virtual ~OpDef() = default;

    virtual std::string_view kind() const = 0;      // "matmul"
    virtual std::string_view category() const = 0;  // "linear algebra", "elementwise", "reduction", "shape", "convolution", "normalization", "attention"
    virtual std::string_view summary() const = 0;   // one line for the palette and --help
    virtual std::vector<PortSpec> input_ports() const = 0;
    virtual std::vector<PortSpec> output_ports() const = 0;
    virtual std::vector<ParamSpec> params() const = 0;

    // Output types, index space and projections for zero-origin operands of the
    // given types. Called only after OpLibrary has checked parameter names/types and
    // port arity; checks the values and shapes. Errors name the field.
    virtual Expected<Derivation, DerivationError> derive(const Params &params,
                                                         const std::vector<PortTypes> &inputs) const = 0;

    // Floating-point operations per index point (multiply-add = 2).
    virtual double flops_per_point(const Params &params, const Derivation &d) const = 0;
    // The monoid of a reduction (reduce_*, and the contraction of matmul/linear).
    virtual std::optional<ReductionMonoid> monoid(const Params &) const { return std::nullopt; }
    virtual ReadPattern read_pattern(const Params &) const { return ReadPattern::dense; }
    // A composite (attention) is a block op here and is expanded by the substitution pass.
    virtual bool composite() const { return false; }

    // Naive reference kernel over ctx.index_range (double precision).
    virtual void reference(const RefContext &ctx) const = 0;
};

}  // namespace tapestry
