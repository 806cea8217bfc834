// Test harness that proves an op's index projections right by running its
// reference kernel: on random sub-ranges ("shards") of the index space it records
// every element read and written and compares them with the selections the
// projections derive (recording runs the naive loops); on random partitions it
// checks that sharded execution equals one unsharded run bit for bit (without a
// recorder: the kernels' fast paths, RefContext::fast).
//
// HOW TO ADD ROWS (every kind in OpLibrary::standard() needs at least one):
// tests/support/op_cases.h holds the tables: elementwise_linalg_cases() for the
// elementwise, linear algebra, reduction and normalization kinds (checked by
// tests/engine/test_op_projections_boxes.cpp), shape_conv_attention_cases()
// that of the shape, convolution, embedding and attention kinds (listed by name
// in kKindsCheckedExactly of test_op_projections_boxes.cpp, checked by
// test_op_projections_exact.cpp). A new kind gets rows in the table of its family —
// in the second, also add its name to both kind lists. A row is e.g.
//
//     {"conv2d/pad", "conv2d", Params{{"padding", std::vector<std::int64_t>{1, 1, 1, 1}}},
//      {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3})}},
//
// Fields: row name, kind, params, input ports (helpers port()/ports() below; give
// integer dtypes where the op wants ids), then optional value bounds: `lo`/`hi`
// for float inputs (use lo > 0 for sqrt, pow, …) and `int_bound` (integer inputs
// are drawn from [0, int_bound), e.g. the vocabulary size of an embedding table).
// test_op_projections_boxes' every_kind_has_a_row fails while a registered kind is in
// neither table.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/resolve.h"
#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry::testing {

// One row of the projection table: an op applied to operands of given types.
struct OpCase {
    std::string name;  // row name shown by QTest, e.g. "linear/bias"
    std::string kind;
    Params params;
    std::vector<PortTypes> inputs;
    double lo = -2.0, hi = 2.0;    // float inputs are uniform in [lo, hi)
    std::int64_t int_bound = 4;    // integer inputs are uniform in [0, int_bound)
};

inline PortTypes port(std::string name, std::vector<Coord> shape, DType dtype = DType::f32) {
    return PortTypes{std::move(name), {OperandType{dtype, ZPoint(std::move(shape))}}};
}
// A variadic port (concat's inputs): one operand per shape.
inline PortTypes ports(std::string name, std::vector<std::vector<Coord>> shapes, DType dtype = DType::f32) {
    PortTypes p{std::move(name), {}};
    for (auto &s : shapes) p.operands.push_back(OperandType{dtype, ZPoint(std::move(s))});
    return p;
}

// Everything needed to run an op's reference kernel: the (defaulted) params, the
// relative derivation, zero-origin input arrays and output arrays, each indexed
// [port in OpDef port order][operand] (absent optional ports are empty).
struct OpRun {
    const OpDef *def = nullptr;
    Params params;
    Derivation derivation;
    std::vector<std::vector<RefArray>> inputs;
    std::vector<std::vector<RefArray>> outputs;
    std::vector<PortTypes> input_types;  // per input port in OpDef order (empty operands when absent)
};

// Thrown by the recorder (test code only) when a kernel touches an element outside
// its operand, before the out-of-bounds access happens.
struct OutOfOperand {
    std::string what;
};

