// The shape, convolution, embedding and attention kinds in the touched-element
// harness (tests/support/op_check.h), checked exactly: on random sub-ranges of
// the index space, the elements each reference kernel reads and writes are
// compared with the exact (ISL) images of the projections as well as with the
// box selections, and sharded runs must equal the unsharded run bit for bit.
//
// Exact images matter here: several of these ops project through rows with
// more than one non-zero coefficient — attention writes y[b, s, h·Ev + e],
// grouped conv2d reads w[g·K/G + k'], a reshape merge writes y[a·B + b] — so a
// sub-range can read or write a box with holes. The box check alone cannot tell
// such holes from a wrong projection; the exact image can.
#include <QtTest/QtTest>
#include <functional>
#include <optional>

#include "index/index_set.h"
#include "op_cases.h"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

IndexSet set_of(const std::map<ZPoint, int> &points, int rank) {
    std::vector<ZRange> boxes;
    for (const auto &[p, n] : points) boxes.push_back(ZRange(p, p + ZPoint::filled(rank, 1)));
    return IndexSet::of_ranges(rank, boxes);
}

// The exact elements a sub-range touches through a projection of an operand of
// `shape`: every element of every window, intersected with the operand when clipped.
IndexSet exact_image(const OperandProjection &p, const ZRange &range, const ZPoint &shape) {
    IndexSet img = IndexSet::of_range(range).image(p.projection);
    if (p.clipped) img = img.intersect(IndexSet::of_range(ZRange::of_shape(shape)));
    return img;
}

// The touched-element check of one sub-range, with exact images. "" when all holds.
std::string check_exact(const OpRun &run, const ZRange &range) {
    std::vector<std::vector<RefArray>> outs = run.outputs;
    RecordingAccess rec(run);
    try {
        run_reference(run, range, outs, &rec);
    } catch (const OutOfOperand &e) {
        return "shard " + range.to_string() + ": " + e.what;
    }
    const ReadPattern pattern = run.def->read_pattern(run.params);
    std::ostringstream err;
    const std::vector<PortSpec> in_ports = run.def->input_ports();
    for (size_t p = 0; p < run.inputs.size(); ++p)
        for (size_t o = 0; o < run.inputs[p].size(); ++o) {
            const std::string name = op_util::input_field(in_ports[p].name, o);
            const OperandProjection *proj = run.derivation.signature.input(in_ports[p].name, o);
            if (!proj) {
                err << name << " has no projection; ";
                continue;
            }
            const ZPoint shape = run.inputs[p][o].range.shape();
            const int rank = shape.rank();
            const ZRange box = selection(*proj, range, shape);
            const IndexSet exact = exact_image(*proj, range, shape);
            const IndexSet reads = set_of(rec.reads[p][o], rank);
            if (!proj->clipped && !range.empty() && !ZRange::of_shape(shape).contains(box))
                err << name << " selection " << box.to_string() << " leaves the unclipped operand; ";
            if (!reads.is_subset_of(exact))
                err << name << " reads outside the exact image, e.g. "
                    << reads.subtract(exact).sample_point().value_or(ZPoint{}).to_string() << "; ";
            // A point reading single elements (window all ones) reads its exact
            // image, whatever the pattern says about sub-ranges.
            const bool unit_window = proj->projection.window() == ZPoint::filled(rank, 1);
            if (pattern != ReadPattern::data_dependent && unit_window && !reads.equals(exact))
                err << name << " reads " << reads.count() << " elements, the exact image has " << exact.count() << "; ";
            if (pattern == ReadPattern::dense && !reads.equals(IndexSet::of_range(box)))
                err << name << " (dense) reads " << reads.count() << " elements, the selection " << box.to_string()
                    << " has " << box.size() << "; ";
            if (pattern == ReadPattern::strided && !(bounding_box(rec.reads[p][o], rank) == box) &&
                !(box.empty() && rec.reads[p][o].empty()))
                err << name << " (strided) reads span " << bounding_box(rec.reads[p][o], rank).to_string()
                    << ", the selection is " << box.to_string() << "; ";
        }
    const std::vector<PortSpec> out_ports = run.def->output_ports();
    for (size_t p = 0; p < run.outputs.size(); ++p)
        for (size_t o = 0; o < run.outputs[p].size(); ++o) {
            const std::string name = "outputs." + out_ports[p].name + "[" + std::to_string(o) + "]";
            const OperandProjection *proj = run.derivation.signature.output(out_ports[p].name, o);
            if (!proj) {
                err << name << " has no projection; ";
                continue;
            }
            const ZPoint shape = run.outputs[p][o].range.shape();
            for (const auto &[e, n] : rec.writes[p][o])
                if (n != 1) {
                    err << name << " element " << e.to_string() << " written " << n << " times; ";
                    break;
                }
            const IndexSet writes = set_of(rec.writes[p][o], shape.rank());
            const IndexSet exact = exact_image(*proj, range, shape);
            if (!writes.equals(exact))
                err << name << " writes " << writes.count() << " elements, the exact image has " << exact.count()
                    << "; ";
            if (!(bounding_box(rec.writes[p][o], shape.rank()) == selection(*proj, range, shape)) && !range.empty())
                err << name << " writes span " << bounding_box(rec.writes[p][o], shape.rank()).to_string()
                    << ", the selection is " << selection(*proj, range, shape).to_string() << "; ";
        }
    const std::string s = err.str();
    return s.empty() ? s : "shard " + range.to_string() + ": " + s;
}

