// The Pareto-front search (issue 16, docs/search.md): the front utilities against
// hand-computed figures; the space of a graph; candidates evaluated through the
// same compiler and model as `tapestry plan` (figures equal to the compiled
// plan's); the search against an exhaustive enumeration of a small space (≥ 99 %
// of the true front's hypervolume); the same seed giving the same front at one and
// two threads; the hand baselines covered by the front; every front plan certified;
// streaming, stopping and the warm start.
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <set>
#include <atomic>
#include <functional>

#include "cost/target.h"
#include "graph/derivation_cache.h"
#include "graph/resolve.h"
#include "ops/library.h"
#include "plan/compile.h"
#include "plan/plan_file.h"
#include "io/project_file.h"
#include "passes/movement.h"
#include "plan/baselines.h"
#include "plan/certify.h"
#include "plan/planner.h"
#include "runtime/cpu/fusion_backend.h"
#include "search/optimizer.h"
#include "search/session_runs.h"
#include "store/session.h"
#include "block_stack.h"
#include "test_projects.h"

using namespace tapestry;
using namespace tapestry::search;

namespace {

// linear → gelu → linear, large enough that the kernels and transfers, not launch
// overheads, decide.
std::string three_ops() {
    return R"({"format": "tapestry-project", "version": 1, "name": "three ops", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [64, 256], "role": "input"},
      {"id": "w1", "dtype": "f32", "shape": [256, 512], "role": "parameter"},
      {"id": "b1", "dtype": "f32", "shape": [512], "role": "parameter"},
      {"id": "h", "dtype": "f32", "shape": [64, 512], "role": "intermediate"},
      {"id": "a", "dtype": "f32", "shape": [64, 512], "role": "intermediate"},
      {"id": "w2", "dtype": "f32", "shape": [512, 256], "role": "parameter"},
      {"id": "b2", "dtype": "f32", "shape": [256], "role": "parameter"},
      {"id": "y", "dtype": "f32", "shape": [64, 256], "role": "output"}],
     "operations": [
      {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h"}},
      {"id": "act", "kind": "gelu", "inputs": {"x": "h"}, "outputs": {"y": "a"}},
      {"id": "fc2", "kind": "linear", "inputs": {"x": "a", "w": "w2", "bias": "b2"}, "outputs": {"y": "y"}}]})";
}

// three_ops after an edit: `act` made a relu, and a relu `act2` added after it.
std::string three_ops_edited() {
    std::string text = three_ops();
    const auto replace = [&](const std::string &from, const std::string &to) {
        const size_t at = text.find(from);
        if (at == std::string::npos) qFatal("three_ops has no '%s'", from.c_str());
        text.replace(at, from.size(), to);
    };
    replace(R"("kind": "gelu")", R"("kind": "relu")");
    replace(R"({"id": "w2")", R"({"id": "a2", "dtype": "f32", "shape": [64, 512], "role": "intermediate"},
      {"id": "w2")");
    replace(R"("inputs": {"x": "a", "w": "w2")", R"("inputs": {"x": "a2", "w": "w2")");
    replace(R"({"id": "fc2")", R"({"id": "act2", "kind": "relu", "inputs": {"x": "a"}, "outputs": {"y": "a2"}},
      {"id": "fc2")");
    return text;
}

Graph example(const std::string &name) {
    LoadResult r = load_project(test::source_dir() / "projects" / (name + ".tapestry.json"));
    if (!r.ok()) qFatal("%s does not load", name.c_str());
    return plan::without_shards(r.graph);
}

Evaluator evaluator_for(const Graph &g, int devices, std::vector<Objective> objectives = {Objective::time, Objective::memory,
                                                                                           Objective::devices},
                        Constraints constraints = {}, int nodes = 1, bool fusion = false) {
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, devices, nodes);
    auto space = Space::of(g, devices);
    if (!target || !shape || !space) qFatal("evaluator setup failed");
    std::vector<const FusionBackend *> backends;
    if (fusion) backends.push_back(&cpu::fusion_backend());
    return Evaluator(g, *space, *target, *shape, std::move(objectives), constraints, {}, backends);
}

// The same with fusion in the space (the CPU executor's fused kernels decide).
Evaluator fusing_evaluator_for(const Graph &g, int devices) {
    return evaluator_for(g, devices, {Objective::time, Objective::memory, Objective::devices}, {}, 1, true);
}

// Search options with an evaluation budget and no time budget: one seed, one front.
SearchOptions evaluations_budget(std::uint64_t seed, long evaluations) {
    SearchOptions o;
    o.seed = seed;
    o.max_evaluations = evaluations;
    o.budget_seconds = 0;
    return o;
}

// The same with device maps in the space.
Evaluator mapping_evaluator_for(const Graph &g, int devices) {
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, devices, 1);
    auto space = Space::of(g, devices);
    if (!target || !shape || !space) qFatal("evaluator setup failed");
    space->allow_maps(true);
    return Evaluator(g, *space, *target, *shape, {Objective::time, Objective::memory, Objective::devices}, {});
}

// The same with pipeline cuts in the space (and fusion, when asked).
Evaluator cutting_evaluator_for(const Graph &g, int devices, bool fusion = false) {
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, devices, 1);
    auto space = Space::of(g, devices);
    if (!target || !shape || !space) qFatal("evaluator setup failed");
    space->allow_cuts(true);
    std::vector<const FusionBackend *> backends;
    if (fusion) backends.push_back(&cpu::fusion_backend());
    return Evaluator(g, *space, *target, *shape, {Objective::time, Objective::memory, Objective::devices}, {}, {},
                     backends);
}

// Every candidate of the space (for small spaces).
std::vector<Candidate> enumerate(const Space &s) {
    std::vector<Candidate> out;
    Candidate c = s.unsplit();
    std::function<void(size_t)> rec = [&](size_t i) {
        if (i == s.ops().size()) {
            for (PlacementRule r : {PlacementRule::by_shard, PlacementRule::round_robin}) {
                c.rule = r;
                c.stages = 0;
                out.push_back(c);
            }
            c.rule = PlacementRule::pipeline;
            for (c.stages = 2; c.stages <= std::min<int>(s.devices(), static_cast<int>(s.ops().size())); ++c.stages)
                out.push_back(c);
            c.rule = PlacementRule::by_shard;
            c.stages = 0;
            return;
        }
        c.dim[i] = -1;
        c.parts[i] = 1;
        rec(i + 1);
        const OpChoices &o = s.ops()[i];
        for (size_t k = 0; k < o.dims.size(); ++k)
            for (int p = 2; p <= std::min<Coord>(s.devices(), o.extents[k]); ++p) {
                c.dim[i] = o.dims[k];
                c.parts[i] = p;
                rec(i + 1);
            }
        c.dim[i] = -1;
        c.parts[i] = 1;
    };
    rec(0);
    if (s.maps()) {
        // Each also with every device map: per op the rule, or a first device.
        const size_t n = out.size(), ops = s.ops().size(), choices = static_cast<size_t>(s.devices()) + 1;
        size_t maps = 1;
        for (size_t i = 0; i < ops; ++i) maps *= choices;
        for (size_t k = 0; k < n; ++k)
            for (size_t m = 1; m < maps; ++m) {  // 0: every op by the rule, the candidate itself
                Candidate mapped = out[k];
                for (size_t i = 0, rest = m; i < ops; ++i, rest /= choices)
                    if (rest % choices) mapped.set_map(i, ops, static_cast<int>(rest % choices) - 1);
                out.push_back(std::move(mapped));
            }
    }
    if (!s.fusion()) return out;
    // Each also fused, with every set of ops kept out of the fusion.
    const size_t n = out.size(), ops = s.ops().size();
    for (size_t k = 0; k < n; ++k)
        for (size_t mask = 0; mask < (size_t{1} << ops); ++mask) {
            Candidate f = out[k];
            f.fused = true;
            for (size_t i = 0; i < ops; ++i)
                if (mask >> i & 1) f.unfused.push_back(static_cast<int>(i));
            out.push_back(std::move(f));
        }
    return out;
}

std::vector<std::vector<double>> objectives_of(const std::vector<Scored> &front) {
    std::vector<std::vector<double>> out;
    for (const Scored &s : front) out.push_back(s.evaluation.point.objectives);
    return out;
}

}  // namespace