// Records every access; counts per element.
class RecordingAccess : public AccessRecorder {
public:
    explicit RecordingAccess(const OpRun &run) : run_(run) {
        reads.resize(run.inputs.size());
        for (size_t p = 0; p < run.inputs.size(); ++p) reads[p].resize(run.inputs[p].size());
        writes.resize(run.outputs.size());
        for (size_t p = 0; p < run.outputs.size(); ++p) writes[p].resize(run.outputs[p].size());
    }
    void on_read(int port, int operand, const ZPoint &e) override {
        check(port, operand, e, false);
        ++reads[static_cast<size_t>(port)][static_cast<size_t>(operand)][e];
    }
    void on_write(int port, int operand, const ZPoint &e) override {
        check(port, operand, e, true);
        ++writes[static_cast<size_t>(port)][static_cast<size_t>(operand)][e];
    }
    std::vector<std::vector<std::map<ZPoint, int>>> reads, writes;

private:
    void check(int port, int operand, const ZPoint &e, bool write) const {
        const auto &arrays = write ? run_.outputs : run_.inputs;
        const bool known = port >= 0 && static_cast<size_t>(port) < arrays.size() && operand >= 0 &&
                           static_cast<size_t>(operand) < arrays[static_cast<size_t>(port)].size();
        if (!known)
            throw OutOfOperand{std::string(write ? "write to" : "read of") + " unknown operand " +
                               std::to_string(port) + "/" + std::to_string(operand)};
        const ZRange &r = arrays[static_cast<size_t>(port)][static_cast<size_t>(operand)].range;
        if (e.rank() != r.rank() || !r.contains(e))
            throw OutOfOperand{std::string(write ? "write to " : "read of ") + e.to_string() + " outside operand " +
                               std::to_string(port) + "/" + std::to_string(operand) + " " + r.to_string()};
    }
    const OpRun &run_;
};

inline std::string describe(const DerivationError &e) { return e.code + " at " + e.field + ": " + e.message; }

// Derives the case through OpLibrary::standard() and fills seeded random inputs;
// outputs are filled with NaN so that unwritten elements stand out.
inline Expected<OpRun, std::string> prepare(const OpCase &c, std::uint64_t seed) {
    const OpLibrary &lib = OpLibrary::standard();
    OpRun run;
    run.def = lib.find(c.kind);
    if (!run.def) return unexpected(std::string("unknown kind ") + c.kind);
    auto d = lib.derive(c.kind, c.params, c.inputs);
    if (!d) return unexpected("derive failed: " + describe(d.error()));
    run.derivation = std::move(d).value();
    run.params = lib.with_defaults(*run.def, c.params);

    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> real(c.lo, c.hi);
    std::uniform_int_distribution<std::int64_t> integer(0, std::max<std::int64_t>(c.int_bound, 1) - 1);
    for (const PortSpec &ps : run.def->input_ports()) {
        std::vector<RefArray> arrays;
        PortTypes types{ps.name, {}};
        if (const PortTypes *pt = op_util::find_port(c.inputs, ps.name)) {
            types = *pt;
            for (const OperandType &t : pt->operands) {
                RefArray a(ZRange::of_shape(t.shape));
                for (double &v : a.data)
                    v = dtype_is_float(t.dtype) ? real(rng) : static_cast<double>(integer(rng));
                arrays.push_back(std::move(a));
            }
        }
        run.inputs.push_back(std::move(arrays));
        run.input_types.push_back(std::move(types));
    }
    for (const PortSpec &ps : run.def->output_ports()) {
        std::vector<RefArray> arrays;
        if (const PortTypes *pt = op_util::find_port(run.derivation.outputs, ps.name))
            for (const OperandType &t : pt->operands)
                arrays.emplace_back(ZRange::of_shape(t.shape), std::numeric_limits<double>::quiet_NaN());
        run.outputs.push_back(std::move(arrays));
    }
    return run;
}

// Runs the reference kernel of `run` over `range`, writing into `outs` (arrays
// shaped like run.outputs), reporting accesses to `recorder` when given (which
// runs the naive loop); `fast_kernels` false runs the naive loop regardless.
inline void run_reference(const OpRun &run, const ZRange &range, std::vector<std::vector<RefArray>> &outs,
                          AccessRecorder *recorder = nullptr, bool fast_kernels = true) {
    RefContext ctx{run.params, run.derivation, {}, {}, range, recorder, fast_kernels};
    for (const auto &port : run.inputs) {
        std::vector<const RefArray *> ptrs;
        for (const RefArray &a : port) ptrs.push_back(&a);
        ctx.inputs.push_back(std::move(ptrs));
    }
    for (auto &port : outs) {
        std::vector<RefArray *> ptrs;
        for (RefArray &a : port) ptrs.push_back(&a);
        ctx.outputs.push_back(std::move(ptrs));
    }
    run.def->reference(ctx);
}