std::string check_case_exact(const OpCase &c, std::uint64_t seed) {
    auto prepared = prepare(c, seed);
    if (!prepared) return prepared.error();
    const OpRun run = std::move(prepared).value();
    const ZRange &space = run.derivation.signature.index_space;
    for (const PortProjections &pp : run.derivation.signature.outputs)
        for (const OperandProjection &op : pp.operands) {
            const InjectivityReport inj = check_injective(op.projection, space);
            if (!inj.injective) return pp.port + " is not injective on " + space.to_string();
        }
    std::mt19937_64 rng(seed * 104729 + 3);
    for (const ZRange &r : random_subranges(space, rng, 10)) {
        const std::string e = check_exact(run, r);
        if (!e.empty()) return e;
    }
    std::vector<std::vector<RefArray>> whole = run.outputs;
    run_reference(run, space, whole);
    for (const auto &port : whole)
        for (const RefArray &a : port)
            for (double v : a.data)
                if (std::isnan(v)) return "the unsharded run left an output element unwritten (or NaN)";
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<std::vector<RefArray>> sharded = run.outputs;
        for (const ZRange &part : random_partition(space, rng)) run_reference(run, part, sharded);
        if (!bitwise_equal(whole, sharded)) return "a sharded run differs from the unsharded run";
    }
    return {};
}

const std::set<std::string> kExactKinds{"transpose",  "reshape",    "concat",    "slice",    "conv2d",
                                       "max_pool2d", "avg_pool2d", "embedding", "gather",    "attention"};

}  // namespace

class TestOpProjectionsExact : public QObject {
    Q_OBJECT
private slots:
    void touched_elements_match_projections_data() {
        QTest::addColumn<int>("row");
        const std::vector<OpCase> rows = shape_conv_attention_cases();
        for (size_t i = 0; i < rows.size(); ++i) QTest::newRow(rows[i].name.c_str()) << static_cast<int>(i);
    }
    void touched_elements_match_projections() {
        QFETCH(int, row);
        const OpCase c = shape_conv_attention_cases()[static_cast<size_t>(row)];
        for (std::uint64_t seed : {1u, 2u}) {
            const std::string err = check_case_exact(c, seed);
            QVERIFY2(err.empty(), (c.name + " (seed " + std::to_string(seed) + "): " + err).c_str());
        }
    }

