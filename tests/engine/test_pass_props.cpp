// Property: every stage the passes produce is certified. Random small graphs
// (tests/support/random_graph.h) × random shard specs (random ops, dims, even and
// uneven counts, explicit sizes, repeated specs for product sharding, contraction
// splits) through the pipeline [substitute] → shard → [fuse] → either the shard
// pass refuses with a message naming the spec, or every stage passes every
// certificate check: structure, coverage, injectivity, dataflow and a
// numeric run against the original. TAPESTRY_PASS_PROPS_CASES sets the number of
// cases (default 40; the `slow` CTest entry runs 10,000). With rapidcheck failing
// cases shrink; without it a seeded generator replays (TAPESTRY_SEED).
#include <QtTest/QtTest>
#include <random>

#include "graph/resolve.h"
#include "io/project_file.h"
#include "numeric_certify.h"
#include "passes/fuse.h"
#include "passes/shard.h"
#include "passes/stage.h"
#include "passes/substitute.h"
#include "random_graph.h"

#ifdef TAPESTRY_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#endif

using namespace tapestry;
using tapestry::testing::GraphBuilder;
using tapestry::testing::Pick;

namespace {

// 80 cases: with the fixed seed below every pass changes some graphs (40 were
// enough until the generator drew from more activations; then no case substituted).
int default_cases() {
    bool ok = false;
    const int n = qEnvironmentVariableIntValue("TAPESTRY_PASS_PROPS_CASES", &ok);
    return ok && n > 0 ? n : 80;
}

// Up to three specs on random operations: a random index dim, then an even count
// (2..4, capped by the extent) or explicit random sizes summing to the extent.
std::vector<std::string> random_specs(const Graph &g, const Pick &pick) {
    std::vector<std::string> specs;
    const auto ops = g.operations();
    const int n = static_cast<int>(pick(1, 3));
    for (int i = 0; i < n; ++i) {
        const OpPtr &op = ops[static_cast<size_t>(pick(0, static_cast<Coord>(ops.size()) - 1))];
        const auto d = resolve(g, *op, OpLibrary::standard());
        if (!d) continue;
        const ZRange space = d->signature.index_space;
        if (space.rank() == 0) continue;
        // Now and then the dim one past the index dims: a contraction (matmul's k,
        // linear's in, a reduced axis) split through the monoid rewrite, or a refusal.
        const bool contracts = op->kind == "matmul" || op->kind == "linear" || op->kind.rfind("reduce_", 0) == 0;
        if (contracts && pick(0, 2) == 0) {
            specs.push_back(op->id.value + ":" + std::to_string(space.rank()) + "=" + std::to_string(pick(2, 3)));
            continue;
        }
        const int dim = static_cast<int>(pick(0, space.rank() - 1));
        const Coord extent = space.extent(dim);
        if (extent < 2) continue;
        std::string spec = op->id.value + ":" + std::to_string(dim) + "=";
        if (pick(0, 2) > 0) {
            spec += std::to_string(pick(2, std::min<Coord>(4, extent)));
        } else {
            // Explicit sizes: random cut points.
            std::vector<Coord> cuts{0, extent};
            const Coord parts = pick(2, std::min<Coord>(3, extent));
            while (static_cast<Coord>(cuts.size()) < parts + 1) {
                const Coord c = pick(1, extent - 1);
                if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
            }
            std::sort(cuts.begin(), cuts.end());
            for (size_t k = 1; k < cuts.size(); ++k) spec += (k > 1 ? "+" : "") + std::to_string(cuts[k] - cuts[k - 1]);
        }
        specs.push_back(spec);
    }
    return specs;
}

struct Outcome {
    std::optional<std::string> failure;
    bool refused = false;
    bool substituted = false;   // the substitute stage changed the graph
    bool fused = false;         // the fuse stage changed the graph
    bool split_contraction = false;  // a partial product or partial reduce appeared
    bool moved = false;         // the shard stage inserted a move node
};

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += (s.empty() ? "" : " ") + x;
    return s;
}