// The selection of operand `operand` of port `port` for an index sub-range.
inline ZRange selection(const OperandProjection &p, const ZRange &index_range, const ZPoint &shape) {
    return selection_of(p, index_range, ZRange::of_shape(shape));
}

inline ZRange bounding_box(const std::map<ZPoint, int> &points, int rank) {
    if (points.empty()) return ZRange(ZPoint::zeros(rank), ZPoint::zeros(rank));
    ZPoint lo = points.begin()->first, hi = lo;
    for (const auto &[p, n] : points)
        for (int d = 0; d < rank; ++d) {
            lo[d] = std::min(lo[d], p[d]);
            hi[d] = std::max(hi[d], p[d]);
        }
    return ZRange(lo, hi + ZPoint::filled(rank, 1));
}

// Random sub-ranges of `space`: the whole space, an empty one, a single point,
// uneven pieces of a split, and random boxes.
inline std::vector<ZRange> random_subranges(const ZRange &space, std::mt19937_64 &rng, int count) {
    std::vector<ZRange> out{space};
    const int rank = space.rank();
    if (rank == 0 || space.empty()) return out;
    out.push_back(ZRange(space.start(), space.start()));  // empty
    out.push_back(ZRange(space.start(), space.start() + ZPoint::filled(rank, 1)));
    for (int d = 0; d < rank; ++d)
        if (space.extent(d) >= 3) {
            for (const ZRange &piece : space.split(d, 3)) out.push_back(piece);  // uneven when extent % 3 != 0
            break;
        }
    for (int k = 0; k < count; ++k) {
        ZPoint s = space.start(), e = space.end();
        for (int d = 0; d < rank; ++d) {
            std::uniform_int_distribution<Coord> at(space.start()[d], space.end()[d]);
            Coord a = at(rng), b = at(rng);
            if (a > b) std::swap(a, b);
            if (a == b && b < space.end()[d]) ++b;  // keep most boxes non-empty
            s[d] = a;
            e[d] = b;
        }
        out.push_back(ZRange(s, e));
    }
    return out;
}

// A random partition of `space` into a grid of uneven boxes.
inline std::vector<ZRange> random_partition(const ZRange &space, std::mt19937_64 &rng) {
    std::vector<ZRange> parts{space};
    for (int d = 0; d < space.rank(); ++d) {
        const Coord extent = space.extent(d);
        if (extent < 2) continue;
        std::uniform_int_distribution<Coord> cut(space.start()[d] + 1, space.end()[d] - 1);
        std::set<Coord> cuts;
        const int n = static_cast<int>(std::min<Coord>(extent - 1, 2));
        for (int k = 0; k < n; ++k) cuts.insert(cut(rng));
        std::vector<ZRange> next;
        for (const ZRange &p : parts)
            for (const ZRange &q : p.split_at(d, std::vector<Coord>(cuts.begin(), cuts.end()))) next.push_back(q);
        parts = std::move(next);
    }
    return parts;
}