class TestSearch : public QObject {
    Q_OBJECT
private slots:
    // ---- fronts ----
    void dominanceAndRanksByHand() {
        QVERIFY(dominates({1, 2}, {2, 2}));
        QVERIFY(!dominates({1, 2}, {1, 2}));  // equal: neither
        QVERIFY(!dominates({1, 3}, {2, 2}));
        const Point feasible{{9, 9}, 0}, slightly{{1, 1}, 0.1}, badly{{0, 0}, 2};
        QVERIFY(constrained_dominates(feasible, slightly));  // feasible beats any infeasible
        QVERIFY(constrained_dominates(slightly, badly));     // the smaller violation wins
        QVERIFY(!constrained_dominates(badly, slightly));
        // (1,4) (2,2) (4,1) front; (3,3) behind (2,2); (5,5) behind everything.
        const std::vector<Point> pts = {{{1, 4}, 0}, {{3, 3}, 0}, {{2, 2}, 0}, {{5, 5}, 0}, {{4, 1}, 0}};
        QCOMPARE(nondominated_ranks(pts), (std::vector<int>{0, 1, 0, 2, 0}));
        QCOMPARE(first_front(pts), (std::vector<size_t>{0, 2, 4}));
        // Crowding on the front: extremes infinite, the middle (2,2): (4−1)/3 + (4−1)/3 = 2.
        const std::vector<double> c = crowding(pts, {0, 2, 4});
        QVERIFY(std::isinf(c[0]) && std::isinf(c[2]));
        QCOMPARE(c[1], 2.0);
    }
    void hypervolumeByHand() {
        // 2-D: points (1,3) (2,2) (3,1), reference (4,4): 3 + 2 + 1 = 6.
        QCOMPARE(hypervolume({{1, 3}, {2, 2}, {3, 1}}, {4, 4}), 6.0);
        // A dominated point adds nothing; one outside the reference neither.
        QCOMPARE(hypervolume({{1, 3}, {2, 2}, {3, 1}, {3, 3}, {5, 0}}, {4, 4}), 6.0);
        // 3-D: a unit cube at the origin against (2,2,2) is 8; two boxes overlapping:
        // (0,0,1) → 2·2·1 = 4, (1,1,0) → 1·1·2 = 2, overlap 1·1·1 = 1: 5.
        QCOMPARE(hypervolume({{0, 0, 0}}, {2, 2, 2}), 8.0);
        QCOMPARE(hypervolume({{0, 0, 1}, {1, 1, 0}}, {2, 2, 2}), 5.0);
        QCOMPARE(hypervolume({}, {1, 1}), 0.0);
    }
    void objectivesParse() {
        QCOMPARE(*parse_objectives("time,memory,devices"),
                 (std::vector<Objective>{Objective::time, Objective::memory, Objective::devices}));
        QCOMPARE(parse_objectives("time,speed").error(),
                 std::string("unknown objective 'speed' (known: time, memory, devices, communication, energy)"));
        QCOMPARE(parse_objectives("time,time").error(), std::string("objective 'time' is named twice"));
        QCOMPARE(*parse_objectives("energy,time"), (std::vector<Objective>{Objective::energy, Objective::time}));
        QCOMPARE(search::figure_text(Objective::energy, 0.0123), std::string("12.3 mJ"));
        QCOMPARE(search::figure_text(Objective::energy, 2.5), std::string("2.5 J"));
    }
    // Energy: each device's busy time (compute and communication, at most the step)
    // at the target's power limit, summed — computed here by hand from the plan's
    // own prediction; a target without power refuses the objective by name.
    void energyIsBusyTimeAtThePowerLimit() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = evaluator_for(g, 4, {Objective::time, Objective::energy});
        const Candidate c = e.space().batch_split(4);
        auto m = e.materialize(c, false);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        double joules = 0;
        for (const plan::DeviceLoad &d : m->prediction.devices)
            joules += 700.0 * std::min(m->prediction.makespan, d.compute + d.communication);
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        QVERIFY(joules > 0);
        QVERIFY(std::abs(ev.figures.energy - joules) <= 1e-12 * joules);
        QCOMPARE(ev.point.objectives.size(), size_t{2});
        QCOMPARE(ev.point.objectives[1], ev.figures.energy);
        // Four devices each busy for part of the step cost more than one doing it all
        // only when the split adds work; unsplit, one device is busy the whole step.
        const Evaluation one = e.evaluate(e.space().unsplit());
        QVERIFY(std::abs(one.figures.energy - 700.0 * one.figures.makespan) <= 1e-9 * one.figures.energy);
        // The host target gives no power.
        auto host = cost::builtin_target("host");
        QVERIFY(host.has_value() && !host->device.power.present);
        cost::Target measured = *host;
        auto shape = cost::cluster_shape(measured, 4, 1);
        QVERIFY2(shape.has_value(), shape ? "" : shape.error().c_str());
        const Evaluator no_power(g, e.space(), measured, *shape, {Objective::time, Objective::energy}, {});
        const Evaluation refused = no_power.score(m->plan, m->prediction);
        QVERIFY(!refused.ok);
        QVERIFY2(refused.error.find("gives no device power") != std::string::npos, refused.error.c_str());
    }

    // ---- the space and evaluation ----
    void spaceOfAGraph() {
        const Graph g = test::parse(three_ops());
        auto s = Space::of(g, 4);
        QVERIFY2(s.has_value(), s ? "" : s.error().c_str());
        QCOMPARE(s->ops().size(), size_t{3});
        // fc1: its batch and output dims, and its contraction "in".
        const OpChoices &fc1 = s->ops()[0];
        QCOMPARE(fc1.op.value, std::string("fc1"));
        QCOMPARE(fc1.dims.size(), size_t{3});
        QCOMPARE(fc1.names.back(), std::string("in"));
        QCOMPARE(fc1.extents.back(), Coord{256});
        Candidate c = s->batch_split(4);
        QCOMPARE(s->describe(c), std::string("fc1:0=4 act:0=4 fc2:0=4 · shard"));
        QVERIFY(s->valid(c));
        c.parts[1] = 5;  // more parts than devices
        QVERIFY(!s->valid(c));
        QCOMPARE(s->describe(s->unsplit()), std::string("unsplit · shard"));
        // The summary writes a run of three ops split alike once; two alike, or a
        // run broken by a different split, stay op by op.
        QCOMPARE(s->summary(s->batch_split(4)), std::string("fc1 … fc2:0=4 (3 ops) · shard"));
        Candidate broken = s->batch_split(4);
        broken.parts[1] = 2;
        QCOMPARE(s->summary(broken), std::string("fc1:0=4 act:0=2 fc2:0=4 · shard"));
        Candidate fused = s->batch_split(2);
        fused.fused = true;
        fused.unfused = {0, 1, 2, 1};  // past three names, counted
        QCOMPARE(s->summary(fused), std::string("fc1 … fc2:0=2 (3 ops) · shard · fused but fc1, act, fc2 and 1 more"));
        QCOMPARE(s->describe(fused), std::string("fc1:0=2 act:0=2 fc2:0=2 · shard · fused but fc1, act, fc2, act"));
        QCOMPARE(s->summary(s->unsplit()), std::string("unsplit · shard"));
        QVERIFY(!Space::of(g, 0));
        // A graph validation finds errors in is refused, its first error named.
        std::string bad = three_ops();
        const std::string shape = R"({"id": "a", "dtype": "f32", "shape": [64, 512])";
        bad.replace(bad.find(shape), shape.size(), R"({"id": "a", "dtype": "f32", "shape": [64, 500])");
        auto refused = Space::of(test::parse(bad), 4);
        QVERIFY(!refused);
        QVERIFY2(refused.error().starts_with("the graph is invalid: error ") && refused.error().find("(act)") != std::string::npos,
                 refused.error().c_str());
        for (PlacementRule r : {PlacementRule::by_shard, PlacementRule::round_robin, PlacementRule::pipeline,
                                PlacementRule::spread})
            QVERIFY(*parse_rule_name(rule_name(r)) == r);
        QCOMPARE(parse_rule_name("diagonal").error(),
                 std::string("unknown placement rule 'diagonal' (known: shard, round-robin, pipeline, spread)"));
    }
    // Product splits: the batch over 2 groups, each op's output features over 2
    // devices within a group — two specs per op, four pieces, certified stages and
    // plan, as `tapestry plan` would make them.
    void productSplitsAreCandidates() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = evaluator_for(g, 4);
        const Candidate c = e.space().product_split(2, 1, 2);
        QVERIFY(e.space().valid(c));
        QCOMPARE(e.space().describe(c), std::string("fc1:0=2 fc1:1=2 act:0=2 act:1=2 fc2:0=2 fc2:1=2 · shard"));
        QCOMPARE(e.space().summary(c), std::string("fc1 … fc2:0=2,1=2 (3 ops) · shard"));
        QCOMPARE(c.key(), std::string("0=2x1=2 0=2x1=2 0=2x1=2 | shard"));
        QCOMPARE(c.pieces(0), 4);
        auto m = e.materialize(c, true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY2(plan::certify_plan(m->plan).pass(), plan::certify_plan(m->plan).text().c_str());
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        QCOMPARE(ev.figures.devices, 4);
        // Outside the space: more pieces than devices, a second split along the first's dim.
        Candidate over = c;
        over.parts2[0] = 4;
        QVERIFY(!e.space().valid(over));
        Candidate same = c;
        same.dim2[0] = same.dim[0];
        QVERIFY(!e.space().valid(same));
        Candidate cleared = c;
        for (size_t i = 0; i < 3; ++i) cleared.clear_second(i);
        QVERIFY(cleared.dim2.empty() && cleared == e.space().batch_split(2));
    }
    // A candidate's figures are its compiled plan's prediction: the same as the
    // plan `tapestry plan` makes from the same stages.
    void figuresAreTheCompiledPlans() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = evaluator_for(g, 4);
        Candidate c = e.space().batch_split(4);
        c.dim[2] = 2;  // fc2 split along its contraction
        c.parts[2] = 2;
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        auto m = e.materialize(c, true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(plan::certify_plan(m->plan).pass());
        QCOMPARE(ev.figures.makespan, m->prediction.makespan);
        QCOMPARE(ev.figures.peak, static_cast<double>(m->prediction.peak));
        QCOMPARE(ev.figures.comm_bytes, m->prediction.comm_bytes);
        QCOMPARE(ev.figures.devices, 4);
        QCOMPARE(ev.point.objectives, (std::vector<double>{ev.figures.makespan, ev.figures.peak, 4.0}));
        // A memory cap below the peak makes it infeasible, by the relative excess.
        const Evaluator capped = evaluator_for(g, 4, {Objective::time}, Constraints{ev.figures.peak / 2, 0});
        const Evaluation over = capped.evaluate(c);
        QCOMPARE(over.figures.violation, 1.0);
        QVERIFY(over.figures.violated.find("> cap") != std::string::npos);
    }

    // The evaluator derives through a memo: every derivation it answers equals the
    // library's own, a second pass over a graph is answered from it, and a plan
    // compiled through it is the plan compiled without it, byte for byte.
    void memoizedDerivationsAreTheLibrarys() {
        const OpLibrary &lib = OpLibrary::standard();
        for (const char *name : {"mlp", "gpt2_block", "attention", "convnet"}) {
            const Graph g = example(name);
            DerivationCache memo(lib);
            std::int64_t ops = 0;
            for (int pass = 0; pass < 2; ++pass)
                for (const OpPtr &op : g.operations()) {
                    auto types = operand_types(g, *op);
                    QVERIFY(types.has_value());
                    auto want = lib.derive(op->kind, op->params, *types);
                    auto got = memo.derive(op->kind, op->params, *types);
                    QVERIFY2(want.has_value() && got.has_value(), op->id.value.c_str());
                    QVERIFY2(got->signature == want->signature, op->id.value.c_str());
                    QCOMPARE(got->outputs.size(), want->outputs.size());
                    for (size_t i = 0; i < want->outputs.size(); ++i) {
                        QCOMPARE(got->outputs[i].port, want->outputs[i].port);
                        QVERIFY(got->outputs[i].operands == want->outputs[i].operands);
                    }
                    ops += pass;
                }
            QVERIFY2(memo.hits() >= ops, name);  // the second pass: every op from the memo
            QVERIFY(memo.misses() <= ops);
            // A placed stage compiles to the same plan through the memo.
            const Evaluator e = evaluator_for(g, 4);
            auto m = e.materialize(e.space().batch_split(2), false);
            QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
            auto plain = plan::compile_plan(m->stages.back(), e.model(), m->plan.source);
            auto memoized = plan::compile_plan(m->stages.back(), e.model(), m->plan.source, &memo);
            QVERIFY(plain.has_value() && memoized.has_value());
            QCOMPARE(plan::plan_json(*memoized), plan::plan_json(*plain));
        }
    }

    // A device map is a candidate's choice: the mapped op's pieces run from its
    // device on (its partials' too, when a contraction split made them ops), past
    // the rule; the plan is certified and its figures are the evaluation's; the key,
    // the description and the plan's placement options say so; a space without maps,
    // a device outside the cluster and an all-rule map are refused.
    void deviceMapsPlaceOpsWhereTheCandidateSays() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = mapping_evaluator_for(g, 4);
        QVERIFY(e.space().maps());
        Candidate c = e.space().batch_split(2);  // every op split 2 ways along the batch
        c.set_map(0, 3, 2);                       // fc1 from device 2: pieces on 2, 3
        c.set_map(1, 3, 3);                       // act from device 3: pieces on 3, 0
        QCOMPARE(QString::fromStdString(c.key()), QStringLiteral("0=2@2 0=2@3 0=2 | shard"));
        QCOMPARE(QString::fromStdString(e.space().describe(c)),
                 QStringLiteral("fc1:0=2 act:0=2 fc2:0=2 · shard · fc1 from device 2, act from device 3"));
        auto m = e.materialize(c, true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(plan::certify_plan(m->plan).pass());
        const Graph &placed = m->stages.back().graph;
        auto devices_of = [&](const char *id) {
            std::vector<std::string> out;
            const Operation *op = placed.find_op(OpId(id));
            if (!op) qFatal("%s is not in the placed graph", id);
            for (size_t k = 0; k < op->shards.size(); ++k) out.push_back(shard_device(*op, k));
            return out;
        };
        QCOMPARE(devices_of("fc1"), (std::vector<std::string>{"0:2", "0:3"}));
        QCOMPARE(devices_of("act"), (std::vector<std::string>{"0:3", "0:0"}));
        QCOMPARE(devices_of("fc2"), (std::vector<std::string>{"0:0", "0:1"}));  // the rule
        QVERIFY2(m->plan.source.options == e.space().describe(c), m->plan.source.options.c_str());
        QVERIFY2(m->stages.back().options.find("shard;fc1=0:2,0:3;act=0:3,0:0") != std::string::npos,
                 m->stages.back().options.c_str());
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        QCOMPARE(ev.figures.makespan, m->prediction.makespan);
        QCOMPARE(ev.figures.peak, static_cast<double>(m->prediction.peak));
        QCOMPARE(ev.figures.devices, 4);
        // Moving act to where fc1 is saves the transfers between them.
        Candidate together = c;
        together.set_map(1, 3, 2);
        QVERIFY(e.evaluate(together).figures.comm_bytes < ev.figures.comm_bytes);
        // A contraction split (fc2's `in`, dim 2) makes ops of fc2 (its partial
        // products, their reduction, the bias): each runs from fc2's device on.
        Candidate k = e.space().unsplit();
        k.dim[2] = 2;
        k.parts[2] = 2;
        k.set_map(2, 3, 1);
        auto mk = e.materialize(k, true);
        QVERIFY2(mk.has_value(), mk ? "" : mk.error().c_str());
        for (const Stage &st : mk->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        const Graph &contracted = mk->stages.back().graph;
        for (const auto &[id, want] : std::vector<std::pair<const char *, std::vector<std::string>>>{
                 {"fc2.partial", {"0:1", "0:2"}}, {"fc2.reduce", {"0:1"}}, {"fc2.bias", {"0:1"}}, {"fc1", {"0:0"}}}) {
            const Operation *op = contracted.find_op(OpId(id));
            QVERIFY2(op, id);
            std::vector<std::string> got;
            for (size_t j = 0; j < std::max<size_t>(1, op->shards.size()); ++j) got.push_back(shard_device(*op, j));
            QVERIFY2(got == want, id);
        }
        // Not candidates.
        QVERIFY(!evaluator_for(g, 4).space().valid(c));  // no maps in that space
        Candidate outside = c;
        outside.at[0] = 4;
        QVERIFY(!e.space().valid(outside));
        Candidate all_rule = c;
        all_rule.at.assign(3, -1);
        QVERIFY(!e.space().valid(all_rule));
        Candidate cleared = c;
        cleared.clear_map(0);
        cleared.clear_map(1);
        QVERIFY(cleared.at.empty());
        QVERIFY(e.space().valid(cleared));
        // The search draws the remap mutator only where the space has maps.
        const SearchOptions o = evaluations_budget(2, 60);
        auto with = optimize(e, o), without = optimize(evaluator_for(g, 4), o);
        QVERIFY(with && without);
        auto has_remap = [](const SearchResult &r) {
            return std::any_of(r.mutators.begin(), r.mutators.end(), [](const MutatorStats &stats) { return stats.name == "remap"; });
        };
        QVERIFY(has_remap(*with));
        QVERIFY(!has_remap(*without));
    }

    // Explicit pipeline cuts: a pipeline candidate may say where its stages begin
    // (an op of the space); placement puts every op before the first cut on stage
    // 1's devices, and so on; the ops a contraction split or the fuse pass makes go
    // with the op they come of. The figures are the compiled plan's; the search
    // moves cuts with the `cut` mutator.
    void pipelineCutsAreCandidateChoices() {
        const Graph g = test::parse(test::mlp_project_text(8));  // fc1 gelu1 fc2 relu2 fc3 gelu3 fc4
        const Evaluator e = cutting_evaluator_for(g, 4);
        const Space &space = e.space();
        QVERIFY(space.cuts());
        Candidate c = space.batch_split(2);
        c.rule = PlacementRule::pipeline;
        c.stages = 2;
        c.cuts = {6};
        QVERIFY(space.valid(c));
        QCOMPARE(QString::fromStdString(c.key()), QStringLiteral("0=2 0=2 0=2 0=2 0=2 0=2 0=2 | pipeline:2@6"));
        QVERIFY2(space.describe(c).find("· pipeline:2 cut at fc4") != std::string::npos, space.describe(c).c_str());
        auto m = e.materialize(c, true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(plan::certify_plan(m->plan).pass());
        const Graph &placed = m->stages.back().graph;
        auto devices_of = [](const Graph &graph, const char *id) {
            std::vector<std::string> out;
            const Operation *op = graph.find_op(OpId(id));
            if (!op) qFatal("%s is not in the placed graph", id);
            for (size_t k = 0; k < op->shards.size(); ++k) out.push_back(shard_device(*op, k));
            return out;
        };
        QCOMPARE(devices_of(placed, "gelu3"), (std::vector<std::string>{"0:0", "0:1"}));
        QCOMPARE(devices_of(placed, "fc4"), (std::vector<std::string>{"0:2", "0:3"}));
        QVERIFY2(m->stages.back().options == "pipeline:2@fc4", m->stages.back().options.c_str());
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        QCOMPARE(ev.figures.makespan, m->prediction.makespan);
        QCOMPARE(ev.figures.peak, static_cast<double>(m->prediction.peak));
        // Another cut is another plan: placement's own (by FLOPs) is not at fc4.
        Candidate own = c;
        own.cuts.clear();
        auto mo = e.materialize(own, false);
        QVERIFY2(mo.has_value(), mo ? "" : mo.error().c_str());
        QCOMPARE(QString::fromStdString(mo->stages.back().options), QStringLiteral("pipeline:2"));
        QVERIFY(devices_of(mo->stages.back().graph, "gelu3") != devices_of(placed, "gelu3"));
        // A cut at an op split along its contraction falls on the first op made of it.
        Candidate k = c;
        k.dim[6] = 2;  // fc4's `in`
        auto mk = e.materialize(k, true);
        QVERIFY2(mk.has_value(), mk ? "" : mk.error().c_str());
        for (const Stage &st : mk->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY2(mk->stages.back().options == "pipeline:2@fc4.partial", mk->stages.back().options.c_str());
        QCOMPARE(devices_of(mk->stages.back().graph, "fc4.reduce"), (std::vector<std::string>{"0:2"}));
        // A cut at an op the fuse pass joins to its producer falls on the next op placement sees.
        const Evaluator fusing = cutting_evaluator_for(g, 4, true);
        Candidate f = fusing.space().unsplit();
        f.rule = PlacementRule::pipeline;
        f.stages = 2;
        f.cuts = {5};  // gelu3, fused into fc3
        f.fused = true;
        auto mf = fusing.materialize(f, true);
        QVERIFY2(mf.has_value(), mf ? "" : mf.error().c_str());
        QVERIFY2(mf->stages.back().options == "pipeline:2@fc4", mf->stages.back().options.c_str());
        QCOMPARE(pipeline_cuts(space, c, g), std::vector<OpId>{OpId("fc4")});
        // Not candidates: cuts for another rule, too many or too few, not ascending, at 0 or past the ops.
        for (const auto &[stages, cuts] : std::vector<std::pair<int, std::vector<int>>>{
                 {3, {4}}, {2, {2, 4}}, {3, {6, 6}}, {3, {5, 4}}, {2, {0}}, {2, {7}}}) {
            Candidate bad = c;
            bad.stages = stages;
            bad.cuts = cuts;
            QVERIFY(!space.valid(bad));
        }
        Candidate other_rule = c;
        other_rule.rule = PlacementRule::round_robin;
        other_rule.stages = 0;
        QVERIFY(!space.valid(other_rule));
        QVERIFY(!evaluator_for(g, 4).space().valid(c));  // no cuts in that space
        // The balanced cuts: where placement's FLOP rule cuts the space's ops, always
        // ascending and inside; none when the ops are fewer than the stages.
        for (int stages = 2; stages <= 7; ++stages) {
            const std::vector<int> b = space.balanced_cuts(stages);
            QCOMPARE(static_cast<int>(b.size()), stages - 1);
            for (size_t i = 0; i < b.size(); ++i) QVERIFY(b[i] >= 1 && b[i] <= 6 && (!i || b[i] > b[i - 1]));
        }
        QVERIFY(space.balanced_cuts(8).empty());
        // The search moves cuts where the space has them: the `cut` mutator draws,
        // and what it makes is evaluated; without them it is not drawn.
        const Graph block = example("gpt2_block");
        const Evaluator eb = cutting_evaluator_for(block, 4);
        bool cut_seen = false;
        SearchHooks hooks;
        hooks.candidate = [&](const Scored &s) { cut_seen = cut_seen || (!s.candidate.cuts.empty() && s.evaluation.ok); };
        auto r = optimize(eb, evaluations_budget(3, 600), hooks);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        const auto stats = std::find_if(r->mutators.begin(), r->mutators.end(), [](const MutatorStats &ms) { return ms.name == "cut"; });
        QVERIFY(stats != r->mutators.end());
        QVERIFY(stats->trials > 0);
        QVERIFY(cut_seen);
        auto plain = optimize(evaluator_for(block, 4), evaluations_budget(3, 200));
        QVERIFY(plain.has_value());
        QVERIFY(std::none_of(plain->mutators.begin(), plain->mutators.end(), [](const MutatorStats &ms) { return ms.name == "cut"; }));
    }

    // Candidates that split alike share the shard stage (and the fuse stage where
    // they fuse alike): the memo serves them, and every figure is the one a fresh
    // evaluation (every pass run again) gives; the search's front is the same with
    // and without it.
    // Substitution choices: a candidate may start from the graph the substitution
    // pass makes (attention expanded into shardable ops), its stage certified and
    // first among the plan's stages; its figures are the compiled plan's; the search
    // moves candidates between the graphs (mapping each op's split by id) and gives
    // one front for one seed at any thread count.
    void substitutionIsACandidateChoice() {
        const Graph g = plan::without_shards(test::example_graph("attention"));
        Evaluator e = fusing_evaluator_for(g, 4);
        QCOMPARE(e.spaces().size(), size_t{1});
        auto lines = e.offer_substitutions({"expand", "fuse"});
        QVERIFY2(lines.has_value(), lines ? "" : lines.error().c_str());
        QCOMPARE(lines->size(), size_t{2});
        QVERIFY2(lines->at(0).rfind("expand: attention-expand×1", 0) == 0, lines->at(0).c_str());
        QCOMPARE(QString::fromStdString(lines->at(1)), QStringLiteral("fuse: changes nothing (no choice added)"));
        QCOMPARE(e.spaces().size(), size_t{2});
        const Space &expanded = *e.spaces()[1];
        QCOMPARE(QString::fromStdString(expanded.substitution()), QStringLiteral("expand"));
        QVERIFY(expanded.fusion());  // the flags of the space as given
        auto has = [](const Space &s, const char *op) {
            return std::any_of(s.ops().begin(), s.ops().end(), [&](const OpChoices &o) { return o.op.value == op; });
        };
        QVERIFY(has(expanded, "attention.softmax") && !has(expanded, "attention") && has(e.space(), "attention"));
        // Offered twice: nothing more.
        QVERIFY(e.offer_substitutions({"expand"}).has_value());
        QCOMPARE(e.spaces().size(), size_t{2});

        Candidate c = expanded.batch_split(4);
        c.fused = true;
        QCOMPARE(QString::fromStdString(c.substitution), QStringLiteral("expand"));
        QVERIFY(expanded.valid(c) && !e.space().valid(c));
        QCOMPARE(e.space_of(c), &expanded);
        QVERIFY(QString::fromStdString(c.key()).endsWith(" | fuse | substitute:expand"));
        QVERIFY2(e.describe(c).find("· fused · substituted (expand)") != std::string::npos, e.describe(c).c_str());
        auto m = e.materialize(c, true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        QCOMPARE(QString::fromStdString(m->stages.front().pass), QStringLiteral("substitute"));
        QCOMPARE(m->stages.size(), size_t{4});  // substitute, shard, fuse, place
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(plan::certify_plan(m->plan).pass());
        QCOMPARE(m->plan.source.stage, 4);
        const Evaluation ev = e.evaluate(c);
        QVERIFY2(ev.ok, ev.error.c_str());
        QCOMPARE(ev.figures.makespan, m->prediction.makespan);
        QCOMPARE(ev.figures.peak, static_cast<double>(m->prediction.peak));
        // The same splits of the graph as given are another plan (the memo keeps them apart).
        Candidate given = e.space().batch_split(4);
        given.fused = true;
        const Evaluation eg = e.evaluate(given);
        QVERIFY2(eg.ok, eg.error.c_str());
        QVERIFY(eg.figures.makespan != ev.figures.makespan || eg.figures.peak != ev.figures.peak);
        // A substitution the evaluator does not offer: refused by name.
        Candidate bogus = c;
        bogus.substitution = "inline";
        QVERIFY(e.space_of(bogus) == nullptr);
        const Evaluation eb = e.evaluate(bogus);
        QVERIFY(!eb.ok);
        QVERIFY2(eb.error.find("does not offer") != std::string::npos, eb.error.c_str());

        long substituted = 0, moved = 0;  // streamed candidates with a plan: of the expanded graph, made by "substitute"
        auto run = [&](int threads) {
            SearchOptions o;
            o.seed = 5;
            o.threads = threads;
            o.max_evaluations = 400;
            o.budget_seconds = 0;
            SearchHooks h;
            h.candidate = [&](const Scored &sc) {
                if (threads != 1 || !sc.evaluation.ok) return;
                substituted += sc.candidate.substitution == "expand";
                moved += sc.mutator == "substitute";
            };
            auto r = optimize(e, o, h);
            if (!r) qFatal("%s", r.error().c_str());
            return std::move(r).value();
        };
        const SearchResult one = run(1), two = run(2);
        QVERIFY(substituted > 0 && moved > 0);
        QCOMPARE(one.front.size(), two.front.size());
        for (size_t i = 0; i < one.front.size(); ++i) QCOMPARE(one.front[i].candidate.key(), two.front[i].candidate.key());
        const auto sub = std::find_if(one.mutators.begin(), one.mutators.end(),
                                      [](const MutatorStats &ms) { return ms.name == "substitute"; });
        QVERIFY(sub != one.mutators.end() && sub->trials > 0);
        for (const Scored &s : one.front) {
            auto fm = e.materialize(s.candidate, true);
            QVERIFY2(fm.has_value(), fm ? "" : fm.error().c_str());
            for (const Stage &st : fm->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        }
        // Without substitutions the search has no such mutator.
        const Evaluator plain = fusing_evaluator_for(g, 4);
        SearchOptions o;
        o.max_evaluations = 60;
        o.budget_seconds = 0;
        auto r = optimize(plain, o);
        QVERIFY(r.has_value());
        QVERIFY(std::none_of(r->mutators.begin(), r->mutators.end(), [](const MutatorStats &ms) { return ms.name == "substitute"; }));
    }

    void sharedStagesGiveTheSameFigures() {
        const Graph g = example("gpt2_block");
        auto target = cost::builtin_target("h100-sxm");
        auto shape = cost::cluster_shape(*target, 4, 1);
        auto space = Space::of(g, 4);
        QVERIFY(target && shape && space);
        space->allow_maps(true);
        const std::vector<const FusionBackend *> fusion{&cpu::fusion_backend()};
        Evaluator shared(g, *space, *target, *shape, {Objective::time, Objective::memory, Objective::devices}, {}, {},
                               fusion);
        Evaluator fresh = shared;
        fresh.share_stages(0);
        // The shard stages themselves (incremental evaluation builds them from replayed
        // splits instead: test_incremental).
        shared.set_incremental(false);
        fresh.set_incremental(false);
        std::vector<Candidate> alike;
        for (const Candidate &base : {shared.space().batch_split(4), shared.space().uniform_split(1, 2)})
            for (PlacementRule r : {PlacementRule::by_shard, PlacementRule::round_robin, PlacementRule::spread})
                for (bool fused : {false, true}) {
                    Candidate c = base;
                    c.rule = r;
                    c.fused = fused;
                    alike.push_back(c);
                    c.set_map(2, shared.space().ops().size(), 3);
                    alike.push_back(c);
                }
        for (const Candidate &c : alike) {
            const Evaluation a = shared.evaluate(c), b = fresh.evaluate(c);
            QVERIFY2(a.ok && b.ok, (a.error + b.error).c_str());
            QCOMPARE(a.figures.makespan, b.figures.makespan);
            QCOMPARE(a.figures.peak, b.figures.peak);
            QCOMPARE(a.figures.comm_bytes, b.figures.comm_bytes);
            QCOMPARE(a.figures.devices, b.figures.devices);
        }
        // 2 splits × (shard + fuse stage) made; the other 44 lookups served.
        QCOMPARE(shared.stage_memo().misses(), std::int64_t{4});
        QCOMPARE(shared.stage_memo().hits(), std::int64_t{2 * 6 * 2 + 2 * 6 - 4});
        QCOMPARE(fresh.stage_memo().hits(), std::int64_t{0});
        // A stage made for a certificate is made afresh, and certified.
        auto m = shared.materialize(alike.back(), true);
        QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
        for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QCOMPARE(m->prediction.makespan, shared.evaluate(alike.back()).figures.makespan);
        // One seed, one front, with or without the memo.
        const SearchOptions o = evaluations_budget(4, 200);
        auto with = optimize(shared, o), without = optimize(fresh, o);
        QVERIFY(with && without);
        QCOMPARE(objectives_of(with->front), objectives_of(without->front));
    }

    // Fusion is a candidate's choice: fused, the fuse pass runs between shard and
    // place (a stage of its own, certified) and the plan has fewer kernels and a
    // shorter step; an op kept out of the fusion stays a kernel of its own; every op
    // kept out is the unfused plan. Keys and descriptions say so; a space without
    // fusion refuses a fused candidate.
    void fusionIsACandidatesChoice() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = fusing_evaluator_for(g, 4);
        QVERIFY(e.space().fusion());
        Candidate plain = e.space().batch_split(4);
        Candidate fused = plain;
        fused.fused = true;
        QCOMPARE(fused.key(), plain.key() + " | fuse");
        QVERIFY2(e.space().describe(fused).ends_with(" · shard · fused"), e.space().describe(fused).c_str());
        auto mp = e.materialize(plain, true);
        auto mf = e.materialize(fused, true);
        QVERIFY2(mp && mf, mp ? (mf ? "" : mf.error().c_str()) : mp.error().c_str());
        QCOMPARE(mf->stages.size(), size_t{3});
        QCOMPARE(mf->stages[1].pass, std::string("fuse"));
        for (const Stage &st : mf->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(plan::certify_plan(mf->plan).pass());
        auto kernels = [](const plan::Plan &p) {
            int n = 0;
            for (const plan::Step &s : p.steps) n += s.kind == plan::StepKind::kernel;
            return n;
        };
        QVERIFY2(kernels(mf->plan) < kernels(mp->plan), qPrintable(QString("%1 vs %2").arg(kernels(mf->plan)).arg(kernels(mp->plan))));
        const Evaluation ep = e.evaluate(plain), ef = e.evaluate(fused);
        QVERIFY(ep.ok && ef.ok);
        QVERIFY2(ef.figures.makespan < ep.figures.makespan, qPrintable(QString("%1 vs %2").arg(ef.figures.makespan).arg(ep.figures.makespan)));
        QCOMPARE(ef.figures.makespan, mf->prediction.makespan);
        // fc1 kept out: gelu has no producer to join, so nothing fuses.
        Candidate but_fc1 = fused;
        but_fc1.unfused = {0};
        QCOMPARE(but_fc1.key(), plain.key() + " | fuse -0");
        QVERIFY2(e.space().describe(but_fc1).ends_with(" · fused but fc1"), e.space().describe(but_fc1).c_str());
        QCOMPARE(e.evaluate(but_fc1).figures.makespan, ep.figures.makespan);
        Candidate none = fused;
        none.unfused = {0, 1, 2};
        QCOMPARE(e.evaluate(none).figures.makespan, ep.figures.makespan);
        // Not a candidate: unfused ops out of order, or fusion where the space has none.
        Candidate bad = fused;
        bad.unfused = {1, 0};
        QVERIFY(!e.space().valid(bad));
        QVERIFY(!evaluator_for(g, 4).space().valid(fused));
        QVERIFY(!evaluator_for(g, 4).evaluate(fused).ok);
        // The search with fusion finds a faster plan than the search without.
        const SearchOptions o = evaluations_budget(5, 150);
        auto with = optimize(e, o), without = optimize(evaluator_for(g, 4), o);
        QVERIFY(with && without);
        auto fastest = [](const SearchResult &r) {
            const Scored *best = nullptr;
            for (const Scored &s : r.front)
                if (!best || s.evaluation.figures.makespan < best->evaluation.figures.makespan) best = &s;
            return best;
        };
        QVERIFY(fastest(*with)->candidate.fused);
        QVERIFY(fastest(*with)->evaluation.figures.makespan < fastest(*without)->evaluation.figures.makespan);
    }

    // ---- the search ----
    // On spaces small enough to enumerate, the search recovers ≥ 99 % of the true
    // front's hypervolume within its budget.
    void recoversTheExhaustiveFront_data() {
        QTest::addColumn<QString>("graph");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("evaluations");
        QTest::addColumn<bool>("fusion");
        QTest::newRow("three ops on 2") << "three" << 2 << 60 << false;
        QTest::newRow("three ops on 4") << "three" << 4 << 400 << false;
        QTest::newRow("three ops on 2, fusion") << "three" << 2 << 200 << true;
        QTest::newRow("three ops on 2, maps") << "three maps" << 2 << 400 << false;
    }
    void recoversTheExhaustiveFront() {
        QFETCH(QString, graph);
        QFETCH(int, devices);
        QFETCH(int, evaluations);
        QFETCH(bool, fusion);
        const Graph g = test::parse(three_ops());
        const Evaluator e = fusion                  ? fusing_evaluator_for(g, devices)
                            : graph.endsWith("maps") ? mapping_evaluator_for(g, devices)
                                                     : evaluator_for(g, devices);
        std::vector<Point> all;
        std::vector<std::vector<double>> feasible;
        for (const Candidate &c : enumerate(e.space())) {
            const Evaluation ev = e.evaluate(c);
            if (!ev.ok) continue;
            all.push_back(ev.point);
            feasible.push_back(ev.point.objectives);
        }
        QVERIFY(feasible.size() > 10);
        std::vector<double> ref(3, 0);
        for (const auto &p : feasible)
            for (size_t k = 0; k < 3; ++k) ref[k] = std::max(ref[k], p[k] * 1.1 + 1e-12);
        std::vector<std::vector<double>> truth;
        for (size_t i : first_front(all)) truth.push_back(all[i].objectives);
        const double best = hypervolume(truth, ref);
        SearchOptions o;
        o.seed = 3;
        o.max_evaluations = evaluations;
        o.budget_seconds = 0;
        auto r = optimize(e, o);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        const double found = hypervolume(objectives_of(r->front), ref);
        qInfo("%s: %zu candidates with a plan, true front %zu points; search %ld evaluations, front %zu points, "
              "hypervolume %.4f of the true front's",
              qPrintable(graph), feasible.size(), truth.size(), r->evaluations, r->front.size(), found / best);
        QVERIFY(r->evaluations <= evaluations);
        QVERIFY2(found >= 0.99 * best, qPrintable(QString::number(found / best)));
    }
    // The same seed gives the same front, candidate for candidate, at 1 and 2 threads.
    // A stack of layers: an op's twins are the same op of the other layers
    // (Space::twins), and the "mirror" mutator copies one layer's split to them;
    // a graph without layers has none, and its search draws as before.
    void mirrorCarriesASplitToEveryLayer() {
        const Graph block = test::parse(test::mlp_project_text(8));
        const Graph g = testing::stack_blocks(block, "x", "y", 3);
        auto space = Space::of(g, 4);
        QVERIFY2(space.has_value(), space ? "" : space.error().c_str());
        QVERIFY(space->has_twins());
        auto index = [&](const std::string &id) {
            for (size_t i = 0; i < space->ops().size(); ++i)
                if (space->ops()[i].op.value == id) return static_cast<int>(i);
            return -1;
        };
        const int fc1 = index("b0_fc1");
        QVERIFY(fc1 >= 0);
        std::vector<int> twins = space->twins(static_cast<size_t>(fc1));
        std::sort(twins.begin(), twins.end());
        std::vector<int> expected{index("b1_fc1"), index("b2_fc1")};
        std::sort(expected.begin(), expected.end());
        QCOMPARE(twins, expected);
        // fc1 and fc2 of one layer are not twins: "fc1" ends with its number.
        auto single = Space::of(block, 4);
        QVERIFY(single && !single->has_twins());

        const Evaluator e = evaluator_for(g, 4);
        SearchOptions o;
        o.seed = 5;
        o.max_evaluations = 300;
        o.budget_seconds = 0;
        int mirrored = 0;
        SearchHooks h;
        h.candidate = [&](const Scored &sc) {
            if (sc.mutator != "mirror") return;
            ++mirrored;
            // Some op's split now holds on every one of its twins.
            bool uniform = false;
            const Candidate &c = sc.candidate;
            for (size_t i = 0; i < space->ops().size() && !uniform; ++i) {
                const std::vector<int> &tw = space->twins(i);
                if (tw.empty()) continue;
                uniform = std::all_of(tw.begin(), tw.end(), [&](int j) {
                    const size_t k = static_cast<size_t>(j);
                    return c.dim[k] == c.dim[i] && c.parts[k] == c.parts[i] &&
                           (c.has_second(k) ? c.dim2[k] : -1) == (c.has_second(i) ? c.dim2[i] : -1);
                });
            }
            QVERIFY2(uniform, c.key().c_str());
        };
        auto r = optimize(e, o, h);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        const auto m = std::find_if(r->mutators.begin(), r->mutators.end(),
                                    [](const MutatorStats &st) { return st.name == "mirror"; });
        QVERIFY(m != r->mutators.end());
        QVERIFY(m->trials > 0);
        QVERIFY(mirrored > 0);
        // The MLP alone: no mirror among its mutators.
        auto plain = optimize(evaluator_for(block, 4), o);
        QVERIFY(plain.has_value());
        QVERIFY(std::none_of(plain->mutators.begin(), plain->mutators.end(),
                             [](const MutatorStats &st) { return st.name == "mirror"; }));
    }
    void sameSeedSameFrontAtAnyThreadCount() {
        const Graph g = test::parse(test::mlp_project_text(64));
        const Evaluator e = evaluator_for(g, 4);
        auto run = [&](int threads) {
            SearchOptions o;
            o.seed = 11;
            o.threads = threads;
            o.max_evaluations = 150;
            o.budget_seconds = 0;
            std::vector<std::string> streamed;
            SearchHooks h;
            h.candidate = [&](const Scored &s) { streamed.push_back(s.candidate.key()); };
            auto r = optimize(e, o, h);
            if (!r) qFatal("%s", r.error().c_str());
            return std::make_pair(std::move(r).value(), streamed);
        };
        const auto [one, s1] = run(1);
        const auto [two, s2] = run(2);
        QCOMPARE(s1, s2);  // the stream too, in order
        QCOMPARE(one.front.size(), two.front.size());
        for (size_t i = 0; i < one.front.size(); ++i) {
            QCOMPARE(one.front[i].candidate.key(), two.front[i].candidate.key());
            QCOMPARE(one.front[i].evaluation.point.objectives, two.front[i].evaluation.point.objectives);
        }
        QCOMPARE(one.evaluations, 150L);
        QCOMPARE(static_cast<long>(s1.size()), one.evaluations);
    }
    // For each hand baseline the front holds a plan at least as good on every
    // objective, and every plan on it certifies.
    // The dp, pp and dp×tp baselines enter the search as candidates that evaluate
    // to the baselines' own plans: the same step time, peak and devices.
    void baselinesAreCandidates_data() {
        QTest::addColumn<QString>("project");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<QString>("expected");  // the baselines that must be exact candidates
        QTest::newRow("mlp on 4") << "mlp" << 4 << 1 << "dp pp";
        QTest::newRow("gpt2 block on 8") << "gpt2_block" << 8 << 1 << "dp pp";
        // The batch (8) cannot be split 16 ways: no dp; more stages than ops: no pp.
        QTest::newRow("gpt2 block on 16 in 2 nodes") << "gpt2_block" << 16 << 2 << "dp×tp";
    }
    void baselinesAreCandidates() {
        QFETCH(QString, project);
        QFETCH(int, devices);
        QFETCH(int, nodes);
        QFETCH(QString, expected);
        const Graph g = example(project.toStdString());
        const Evaluator e = evaluator_for(g, devices, {Objective::time, Objective::memory, Objective::devices}, {}, nodes);
        const std::vector<BaselineCandidate> seeds = baseline_candidates(e);
        std::set<plan::Baseline> exact;
        for (const BaselineCandidate &b : seeds) {
            QVERIFY(e.space().valid(b.candidate));
            if (b.baseline == plan::Baseline::tp) continue;  // a start near tp, not tp (no propagation)
            plan::PlanRequest req;
            req.target = e.model().target();
            req.devices = devices;
            req.nodes = nodes;
            req.baseline = b.baseline;
            auto p = plan::make_plan(g, req);
            QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
            const Evaluation base = e.score(p->plan, p->prediction), ev = e.evaluate(b.candidate);
            QVERIFY2(ev.ok, ev.error.c_str());
            const std::string what = std::string(plan::baseline_name(b.baseline)) + ": " + e.space().describe(b.candidate);
            QVERIFY2(std::abs(ev.figures.makespan - base.figures.makespan) <= 1e-9 * base.figures.makespan,
                     (what + ": " + std::to_string(ev.figures.makespan) + " s vs the baseline's " +
                      std::to_string(base.figures.makespan)).c_str());
            QVERIFY2(ev.figures.peak == base.figures.peak, what.c_str());
            QCOMPARE(ev.figures.devices, base.figures.devices);
            exact.insert(b.baseline);
        }
        QStringList found;
        for (plan::Baseline b : exact) found << QString::fromUtf8(plan::baseline_name(b));
        found.sort();
        QStringList want = expected.split(' ');
        want.sort();
        QCOMPARE(found, want);
    }
    void frontCoversTheBaselinesAndCertifies_data() {
        QTest::addColumn<QString>("project");
        QTest::addColumn<int>("devices");
        QTest::newRow("mlp on 4") << "mlp" << 4;
        QTest::newRow("gpt2 block on 8") << "gpt2_block" << 8;
    }
    void frontCoversTheBaselinesAndCertifies() {
        QFETCH(QString, project);
        QFETCH(int, devices);
        const Graph g = example(project.toStdString());
        const Evaluator e = evaluator_for(g, devices);
        SearchOptions o;
        o.seed = 1;
        o.max_evaluations = 300;
        o.budget_seconds = 0;
        auto r = optimize(e, o);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp}) {
            plan::PlanRequest req;
            req.target = e.model().target();
            req.devices = devices;
            req.nodes = 1;
            req.baseline = b;
            auto p = plan::make_plan(g, req);
            QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
            const Evaluation base = e.score(p->plan, p->prediction);
            bool covered = false;
            for (const Scored &s : r->front) {
                bool as_good = true;
                for (size_t k = 0; k < 3; ++k)
                    as_good = as_good && s.evaluation.point.objectives[k] <= base.point.objectives[k];
                covered = covered || as_good;
            }
            QVERIFY2(covered, plan::baseline_name(b));
        }
        for (const Scored &s : r->front) {
            // A front entry is the candidate as first evaluated: its index and maker.
            QVERIFY(s.index >= 0 && s.index < r->evaluations && !s.mutator.empty());
            auto m = e.materialize(s.candidate, true);
            QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
            for (const Stage &st : m->stages) QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
            const Certificate cert = plan::certify_plan(m->plan);
            QVERIFY2(cert.pass(), (e.space().describe(s.candidate) + "\n" + cert.text()).c_str());
        }
        // The mutators' weights follow their success.
        long trials = 0;
        for (const MutatorStats &m : r->mutators) {
            trials += m.trials;
            QVERIFY(m.weight > 0 && m.weight < 1);
            QCOMPARE(m.weight, (1.0 + m.successes) / (2.0 + m.trials));
        }
        QVERIFY(trials > 0);
    }
    // A candidate carried over an edit keeps, by op id, every split the edited
    // graph still offers: the same space gives the candidate back; an op new to
    // the graph stays whole; a split past the devices is left whole; fusion's
    // kept-out ops, device maps and pipeline cuts follow their ops.
    void carriesCandidatesOverAnEdit() {
        const Graph g = test::parse(three_ops());
        const Graph edited = test::parse(three_ops_edited());
        const Space from = *Space::of(g, 4);
        const Space to = *Space::of(edited, 4);
        QCOMPARE(to.ops().size(), size_t{4});
        QCOMPARE(to.ops()[2].op.value, std::string("act2"));
        const std::vector<Candidate> all = enumerate(from);
        QVERIFY(all.size() > 100);
        for (const Candidate &c : all) {
            const std::optional<Candidate> same = carry_over(from, c, from);
            QVERIFY2(same && *same == c, c.key().c_str());
            const std::optional<Candidate> carried = carry_over(from, c, to);
            QVERIFY2(carried, c.key().c_str());
            QVERIFY(to.valid(*carried));
            QCOMPARE(carried->rule, c.rule);
            QCOMPARE(carried->stages, c.stages);
            // fc1, act and fc2 split as before; act2, new, whole.
            const std::vector<size_t> was = {0, 1, 3};
            for (size_t j = 0; j < 3; ++j) {
                QCOMPARE(carried->dim[was[j]], c.dim[j]);
                QCOMPARE(carried->parts[was[j]], c.parts[j]);
            }
            QCOMPARE(carried->dim[2], -1);
        }
        // Two devices: a four-way split is left whole, a pipeline of four has no candidate.
        const Space two = *Space::of(g, 2);
        Candidate four = from.batch_split(4);  // fc1 and fc2 four ways, act two
        four.parts[1] = 2;
        QVERIFY(from.valid(four));
        const std::optional<Candidate> narrowed = carry_over(from, four, two);
        QVERIFY(narrowed);
        QCOMPARE(narrowed->dim, (std::vector<int>{-1, four.dim[1], -1}));
        QCOMPARE(narrowed->parts, (std::vector<int>{1, 2, 1}));
        Candidate pipeline = from.unsplit();
        pipeline.rule = PlacementRule::pipeline;
        pipeline.stages = 3;
        QVERIFY(!carry_over(from, pipeline, two));

        // Fusion, maps and cuts by op id.
        Space from_all = from, to_all = to;
        for (Space *s : {&from_all, &to_all}) {
            s->allow_fusion(true);
            s->allow_maps(true);
            s->allow_cuts(true);
        }
        Candidate rich = from_all.batch_split(2);
        rich.fused = true;
        rich.unfused = {1};           // act
        rich.set_map(2, 3, 1);        // fc2 from device 1
        rich.rule = PlacementRule::pipeline;
        rich.stages = 2;
        rich.cuts = {2};              // stage 2 begins at fc2
        QVERIFY(from_all.valid(rich));
        const std::optional<Candidate> moved = carry_over(from_all, rich, to_all);
        QVERIFY(moved);
        QVERIFY(moved->fused);
        QCOMPARE(moved->unfused, std::vector<int>{1});
        QCOMPARE(moved->at, (std::vector<int>{-1, -1, -1, 1}));
        QCOMPARE(moved->cuts, std::vector<int>{3});
        QVERIFY2(to_all.describe(*moved).find("fc2 from device 1") != std::string::npos, to_all.describe(*moved).c_str());
        // An op a cut named gone: placement's own cut instead.
        const Space back = [&] {
            Space s = *Space::of(g, 4);
            s.allow_fusion(true);
            s.allow_maps(true);
            s.allow_cuts(true);
            return s;
        }();
        Candidate at_act2 = *moved;
        at_act2.cuts = {2};  // act2
        const std::optional<Candidate> uncut = carry_over(to_all, at_act2, back);
        QVERIFY(uncut);
        QVERIFY(uncut->cuts.empty());
        QCOMPARE(uncut->stages, 2);
        // A space without fusion, maps and cuts takes the splits and the rule alone.
        const std::optional<Candidate> plain = carry_over(from_all, rich, to);
        QVERIFY(plain);
        QVERIFY(!plain->fused && plain->unfused.empty() && plain->at.empty() && plain->cuts.empty());
        QCOMPARE(plain->stages, 2);
    }

    // Re-planning after an edit from a run the session keeps: its front carried to
    // the edited graph seeds the new search's first population, and on the graph
    // it searched the warm start is the front itself.
    void warmStartsFromAKeptRun() {
        QTemporaryDir dir;
        auto opened = store::Session::open((dir.path() + "/w.tapestry-session").toStdString());
        QVERIFY(opened);
        std::unique_ptr<store::Session> session = std::move(opened).value();
        const Graph g = test::parse(three_ops());
        auto project = session->create_project("three ops");
        QVERIFY(project);
        auto version = session->save_version(*project, g, "save");
        QVERIFY(version);
        const Evaluator e = evaluator_for(g, 4);
        RunSettings settings;
        settings.devices = 4;
        settings.objectives = e.objectives();
        RunKeeper keeper(*session, version->id, "h100-sxm", settings, 3);
        SearchHooks hooks;
        hooks.candidate = [&](const Scored &s) { keeper.add(s, e); };
        auto first = optimize(e, evaluations_budget(3, 80), hooks);
        QVERIFY(first);
        keeper.finish(front_keys(first->front), "finished");
        QVERIFY2(keeper.error().empty(), keeper.error().c_str());
        auto run = session->load_search_run(keeper.run());
        QVERIFY(run);

        auto same = warm_start_from_run(*run, g, e);
        QVERIFY2(same, same ? "" : same.error().c_str());
        QCOMPARE(same->front, static_cast<int>(first->front.size()));
        QCOMPARE(same->dropped, 0);
        std::set<std::string> keys, front;
        for (const Candidate &c : same->candidates) keys.insert(c.key());
        for (const Scored &s : first->front) front.insert(s.candidate.key());
        QVERIFY(keys == front);

        const Graph edited = test::parse(three_ops_edited());
        const Evaluator after = evaluator_for(edited, 4);
        auto carried = warm_start_from_run(*run, g, after);
        QVERIFY2(carried, carried ? "" : carried.error().c_str());
        QCOMPARE(static_cast<int>(carried->candidates.size()) + carried->dropped + carried->merged, carried->front);
        QCOMPARE(search::warm_start_losses(WarmStart{{}, 5, 0, 0}), std::string());
        QCOMPARE(search::warm_start_losses(WarmStart{{}, 5, 2, 1}),
                 std::string(" (2 with no candidate in this graph's space, 1 the same as another once carried)"));
        QCOMPARE(search::warm_start_losses(WarmStart{{}, 5, 0, 3}), std::string(" (3 the same as another once carried)"));
        QVERIFY(!carried->candidates.empty());
        SearchOptions o = evaluations_budget(4, 40);
        o.warm_start = carried->candidates;
        std::set<std::string> first_population;
        SearchHooks wh;
        wh.candidate = [&](const Scored &s) {
            if (s.generation == 0) first_population.insert(s.candidate.key());
        };
        auto second = optimize(after, o, wh);
        QVERIFY2(second, second ? "" : second.error().c_str());
        for (const Candidate &c : carried->candidates)  // each evaluated first (once: a seed may equal one)
            QVERIFY2(first_population.count(c.key()), c.key().c_str());
        // From the session by the run's number: the same carried front; an unknown run refused.
        auto by_number = warm_start_from_session(*session, keeper.run(), after);
        QVERIFY2(by_number, by_number ? "" : by_number.error().c_str());
        QCOMPARE(by_number->candidates.size(), carried->candidates.size());
        auto unknown = warm_start_from_session(*session, keeper.run() + 41, after);
        QVERIFY(!unknown);
        QVERIFY2(QString::fromStdString(unknown.error()).contains("no search run"), unknown.error().c_str());
        // A run whose settings are not JSON says so.
        store::SearchRun broken = *run;
        broken.run.settings_json = "{";
        auto refused = warm_start_from_run(broken, g, e);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error()).contains("search run"), refused.error().c_str());
    }

    void stopsOnRequestAndWarmStarts() {
        const Graph g = test::parse(three_ops());
        const Evaluator e = evaluator_for(g, 4);
        std::atomic<bool> stop{true};
        SearchHooks h;
        h.stop = &stop;
        SearchOptions o;
        o.budget_seconds = 0;
        auto stopped = optimize(e, o, h);
        QVERIFY2(stopped.has_value(), stopped ? "" : stopped.error().c_str());
        QCOMPARE(stopped->stopped, std::string("stopped"));
        QCOMPARE(stopped->evaluations, 0L);
        // A first search, then one warm-started from its front: the new front is at
        // least as good (its hypervolume is not smaller).
        o.max_evaluations = 60;
        o.seed = 5;
        auto first = optimize(e, o);
        QVERIFY(first.has_value());
        SearchOptions again = o;
        again.seed = 6;
        for (const Scored &s : first->front) again.warm_start.push_back(s.candidate);
        int warm = 0;
        SearchHooks wh;
        wh.candidate = [&](const Scored &s) { warm += s.mutator == "warm start" ? 1 : 0; };
        auto second = optimize(e, again, wh);
        QVERIFY(second.has_value());
        std::vector<double> ref(3, 0);
        for (const auto &p : objectives_of(first->front))
            for (size_t k = 0; k < 3; ++k) ref[k] = std::max(ref[k], p[k] * 2 + 1);
        QVERIFY(hypervolume(objectives_of(second->front), ref) >= hypervolume(objectives_of(first->front), ref));
        QVERIFY(warm > 0);
    }
};

QTEST_GUILESS_MAIN(TestSearch)
#include "test_search.moc"