Outcome check_case(const Pick &pick) {
    GraphBuilder builder(pick);
    const Graph g = builder.build();
    const std::vector<std::string> specs = random_specs(g, pick);
    auto options = parse_shard_options(specs);
    if (!options) return {"specs the generator wrote do not parse: " + options.error(), false};

    verify::NumericCheckOptions numeric;
    numeric.seed = static_cast<std::uint64_t>(pick(0, 1 << 20));
    CertifyOptions certify;
    certify.numeric = verify::numeric_check(numeric);
    // substitute (sometimes) → shard → fuse (sometimes).
    Pipeline pipeline;
    if (pick(0, 3) == 0) pipeline.add("substitute", [](const Graph &in) { return substitute(in, {}); });
    const ShardOptions shard_options = *options;
    pipeline.add("shard", [shard_options](const Graph &in) { return shard(in, shard_options); });
    if (pick(0, 1) == 0) pipeline.add("fuse", [](const Graph &in) { return fuse(in, test::cpu_fuse()); });
    const auto stages = pipeline.run(g, certify);
    if (!stages) {
        // A refusal is fine when it says which spec and why.
        if (stages.error().find("shard spec '") == std::string::npos)
            return {"refusal without the spec: " + stages.error() + "\nspecs: " + join(specs) + "\n" + serialize_project(g),
                    false};
        if (qEnvironmentVariableIsSet("TAPESTRY_PROPS_VERBOSE")) qInfo("refused: %s", stages.error().c_str());
        return {std::nullopt, true};
    }
    Outcome done;
    for (const Stage &s : *stages) {
        if (s.pass == "substitute" && !s.diff.empty()) done.substituted = true;
        if (s.pass == "fuse" && !s.diff.empty()) done.fused = true;
        if (s.pass == "shard")
            for (const OpPtr &op : s.graph.operations()) {
                if (op->id.value.find(".partial") != std::string::npos) done.split_contraction = true;
                if (op->kind == "move") done.moved = true;
            }
        if (!s.certificate.pass())
            return {"stage '" + s.pass + "' (" + join(specs) + ") not certified:\n" + s.certificate.text() + "\n" +
                        serialize_project(s.graph),
                    false};
    }
    return done;
}

}  // namespace

class TestPassProps : public QObject {
    Q_OBJECT

    int cases_ = 80;

private slots:
    void initTestCase();
    void every_stage_is_certified();
};

void TestPassProps::initTestCase() {
    cases_ = default_cases();
#ifdef TAPESTRY_HAVE_RAPIDCHECK
    // A fixed seed keeps CI reproducible; set RC_PARAMS to explore other seeds.
    if (qEnvironmentVariableIsEmpty("RC_PARAMS"))
        qputenv("RC_PARAMS", "seed=20261121 max_success=" + QByteArray::number(cases_) + " verbose_progress=0");
#endif
}

void TestPassProps::every_stage_is_certified() {
    int refused = 0, substituted = 0, fused = 0, split = 0, moved = 0;
    auto count = [&](const Outcome &o) {
        refused += o.refused ? 1 : 0;
        substituted += o.substituted ? 1 : 0;
        fused += o.fused ? 1 : 0;
        split += o.split_contraction ? 1 : 0;
        moved += o.moved ? 1 : 0;
    };
#ifdef TAPESTRY_HAVE_RAPIDCHECK
    int ran = 0;
    const bool ok = rc::check("every stage is certified", [&] {
        const Pick pick = [](Coord lo, Coord hi) { return *rc::gen::inRange<Coord>(lo, hi + 1); };
        const Outcome o = check_case(pick);
        ++ran;
        count(o);
        if (o.failure) RC_FAIL(*o.failure);
    });
    QVERIFY2(ok, "a stage is not certified (the shrunk case is printed above)");
    const int cases = ran;
#else
    bool seed_ok = false;
    const unsigned seed = static_cast<unsigned>(qEnvironmentVariableIntValue("TAPESTRY_SEED", &seed_ok));
    std::mt19937_64 rng(seed_ok ? seed : 20261121u);
    const Pick pick = [&rng](Coord lo, Coord hi) { return std::uniform_int_distribution<Coord>(lo, hi)(rng); };
    for (int k = 0; k < cases_; ++k) {
        const Outcome o = check_case(pick);
        count(o);
        QVERIFY2(!o.failure, o.failure.value_or("").c_str());
    }
    const int cases = cases_;
#endif
    qInfo("%d cases: %d refused with a message naming the spec; %d with a contraction split, %d with moves, "
          "%d substituted, %d fused",
          cases, refused, split, moved, substituted, fused);
    // The property says little unless every pass actually changed graphs.
    QVERIFY(split > 0 && moved > 0 && substituted > 0 && fused > 0);
}

QTEST_GUILESS_MAIN(TestPassProps)
#include "test_pass_props.moc"