// Checks the reads and writes of one sub-range against the projected selections.
// Returns "" when they agree, else what is wrong.
inline std::string check_accesses(const OpRun &run, const ZRange &range) {
    // Fresh output arrays per shard, so that a shard's writes are its own.
    std::vector<std::vector<RefArray>> outs = run.outputs;
    RecordingAccess rec(run);
    try {
        run_reference(run, range, outs, &rec);
    } catch (const OutOfOperand &e) {
        return "shard " + range.to_string() + ": " + e.what;
    }
    // An empty sub-range touches nothing. (Checked apart: the image of an empty
    // range in a rank-0 operand is the 0-dim range, which has size 1.)
    if (range.empty()) {
        for (const auto *side : {&rec.reads, &rec.writes})
            for (const auto &port : *side)
                for (const auto &operand : port)
                    if (!operand.empty())
                        return "shard " + range.to_string() + ": the empty sub-range touched " +
                               operand.begin()->first.to_string();
        return {};
    }
    const ReadPattern pattern = run.def->read_pattern(run.params);
    const std::vector<PortSpec> in_ports = run.def->input_ports();
    std::ostringstream err;
    for (size_t p = 0; p < run.inputs.size(); ++p) {
        for (size_t o = 0; o < run.inputs[p].size(); ++o) {
            const OperandProjection *proj = run.derivation.signature.input(in_ports[p].name, o);
            const std::string name = op_util::input_field(in_ports[p].name, o);
            if (!proj) {
                err << name << " has no projection; ";
                continue;
            }
            const RefArray &arr = run.inputs[p][o];
            const ZRange sel = selection(*proj, range, arr.range.shape());
            const auto &reads = rec.reads[p][o];
            if (!proj->clipped && !arr.range.contains(sel))
                err << name << " selection " << sel.to_string() << " reaches outside the operand "
                    << arr.range.to_string() << " but the projection is not clipped; ";
            size_t outside = 0;
            for (const auto &[e, n] : reads)
                if (!sel.contains(e)) ++outside;
            if (outside)
                err << name << ": " << outside << " elements read outside the selection " << sel.to_string()
                    << " (e.g. " << std::find_if(reads.begin(), reads.end(), [&](const auto &kv) {
                           return !sel.contains(kv.first);
                       })->first.to_string()
                    << "); ";
            const ZRange box = bounding_box(reads, arr.range.rank());
            if (pattern == ReadPattern::dense && static_cast<Coord>(reads.size()) != sel.size())
                err << name << ": read " << reads.size() << " distinct elements (box " << box.to_string()
                    << ") but the selection " << sel.to_string() << " has " << sel.size() << "; ";
            if ((pattern == ReadPattern::dense || pattern == ReadPattern::strided) && !(box == sel) &&
                !(box.empty() && sel.empty()))
                err << name << ": reads span " << box.to_string() << " but the selection is " << sel.to_string()
                    << "; ";
        }
    }
    const std::vector<PortSpec> out_ports = run.def->output_ports();
    for (size_t p = 0; p < run.outputs.size(); ++p) {
        for (size_t o = 0; o < run.outputs[p].size(); ++o) {
            const OperandProjection *proj = run.derivation.signature.output(out_ports[p].name, o);
            const std::string name = "outputs." + out_ports[p].name + "[" + std::to_string(o) + "]";
            if (!proj) {
                err << name << " has no projection; ";
                continue;
            }
            const ZRange sel = selection(*proj, range, run.outputs[p][o].range.shape());
            const auto &writes = rec.writes[p][o];
            for (const auto &[e, n] : writes) {
                if (n != 1) {
                    err << name << ": element " << e.to_string() << " written " << n << " times; ";
                    break;
                }
            }
            size_t outside = 0;
            for (const auto &[e, n] : writes)
                if (!sel.contains(e)) ++outside;
            if (outside) err << name << ": " << outside << " writes outside the selection " << sel.to_string() << "; ";
            if (static_cast<Coord>(writes.size()) != sel.size())
                err << name << ": wrote " << writes.size() << " elements but the selection " << sel.to_string()
                    << " has " << sel.size() << "; ";
        }
    }
    const std::string s = err.str();
    return s.empty() ? s : "shard " + range.to_string() + ": " + s;
}

inline bool bitwise_equal(const std::vector<std::vector<RefArray>> &a, const std::vector<std::vector<RefArray>> &b) {
    if (a.size() != b.size()) return false;
    for (size_t p = 0; p < a.size(); ++p) {
        if (a[p].size() != b[p].size()) return false;
        for (size_t o = 0; o < a[p].size(); ++o) {
            if (!(a[p][o].range == b[p][o].range) || a[p][o].data.size() != b[p][o].data.size()) return false;
            for (size_t k = 0; k < a[p][o].data.size(); ++k)
                if (std::bit_cast<std::uint64_t>(a[p][o].data[k]) != std::bit_cast<std::uint64_t>(b[p][o].data[k]))
                    return false;
        }
    }
    return true;
}