    // Rows whose outputs are written as whole boxes also pass the box-level
    // harness unchanged (check_op_case).
    void box_harness_agrees_data() {
        QTest::addColumn<int>("row");
        const std::vector<OpCase> rows = shape_conv_attention_cases();
        for (size_t i = 0; i < rows.size(); ++i) {
            const std::string &n = rows[i].name;
            // Outputs through a multi-coefficient row: holes on some sub-ranges.
            // slice/empty: the box harness compares the empty image [0:0, 0:0] with
            // the empty output [0:0, 0:2] as ranges, which differ by their ends.
            if (n == "reshape/merge" || n == "reshape/refined" || n == "reshape/mixed-groups" || n == "slice/empty" ||
                n == "conv2d/groups" || n == "conv2d/depthwise" || n == "attention/heads" ||
                n == "attention/causal-mask" || n == "attention/scale-rect")
                continue;
            QTest::newRow(n.c_str()) << static_cast<int>(i);
        }
    }
    void box_harness_agrees() {
        QFETCH(int, row);
        const OpCase c = shape_conv_attention_cases()[static_cast<size_t>(row)];
        const std::string err = check_op_case(c, 3);
        QVERIFY2(err.empty(), (c.name + ": " + err).c_str());
    }

    void every_kind_of_this_suite_has_a_row() {
        const std::set<std::string> covered = covered_kinds(shape_conv_attention_cases());
        for (const std::string &k : kExactKinds) QVERIFY2(covered.count(k), ("no row for " + k).c_str());
        for (const std::string &k : covered)
            QVERIFY2(kExactKinds.count(k), ("row for a kind not of this suite: " + k).c_str());
    }

    // The exact check must catch wrong projections: conv2d's x shifted by one row,
    // attention's y written with the wrong head stride, a reshape split read
    // through the wrong coefficients.
    void exact_check_detects_wrong_projections() {
        struct Tamper {
            OpCase c;
            bool output;  // tamper the output (else input 0)
            std::function<IndexProjection(const IndexProjection &)> change;
            std::string expect;
            std::optional<ZRange> range;  // the whole index space when absent
        };
        const std::vector<Tamper> tampers{
            {{"", "conv2d", Params{{"padding", Ints{1, 1, 1, 1}}}, {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3})}},
             false,
             [](const IndexProjection &p) {
                 return p.translated(ZPoint{0, 0, 1, 0});
             },
             "inputs.x[0]",
             ZRange({0, 0, 0, 0}, {1, 1, 1, 1})},
            {{"",
              "attention",
              Params{{"heads", std::int64_t{2}}},
              {port("q", {1, 2, 4}), port("k", {1, 3, 4}), port("v", {1, 3, 6})}},
             true,
             [](const IndexProjection &p) {
                 ZMatrix a = p.map().matrix();
                 a.at(2, 1) = 4;  // Ev is 3; stride 4 writes the wrong columns
                 return IndexProjection(AffineMap(a, p.map().offset()), p.window());
             },
             "outputs.y[0]",
             std::nullopt},
            {{"", "reshape", Params{{"shape", Ints{2, 3}}}, {port("x", {6})}},
             false,
             [](const IndexProjection &p) {
                 ZMatrix a = p.map().matrix();
                 a.at(0, 0) = 2;  // should be 3
                 return IndexProjection(AffineMap(a, p.map().offset()), p.window());
             },
             "inputs.x[0]",
             std::nullopt},
        };
        for (const Tamper &t : tampers) {
            auto prepared = prepare(t.c, 1);
            QVERIFY(prepared.has_value());
            OpRun run = std::move(prepared).value();
            auto &side = t.output ? run.derivation.signature.outputs : run.derivation.signature.inputs;
            side[0].operands[0].projection = t.change(side[0].operands[0].projection);
            const std::string err = check_exact(run, t.range.value_or(run.derivation.signature.index_space));
            QVERIFY2(err.find(t.expect) != std::string::npos, (t.c.kind + ": " + err).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestOpProjectionsExact)
#include "test_op_projections_exact.moc"
