// Incremental evaluation (issue 16, docs/search.md "Incremental evaluation"): a
// search's evaluations keep what they built — each op's split, the movement walks'
// decisions, the fused ops, the placed nodes, the compiler's pieces — and build the next
// candidate from it. It must change no figure: every candidate of a search's
// stream (every example, 2–8 devices, device maps, pipeline cuts, fusion) is
// evaluated again afresh and compared exactly; the replayed shard stage is the
// shard pass's graph node for node; placement and the compiler give the same
// graph and plan with their memos as without, the second time from the memos;
// splits that do not compose (a name one op's rewrite makes is taken) fall back
// to the pass.
#include <QtTest/QtTest>

#include "cost/target.h"
#include "graph/derivation_cache.h"
#include "ops/library.h"
#include "passes/fuse.h"
#include "passes/movement.h"
#include "passes/place.h"
#include "passes/shard.h"
#include "plan/baselines.h"
#include "plan/compile.h"
#include "plan/plan_file.h"
#include "runtime/cpu/fusion_backend.h"
#include "search/incremental.h"
#include "search/optimizer.h"
#include "test_projects.h"

using namespace tapestry;
using namespace tapestry::search;

namespace {

Graph example(const std::string &name) {
    LoadResult r = load_project(test::source_dir() / "projects" / (name + ".tapestry.json"));
    if (!r.ok()) qFatal("%s does not load", name.c_str());
    return plan::without_shards(r.graph);
}

// An evaluator of `g` on `devices` H100s whose space allows device maps and
// pipeline cuts (and fusion, when asked).
Evaluator evaluator_for(const Graph &g, int devices, bool fusion) {
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, devices, 1);
    auto space = Space::of(g, devices);
    if (!target || !shape || !space) qFatal("evaluator setup failed");
    space->allow_maps(true);
    space->allow_cuts(true);
    std::vector<const FusionBackend *> backends;
    if (fusion) backends.push_back(&cpu::fusion_backend());
    return Evaluator(g, *space, *target, *shape, {Objective::time, Objective::memory, Objective::devices}, {}, {},
                     backends);
}

// The candidates a search evaluates, in its order.
std::vector<Candidate> stream(const Evaluator &e, std::uint64_t seed, long evaluations) {
    std::vector<Candidate> out;
    SearchOptions o;
    o.seed = seed;
    o.max_evaluations = evaluations;
    o.budget_seconds = 0;
    o.threads = 1;
    SearchHooks h;
    h.candidate = [&](const Scored &s) { out.push_back(s.candidate); };
    if (!optimize(e, o, h)) qFatal("search failed");
    return out;
}

// Where two graphs differ, node for node in order ("" when they do not).
std::string difference(const Graph &a, const Graph &b) {
    if (a.tensors().size() != b.tensors().size())
        return std::to_string(a.tensors().size()) + " tensors against " + std::to_string(b.tensors().size());
    if (a.operations().size() != b.operations().size())
        return std::to_string(a.operations().size()) + " operations against " + std::to_string(b.operations().size());
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!(*a.tensors()[i] == *b.tensors()[i])) return "tensor " + std::to_string(i) + " " + a.tensors()[i]->id.value;
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (!(*a.operations()[i] == *b.operations()[i]))
            return "operation " + std::to_string(i) + " " + a.operations()[i]->id.value + " against " +
                   b.operations()[i]->id.value;
    return "";
}

void compare(const Evaluation &a, const Evaluation &b, const std::string &what) {
    QVERIFY2(a.ok == b.ok, (what + ": " + a.error + " | " + b.error).c_str());
    QVERIFY2(a.error == b.error, what.c_str());
    QVERIFY2(a.figures.makespan == b.figures.makespan, what.c_str());
    QVERIFY2(a.figures.peak == b.figures.peak, what.c_str());
    QVERIFY2(a.figures.comm_bytes == b.figures.comm_bytes, what.c_str());
    QVERIFY2(a.figures.devices == b.figures.devices, what.c_str());
    QVERIFY2(a.figures.energy == b.figures.energy, what.c_str());
    QVERIFY2(a.point.objectives == b.point.objectives, what.c_str());
}

}  // namespace