// The whole check for one row: derivation sanity, per-shard access checks on
// random sub-ranges, and sharded == unsharded on random partitions.
// Returns "" when everything holds, else every failure found.
inline std::string check_op_case(const OpCase &c, std::uint64_t seed = 1) {
    auto prepared = prepare(c, seed);
    if (!prepared) return prepared.error();
    OpRun run = std::move(prepared).value();
    const Signature &sig = run.derivation.signature;
    const ZRange &space = sig.index_space;
    std::ostringstream err;

    // Structural sanity: ranks agree, the whole space writes the whole output.
    for (const auto *side : {&sig.inputs, &sig.outputs})
        for (const PortProjections &pp : *side)
            for (const OperandProjection &op : pp.operands)
                if (op.projection.index_rank() != space.rank())
                    err << pp.port << " projection has index rank " << op.projection.index_rank()
                        << " but the index space " << space.to_string() << " has rank " << space.rank() << "; ";
    for (size_t p = 0; p < run.outputs.size(); ++p)
        for (size_t o = 0; o < run.outputs[p].size(); ++o) {
            const OperandProjection *proj = sig.output(run.def->output_ports()[p].name, o);
            if (proj && !(selection(*proj, space, run.outputs[p][o].range.shape()) == run.outputs[p][o].range))
                err << "the whole index space writes " << selection(*proj, space, run.outputs[p][o].range.shape()).to_string()
                    << ", not the whole output " << run.outputs[p][o].range.to_string() << "; ";
        }
    if (run.def->flops_per_point(run.params, run.derivation) < 0) err << "negative flops_per_point; ";
    if (!err.str().empty()) return err.str();

    std::mt19937_64 rng(seed * 7919 + 17);
    for (const ZRange &r : random_subranges(space, rng, 8)) {
        const std::string e = check_accesses(run, r);
        if (!e.empty()) return e;
    }

    // Sharded equals unsharded, bit for bit.
    std::vector<std::vector<RefArray>> whole = run.outputs;
    run_reference(run, space, whole);
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<std::vector<RefArray>> sharded = run.outputs;
        const std::vector<ZRange> parts = random_partition(space, rng);
        for (const ZRange &part : parts) run_reference(run, part, sharded);
        if (!bitwise_equal(whole, sharded)) {
            std::string s;
            for (const ZRange &part : parts) s += part.to_string() + " ";
            return "sharded run over " + s + "differs from the unsharded run";
        }
    }
    for (const auto &port : whole)
        for (const RefArray &a : port)
            for (double v : a.data)
                if (std::isnan(v)) return "the unsharded run left an output element unwritten (or NaN)";
    return {};
}

// Runs the reference over the whole index space on the given inputs (port order
// of the OpDef; trailing absent optional ports may be left out) and returns the
// outputs — for closed-form comparisons.
inline Expected<std::vector<std::vector<RefArray>>, std::string> evaluate_case(
    const OpCase &c, const std::vector<std::vector<RefArray>> &inputs) {
    auto prepared = prepare(c, 1);
    if (!prepared) return unexpected(prepared.error());
    OpRun run = std::move(prepared).value();
    if (inputs.size() > run.inputs.size()) return unexpected(std::string("more input ports than the op has"));
    for (size_t p = 0; p < run.inputs.size(); ++p) {
        const size_t given = p < inputs.size() ? inputs[p].size() : 0;
        if (given != run.inputs[p].size())
            return unexpected("port " + std::to_string(p) + " has " + std::to_string(given) + " operands, the case " +
                              std::to_string(run.inputs[p].size()));
        for (size_t o = 0; o < given; ++o)
            if (!(inputs[p][o].range == run.inputs[p][o].range))
                return unexpected("operand " + std::to_string(p) + "/" + std::to_string(o) + " spans " +
                                  inputs[p][o].range.to_string() + ", the case " + run.inputs[p][o].range.to_string());
        if (given) run.inputs[p] = inputs[p];
    }
    run_reference(run, run.derivation.signature.index_space, run.outputs);
    return run.outputs;
}

// The kinds the rows cover.
inline std::set<std::string> covered_kinds(const std::vector<OpCase> &cases) {
    std::set<std::string> out;
    for (const OpCase &c : cases) out.insert(c.kind);
    return out;
}

}  // namespace tapestry::testing
