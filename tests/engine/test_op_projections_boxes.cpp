// Every op of the standard library, run through the projection harness
// (tests/support/op_check.h): on random shards its reference kernel touches
// exactly the elements its projections select, and sharded runs equal the
// unsharded one. One row per (kind, params, input shapes); a kind without a row
// fails the coverage test.
#include <QtTest/QtTest>

#include "op_cases.h"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

// ---- shape, convolution, embedding, attention: checked exactly ------------------------
// Their rows live in tests/engine/test_op_projections_exact.cpp (which adds exact ISL
// image checks for projections with holes) and that suite fails when one of these
// kinds has no row there. A kind in neither list fails every_kind_has_a_row.
const std::set<std::string> kKindsCheckedExactly{"transpose", "reshape",    "concat",    "slice",    "conv2d",
                                                  "max_pool2d", "avg_pool2d", "embedding", "gather",    "attention"};

std::vector<OpCase> all_cases() { return elementwise_linalg_cases(); }

}  // namespace

class TestOpProjectionsBoxes : public QObject {
    Q_OBJECT
private slots:
    void projections_match_reference_accesses_data() {
        QTest::addColumn<int>("row");
        const std::vector<OpCase> cases = all_cases();
        for (size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i].name.c_str()) << static_cast<int>(i);
    }
    void projections_match_reference_accesses() {
        QFETCH(int, row);
        const OpCase c = all_cases()[static_cast<size_t>(row)];
        for (std::uint64_t seed : {1u, 2u}) {
            const std::string err = check_op_case(c, seed);
            QVERIFY2(err.empty(), (c.name + " (seed " + std::to_string(seed) + "): " + err).c_str());
        }
    }

    // No op escapes the check: every registered kind has at least one row.
    void every_kind_has_a_row() {
        std::set<std::string> covered = covered_kinds(all_cases());
        covered.insert(kKindsCheckedExactly.begin(), kKindsCheckedExactly.end());
        std::string missing;
        for (const OpDef *d : OpLibrary::standard().all())
            if (!covered.count(std::string(d->kind()))) missing += std::string(missing.empty() ? "" : ", ") + std::string(d->kind());
        QVERIFY2(missing.empty(), ("kinds without a projection row: " + missing).c_str());
        // And no row names a kind the library lacks.
        for (const std::string &k : covered) QVERIFY2(OpLibrary::standard().find(k), ("unknown kind in table: " + k).c_str());
    }

    // The harness itself must catch a wrong projection: narrowing a's k window
    // makes the reads of a and b disagree with the selections they derive.
    void harness_detects_a_wrong_projection() {
        auto prepared = prepare(OpCase{"m", "matmul", {}, {port("a", {3, 4}), port("b", {4, 2})}}, 1);
        QVERIFY(prepared.has_value());
        OpRun run = std::move(prepared).value();
        PortProjections &pa = run.derivation.signature.inputs[0];
        const IndexProjection &p = pa.operands[0].projection;
        ZPoint w = p.window();
        w[1] = 2;
        pa.operands[0].projection = IndexProjection(p.map(), w);
        const std::string err = check_accesses(run, run.derivation.signature.index_space);
        QVERIFY2(!err.empty(), "a narrowed window went unnoticed");
        QVERIFY2(err.find("inputs.b[0]") != std::string::npos || err.find("inputs.a[0]") != std::string::npos,
                 err.c_str());
    }

    void harness_detects_missing_writes() {
        auto prepared = prepare(OpCase{"r", "relu", {}, {port("x", {4, 4})}}, 1);
        QVERIFY(prepared.has_value());
        OpRun run = std::move(prepared).value();
        // Claim the output projection writes a 2-wide window per point: the kernel
        // writes one element per point, so the writes no longer equal the selection.
        PortProjections &py = run.derivation.signature.outputs[0];
        py.operands[0].projection = IndexProjection(py.operands[0].projection.map(), ZPoint{1, 2});
        const std::string err = check_accesses(run, ZRange::of_shape({2, 2}));
        QVERIFY2(err.find("outputs.y[0]") != std::string::npos, err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestOpProjectionsBoxes)
#include "test_op_projections_boxes.moc"