class TestIncremental : public QObject {
    Q_OBJECT
private slots:
    // Every candidate of a search's stream, evaluated incrementally, has the
    // figures (and the refusal, word for word) of a fresh evaluation; the memos
    // were used; the search's front is the same with incremental evaluation off.
    void figuresAreAFreshEvaluations_data() {
        QTest::addColumn<QString>("project");
        QTest::addColumn<int>("devices");
        QTest::addColumn<bool>("fusion");
        for (const char *p : {"mlp", "gpt2_block", "attention", "convnet"})
            for (int d : {2, 4, 8})
                for (bool f : {false, true})
                    QTest::addRow("%s on %d%s", p, d, f ? ", fused" : "") << QString(p) << d << f;
    }
    void figuresAreAFreshEvaluations() {
        QFETCH(QString, project);
        QFETCH(int, devices);
        QFETCH(bool, fusion);
        const Graph g = example(project.toStdString());
        const Evaluator incremental = evaluator_for(g, devices, fusion);
        Evaluator fresh = incremental;
        fresh.set_incremental(false);
        fresh.share_stages(0);
        QVERIFY(incremental.incremental() && !fresh.incremental());
        const std::vector<Candidate> cands = stream(incremental, 3, 120);
        QVERIFY(cands.size() >= 100);
        long refused = 0;
        for (const Candidate &c : cands) {
            const Evaluation a = incremental.evaluate(c), b = fresh.evaluate(c);
            compare(a, b, incremental.describe(c));
            refused += a.ok ? 0 : 1;
        }
        QVERIFY(refused < static_cast<long>(cands.size()));
        const Evaluator::Reuse u = incremental.reuse();
        QVERIFY(u.splits_replayed > u.splits_made);
        QVERIFY(u.movement_hits > 0 && u.placement_hits > u.placement_misses && u.piece_hits > u.piece_misses);
        // One seed, one front, either way.
        SearchOptions o;
        o.seed = 7;
        o.max_evaluations = 80;
        o.budget_seconds = 0;
        auto with = optimize(incremental, o), without = optimize(fresh, o);
        QVERIFY(with && without);
        QCOMPARE(with->front.size(), without->front.size());
        for (size_t i = 0; i < with->front.size(); ++i) {
            QCOMPARE(with->front[i].candidate.key(), without->front[i].candidate.key());
            QCOMPARE(with->front[i].evaluation.point.objectives, without->front[i].evaluation.point.objectives);
        }
    }

    // The shard stage built from replayed splits is the shard pass's graph, node for
    // node (the same order, so the same dependency order and plan order).
    void replayedSplitsAreTheShardPasss() {
        for (const char *name : {"mlp", "gpt2_block", "attention", "convnet"}) {
            const Graph g = example(name);
            const Evaluator e = evaluator_for(g, 8, false);
            DerivationCache lib(OpLibrary::standard());
            Workspace w;
            int compared = 0;
            for (const Candidate &c : stream(e, 5, 80)) {
                ShardOptions o;
                o.specs = e.space().specs(c);
                if (o.specs.empty()) continue;
                o.propagate = false;
                o.library = &lib;
                auto want = shard(g, o);
                auto got = w.sharded(e.space(), g, c, lib);
                QVERIFY2(got.has_value(), name);  // the examples' splits compose
                QVERIFY2(got->has_value() == want.has_value(), e.describe(c).c_str());
                if (!want) {
                    QCOMPARE(got->error(), want.error());
                    continue;
                }
                const std::string diff = difference(**got, want->graph);
                QVERIFY2(diff.empty(), (e.describe(c) + ": " + diff).c_str());
                ++compared;
            }
            QVERIFY2(compared >= 40, name);
            QVERIFY(w.splits_replayed() > w.splits_made());
        }
    }

    // Placement and the compiler with their memos: the same placed graph and the
    // same plan, byte for byte, as without — the second time from the memos, with
    // the nodes the first time made (so every later memo hits).
    void memosChangeNoPlan() {
        const Graph g = example("gpt2_block");
        const Evaluator e = evaluator_for(g, 8, false);
        DerivationCache lib(OpLibrary::standard());
        MovementMemo movement;
        PlacementMemo placement;
        plan::PieceMemo pieces;
        for (const Candidate &c : {e.space().batch_split(8), e.space().uniform_split(1, 4), e.space().product_split(2, 1, 4)}) {
            ShardOptions so;
            so.specs = e.space().specs(c);
            so.propagate = false;
            so.library = &lib;
            auto sharded = shard(g, so);
            QVERIFY(sharded.has_value());
            for (PlacementRule rule : {PlacementRule::by_shard, PlacementRule::round_robin, PlacementRule::spread,
                                       PlacementRule::pipeline}) {
                PlacementOptions p;
                p.devices = e.device_names();
                p.rule = rule;
                p.stages = rule == PlacementRule::pipeline ? 4 : 0;
                p.library = &lib;
                auto plain = place(sharded->graph, p);
                QVERIFY(plain.has_value());
                auto plain_plan = plan::compile_plan(plain->graph, e.model(), {}, &lib);
                QVERIFY(plain_plan.has_value());
                p.memo = &placement;
                p.movement_memo = &movement;
                OpPtr first_op;
                for (int pass = 0; pass < 2; ++pass) {
                    auto memoised = place(sharded->graph, p);
                    QVERIFY(memoised.has_value());
                    QVERIFY2(difference(memoised->graph, plain->graph).empty(), rule_name(rule));
                    if (pass == 0) first_op = memoised->graph.operations().back();
                    else QVERIFY(memoised->graph.operations().back() == first_op);  // the same node, handed out again
                    auto plan = plan::compile_plan(memoised->graph, e.model(), {}, &lib, &pieces);
                    QVERIFY(plan.has_value());
                    QCOMPARE(plan::plan_json(*plan), plan::plan_json(*plain_plan));
                }
            }
        }
        QVERIFY(placement.hits() > 0 && movement.hits() > 0 && pieces.hits() > 0);
    }

    // The fuse pass with its memo: the same stage as without, and the second time
    // the same fused nodes (so placement and the compiler find them in theirs).
    void fusedOpsAreKept() {
        for (const char *name : {"mlp", "gpt2_block", "convnet"}) {
            const Graph g = example(name);
            const Evaluator e = evaluator_for(g, 4, false);
            DerivationCache lib(OpLibrary::standard());
            ShardOptions so;
            so.specs = e.space().specs(e.space().batch_split(4));
            so.propagate = false;
            so.library = &lib;
            auto sharded = shard(g, so);
            QVERIFY(sharded.has_value());
            FuseOptions f;
            f.backends = {&cpu::fusion_backend()};
            auto plain = fuse(sharded->graph, f);
            QVERIFY(plain.has_value());
            FuseMemo memo;
            f.memo = &memo;
            auto first = fuse(sharded->graph, f), second = fuse(sharded->graph, f);
            QVERIFY(first.has_value() && second.has_value());
            QVERIFY2(difference(first->graph, plain->graph).empty(), name);
            QVERIFY2(difference(second->graph, plain->graph).empty(), name);
            QCOMPARE(second->summary, plain->summary);  // the refusals too
            int fused = 0;
            for (size_t i = 0; i < first->graph.operations().size(); ++i)
                if (first->graph.operations()[i]->kind == "fused") {
                    ++fused;
                    QVERIFY(first->graph.operations()[i] == second->graph.operations()[i]);
                }
            QVERIFY2(fused > 0, name);
            QVERIFY(memo.hits() >= fused && memo.misses() > 0);
        }
    }

    // A split whose rewrite names a node the graph already holds under its op's id
    // (the pass then picks another name, which depends on the other ops' rewrites)
    // does not compose: the workspace says so, the evaluator runs the pass, and the
    // figures are a fresh evaluation's.
    void splitsThatDoNotComposeRunThePass() {
        std::string text = test::mlp_project_text(16);
        // A tensor named after fc2's partials ("fc2.partials") takes the pass's name.
        const std::string h2 = R"({"id": "h2", "dtype": "f32", "shape": [16, 12], "role": "intermediate"})";
        const size_t at = text.find(h2);
        QVERIFY(at != std::string::npos);
        text.replace(at, h2.size(), R"({"id": "fc2.partials", "dtype": "f32", "shape": [16, 12], "role": "intermediate"})");
        for (size_t p = text.find("\"h2\""); p != std::string::npos; p = text.find("\"h2\"")) text.replace(p, 4, "\"fc2.partials\"");
        const Graph g = test::parse(text);
        const Evaluator e = evaluator_for(g, 4, false);
        Evaluator fresh = e;
        fresh.set_incremental(false);
        Candidate c = e.space().batch_split(2);
        size_t fc2 = 0;
        while (e.space().ops()[fc2].op.value != "fc2") ++fc2;
        c.dim[fc2] = 2;  // fc2's contraction ("in")
        c.parts[fc2] = 2;
        QVERIFY(e.space().valid(c));
        Workspace w;
        DerivationCache lib(OpLibrary::standard());
        QVERIFY(!w.sharded(e.space(), g, c, lib).has_value());
        compare(e.evaluate(c), fresh.evaluate(c), e.describe(c));
        QVERIFY(e.evaluate(c).ok);
        // Splitting only the other ops composes.
        QVERIFY(w.sharded(e.space(), g, e.space().batch_split(2), lib).has_value());
    }
};

QTEST_GUILESS_MAIN(TestIncremental)
#include "test_incremental.moc"
