// The SQLite session store (store/session.h, docs/sessions.md): round trips of
// every example, version numbering, value deduplication, placements and state,
// targets, plans, launches and calibration (schema v3), migration from genuine
// schema-1 and schema-2 files, and the files it must refuse — damaged, newer,
// read-only, locked — which must stay byte-identical.
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

#include "io/project_file.h"
#include "store/content_hash.h"
#include "store/schema.h"
#include "store/session.h"
#include "store_support.h"

using namespace tapestry;
using namespace tapestry::store;
using namespace tapestry::test;
namespace fs = std::filesystem;

namespace {

QByteArray file_hash(const QString &path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
}

// Deterministic values for the parameters of up to 128K elements (the examples'
// big weights would make the suite slow; bench_store measures big values), and a
// data reference on one of them, so that round trips cover values and `data`.
Graph with_values(Graph g, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1, 1);
    bool referenced = false;
    for (const TensorPtr &t : std::vector<TensorPtr>(g.tensors())) {
        if (t->role != TensorRole::parameter || t->range.size() > (1 << 17)) continue;
        auto data = std::make_shared<TensorData>(t->dtype, t->shape());
        for (std::int64_t i = 0; i < data->element_count(); ++i) data->set(i, dist(rng));
        Tensor copy = *t;
        copy.value = std::move(data);
        if (!referenced) {
            copy.data = "weights/" + t->id.value + ".npy";
            referenced = true;
        }
        g.put_tensor(std::move(copy));
    }
    return g;
}

// Same graph: names, nodes in order, every field, values by content.
QString graph_difference(const Graph &a, const Graph &b) {
    if (a.name != b.name || a.description != b.description) return "name or description";
    if (a.tensors().size() != b.tensors().size() || a.operations().size() != b.operations().size())
        return "node counts";
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!(*a.tensors()[i] == *b.tensors()[i])) return "tensor " + QString::fromStdString(a.tensors()[i]->id.value);
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (!(*a.operations()[i] == *b.operations()[i]))
            return "operation " + QString::fromStdString(a.operations()[i]->id.value);
    return {};
}

Graph load_example(const QString &name) {
    const fs::path path =
        fs::path(qEnvironmentVariable("TAPESTRY_SOURCE_DIR").toStdString()) / "projects" / name.toStdString();
    LoadResult r = load_project(path);
    return r.graph;
}

// A plan file's text with odd spacing: it must come back byte for byte.
constexpr std::string_view kPlanJson = R"({"format": "tapestry-plan",  "version": 1,
  "devices": ["0:0", "0:1"]})";

PlanRecord plan_on(VersionId version, std::optional<StageId> stage, std::string target = "h100") {
    PlanRecord p;
    p.version_id = version;
    p.stage_id = stage;
    p.target = std::move(target);
    p.devices = 2;
    p.summary = "2 devices, makespan 1.25 ms (predicted), peak 3.5 MB";
    p.makespan_seconds = 1.25e-3;
    p.peak_bytes = 3'500'000;
    return p;
}

LaunchRecord launch_of(PlanId plan, std::string status = "ok", std::string started_at = "") {
    LaunchRecord l;
    l.plan_id = plan;
    l.backend = "cpu";
    l.status = std::move(status);
    l.started_at = std::move(started_at);
    return l;
}

}  // namespace

class TestStore : public QObject {
    Q_OBJECT

    SessionFiles files_;

    QString fresh_path() { return files_.fresh(); }
    static std::unique_ptr<Session> open_ok(const QString &path, OpenMode mode = OpenMode::read_write) {
        return SessionFiles::open(path, mode);
    }

    // A session with a few versions of the MLP with values, closed again.
    QString make_session() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        if (!s) return {};
        const ProjectId p = s->create_project("mlp").value();
        for (std::uint32_t i = 0; i < 4; ++i)
            s->save_version(p, with_values(load_example("mlp.tapestry.json"), i), "save");
        s->set_state(kSessionScope, "open_tabs", "[1]");
        return path;
    }

    // A project with one saved version of the MLP and a stage on that version.
    struct Planned {
        ProjectId project = 0;
        VersionInfo version;
        StageRecord stage;
    };
    Planned planned_project(Session &s, const std::string &name) {
        const Graph g = load_example("mlp.tapestry.json");
        Planned out;
        out.project = s.create_project(name).value();
        out.version = s.save_version(out.project, g, "save").value();
        StageRecord r;
        r.version_id = out.version.id;
        r.pass_name = "shard";
        out.stage = s.add_stage(r, g).value();
        return out;
    }

    void expect_refused(const QString &path, OpenMode mode, const QString &code) {
        const QByteArray before = file_hash(path);
        QVERIFY(!before.isEmpty());
        auto s = Session::open(path.toStdString(), mode);
        QVERIFY(!s);
        QCOMPARE(QString::fromStdString(s.error().code), code);
        QVERIFY2(s.error().message.find(path.toStdString()) != std::string::npos, s.error().message.c_str());
        QCOMPARE(file_hash(path), before);
        QVERIFY2(!QFile::exists(path + "-wal"), "a refused file got a -wal beside it");
        QVERIFY2(!QFile::exists(path + "-shm"), "a refused file got a -shm beside it");
    }

private slots:
    void initTestCase() {
        QVERIFY(files_.valid());
        QVERIFY(!qEnvironmentVariable("TAPESTRY_SOURCE_DIR").isEmpty());
    }

    // ---- round trips --------------------------------------------------------------

    void round_trip_examples_data() {
        QTest::addColumn<QString>("example");
        const QDir projects(qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects");
        const QStringList files = projects.entryList({"*.tapestry.json"}, QDir::Files, QDir::Name);
        QVERIFY(files.size() >= 4);
        for (const QString &f : files) QTest::newRow(qPrintable(f)) << f;
    }
    void round_trip_examples() {
        QFETCH(QString, example);
        const Graph original = with_values(load_example(example), 7);
        QVERIFY(original.node_count() > 0);
        int values = 0;
        for (const TensorPtr &t : original.tensors()) values += t->value != nullptr;
        QVERIFY2(values > 0, "the example has no parameter small enough to carry a value here");
        const QString path = fresh_path();
        {
            auto s = open_ok(path);
            QVERIFY(s);
            QCOMPARE(s->schema_version(), current_schema_version());
            const ProjectId p = s->create_project(example.toStdString()).value();
            auto v = s->save_version(p, original, "save");
            QVERIFY2(v, v ? "" : v.error().message.c_str());
            QCOMPARE(v->node_count, static_cast<int>(original.node_count()));
            auto loaded = s->load_version(v->id);
            QVERIFY(loaded);
            QCOMPARE(graph_difference(original, *loaded), QString());
        }
        // Reopened in another session: same graph, values shared between loads.
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        const ProjectId p = s->projects()->front().id;
        auto a = s->load_latest(p);
        auto b = s->load_latest(p);
        QVERIFY(a && b);
        QCOMPARE(graph_difference(original, *a), QString());
        QCOMPARE(serialize_project(*a), serialize_project(original));
        for (size_t i = 0; i < a->tensors().size(); ++i)
            if (a->tensors()[i]->value) QVERIFY(a->tensors()[i]->value.get() == b->tensors()[i]->value.get());
    }

    void versions_are_numbered_per_project() {
        auto s = open_ok(fresh_path());
        QVERIFY(s);
        const ProjectId a = s->create_project("a").value();
        const ProjectId b = s->create_project("b").value();
        const Graph g = load_example("mlp.tapestry.json");
        const char *kinds[] = {"import", "autosave", "save"};
        for (const char *kind : kinds) QVERIFY(s->save_version(a, g, kind));
        auto first_b = s->save_version(b, g, "save");
        QVERIFY(first_b);
        QCOMPARE(first_b->number, 1);
        auto versions = s->versions(a);
        QVERIFY(versions);
        QCOMPARE(versions->size(), size_t{3});
        for (int i = 0; i < 3; ++i) {
            QCOMPARE((*versions)[static_cast<size_t>(i)].number, i + 1);
            QCOMPARE(QString::fromStdString((*versions)[static_cast<size_t>(i)].kind), QString(kinds[i]));
        }
        auto projects = s->projects();
        QVERIFY(projects);
        QCOMPARE(projects->size(), size_t{2});
        QCOMPARE((*projects)[0].version_count, 3);
        QCOMPARE((*projects)[0].latest_version_id, versions->back().id);
        QCOMPARE((*projects)[0].updated_at, versions->back().saved_at);
        QCOMPARE(s->version_by_number(a, 2)->id, (*versions)[1].id);
        QCOMPARE(QString::fromStdString(s->version_by_number(a, 9).error().code), QString("not-found"));
        QCOMPARE(QString::fromStdString(s->save_version(a, g, "draft").error().code), QString("invalid"));
        QCOMPARE(QString::fromStdString(s->save_version(999, g, "save").error().code), QString("not-found"));
        QCOMPARE(QString::fromStdString(s->load_latest(s->create_project("empty").value()).error().code),
                 QString("not-found"));
        QVERIFY(s->rename_project(a, "renamed"));
        QCOMPARE(s->project(a)->name, std::string("renamed"));
    }

    void values_are_stored_once() {
        auto s = open_ok(fresh_path());
        QVERIFY(s);
        const ProjectId p = s->create_project("mlp").value();
        const Graph g = with_values(load_example("mlp.tapestry.json"), 1);
        int parameters = 0;
        for (const TensorPtr &t : g.tensors()) parameters += t->value != nullptr;
        QVERIFY(parameters >= 2);
        QVERIFY(s->save_version(p, g, "save"));
        QCOMPARE(*s->value_count(), std::int64_t{parameters});
        // The same graph again, and an equal graph built afresh (other pointers): no new rows.
        QVERIFY(s->save_version(p, g, "autosave"));
        QVERIFY(s->save_version(p, with_values(load_example("mlp.tapestry.json"), 1), "autosave"));
        QCOMPARE(*s->value_count(), std::int64_t{parameters});
        // One value changed: one new row.
        Graph changed = g;
        for (const TensorPtr &t : g.tensors()) {
            if (!t->value) continue;
            auto data = std::make_shared<TensorData>(*t->value);
            data->set(0, data->get(0) + 1);
            Tensor copy = *t;
            copy.value = data;
            changed.put_tensor(std::move(copy));
            break;
        }
        QVERIFY(s->save_version(p, changed, "autosave"));
        QCOMPARE(*s->value_count(), std::int64_t{parameters + 1});
        // Equal bytes under another shape are another value.
        const TensorData a(DType::f32, ZPoint{2, 3}), b(DType::f32, ZPoint{3, 2});
        QVERIFY(a.bytes == b.bytes);
        QVERIFY(content_hash(a) != content_hash(b));
        QVERIFY(content_hash(a) == content_hash(TensorData(DType::f32, ZPoint{2, 3})));
        QVERIFY(content_hash(a) != content_hash(TensorData(DType::i32, ZPoint{2, 3})));
        QCOMPARE(QString::fromStdString(murmur3_128({}).hex()), QString(32, '0'));
    }

    void placements_and_state_round_trip() {
        const QString path = fresh_path();
        {
            auto s = open_ok(path);
            QVERIFY(s);
            const ProjectId p = s->create_project("mlp").value();
            const Graph g = load_example("mlp.tapestry.json");
            const Placements placed{{"fc1", {10.5, -3.25, true}}, {"x", {0, 100, false}}};
            QVERIFY(s->save_version(p, g, "save", &placed));
            QCOMPARE(*s->placements(p), placed);
            QVERIFY(s->save_version(p, g, "autosave"));  // no placements given: kept
            QCOMPARE(*s->placements(p), placed);
            const Placements moved{{"fc1", {1, 2, false}}};
            QVERIFY(s->save_version(p, g, "autosave", &moved));  // given: replaced
            QCOMPARE(*s->placements(p), moved);
            const auto versions_before = s->versions(p)->size();
            const Placements again{{"x", {7, 8, true}}};
            QVERIFY(s->set_placements(p, again));  // replaced without a version
            QCOMPARE(*s->placements(p), again);
            QCOMPARE(s->versions(p)->size(), versions_before);
            QCOMPARE(QString::fromStdString(s->set_placements(99, again).error().code), QString("not-found"));
            QVERIFY(s->set_placements(p, moved));

            // The file a project continues: none, recorded, moved.
            QCOMPARE(*s->source_file(p), std::string());
            QVERIFY(s->set_source_file(p, "/work/mlp \"one\".tapestry.json"));
            QCOMPARE(*s->source_file(p), std::string("/work/mlp \"one\".tapestry.json"));
            QCOMPARE(**s->state(p, "source_file"), std::string("{\"path\":\"/work/mlp \\\"one\\\".tapestry.json\"}"));
            QVERIFY(s->set_state(p, "source_file", R"({"elsewhere": 1})"));  // not ours: no file
            QCOMPARE(*s->source_file(p), std::string());
            QVERIFY(s->set_source_file(p, "/work/mlp.tapestry.json"));

            QVERIFY(s->set_state(kSessionScope, "open_tabs", R"([1, 2])"));
            QVERIFY(s->set_state(kSessionScope, "open_tabs", R"([2])"));
            QVERIFY(s->set_state(p, "view", R"({"zoom": 1.5, "center": [3, 4]})"));
            QCOMPARE(QString::fromStdString(s->set_state(p, "view", "{zoom").error().code), QString("invalid"));
            QCOMPARE(QString::fromStdString(s->set_state(99, "view", "{}").error().code), QString("not-found"));
        }
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        const ProjectId p = s->projects()->front().id;
        QCOMPARE(**s->state(kSessionScope, "open_tabs"), std::string("[2]"));
        QCOMPARE(**s->state(p, "view"), std::string(R"({"zoom": 1.5, "center": [3, 4]})"));
        QVERIFY(!s->state(p, "open_tabs")->has_value());  // scopes are separate
        QVERIFY(!s->state(kSessionScope, "missing")->has_value());
        QCOMPARE(s->placements(p)->at("fc1"), (NodePlacement{1, 2, false}));
        QCOMPARE(*s->source_file(p), std::string("/work/mlp.tapestry.json"));
        // A read-only session writes nothing.
        QCOMPARE(QString::fromStdString(s->set_placements(p, {}).error().code), QString("read-only"));
        QCOMPARE(QString::fromStdString(s->set_state(kSessionScope, "k", "1").error().code), QString("read-only"));
        QCOMPARE(QString::fromStdString(s->create_project("x").error().code), QString("read-only"));
    }

    void stages_round_trip() {
        auto s = open_ok(fresh_path());
        QVERIFY(s);
        const ProjectId p = s->create_project("mlp").value();
        const Graph g = with_values(load_example("mlp.tapestry.json"), 3);
        const VersionInfo v = s->save_version(p, g, "save").value();
        StageRecord r;
        r.version_id = v.id;
        r.ordinal = 0;
        r.pass_name = "fuse_epilogues";
        r.options_json = R"({"max": 2})";
        r.summary = "fused 2 bias additions into their matmuls";
        r.diff_json = R"({"removed": ["b1"]})";
        r.certificate_json = R"({"verified": true})";
        auto stored = s->add_stage(r, g);
        QVERIFY2(stored, stored ? "" : stored.error().message.c_str());
        auto stages = s->stages(v.id);
        QVERIFY(stages);
        QCOMPARE(stages->size(), size_t{1});
        QCOMPARE(stages->front().summary, r.summary);
        QCOMPARE(stages->front().diff_json, r.diff_json);
        QCOMPARE(stages->front().graph_version_id, stored->graph_version_id);
        QCOMPARE(graph_difference(*s->load_version(stored->graph_version_id), g), QString());
        // Stage graphs are not editor versions.
        QCOMPARE(s->versions(p)->size(), size_t{1});
        QCOMPARE(s->versions(p, true)->size(), size_t{2});
        QCOMPARE(s->projects()->front().latest_version_id, v.id);
        // Same ordinal twice on a version is refused.
        QCOMPARE(QString::fromStdString(s->add_stage(r, g).error().code), QString("invalid"));
        r.diff_json = "{";
        r.ordinal = 1;
        QCOMPARE(QString::fromStdString(s->add_stage(r, g).error().code), QString("invalid"));
    }

    // ---- schema v3: targets, plans, launches, calibration --------------------------------

    void targets_round_trip() {
        const QString path = fresh_path();
        {
            auto s = open_ok(path);
            QVERIFY(s);
            QVERIFY(s->save_target("h100-tuned", "user", R"({"name": "h100-tuned", "devices": 8})"));
            QVERIFY(s->save_target("host", "measured", R"({"name": "host"})"));
            const std::string first_update = s->targets()->front().updated_at;
            // Saving under a name replaces that target.
            QVERIFY(s->save_target("h100-tuned", "user", R"({"name": "h100-tuned", "devices": 4})"));
            auto targets = s->targets();
            QVERIFY(targets);
            QCOMPARE(targets->size(), size_t{2});
            QCOMPARE(targets->front().name, std::string("h100-tuned"));
            QCOMPARE(targets->front().target_json, std::string(R"({"name": "h100-tuned", "devices": 4})"));
            QVERIFY(targets->front().updated_at >= first_update);
            QCOMPARE(targets->back().origin, std::string("measured"));
            QCOMPARE(code_of(s->save_target("x", "vendor", "{}")), QString("invalid"));
            QCOMPARE(message_of(s->save_target("x", "vendor", "{}")),
                     QString("target origin 'vendor' is not one of user, measured"));
            QCOMPARE(message_of(s->save_target("x", "user", "{devices")), QString("target 'x' is not valid JSON"));
            QCOMPARE(code_of(s->save_target("", "user", "{}")), QString("invalid"));
            QVERIFY(s->save_target("scratch", "user", "{}"));
            QVERIFY(s->delete_target("scratch"));
            QCOMPARE(message_of(s->delete_target("scratch")), "session " + path + " has no target named 'scratch'");
        }
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        auto targets = s->targets();
        QVERIFY(targets);
        QCOMPARE(targets->size(), size_t{2});
        QCOMPARE(targets->back().name, std::string("host"));
        QCOMPARE(targets->back().target_json, std::string(R"({"name": "host"})"));
    }

    void plans_round_trip() {
        const QString path = fresh_path();
        PlanRecord staged;
        {
            auto s = open_ok(path);
            QVERIFY(s);
            const Planned a = planned_project(*s, "mlp");
            const VersionInfo later = s->save_version(a.project, load_example("mlp.tapestry.json"), "save").value();
            const Planned other = planned_project(*s, "other");
            auto whole = s->save_plan(plan_on(a.version.id, std::nullopt), kPlanJson);
            QVERIFY2(whole, message_of(whole).toUtf8().constData());
            QVERIFY(whole->id > 0);
            QCOMPARE(whole->created_at.size(), std::string("2026-11-21T12:31:07.343Z").size());
            auto from_stage = s->save_plan(plan_on(a.version.id, a.stage.id, "host"), kPlanJson);
            QVERIFY(from_stage);
            staged = *from_stage;
            QVERIFY(s->save_plan(plan_on(later.id, std::nullopt), "{}"));
            QVERIFY(s->save_plan(plan_on(other.version.id, std::nullopt), "{}"));

            QCOMPARE(s->plans(a.project)->size(), size_t{3});
            QCOMPARE(s->plans(a.project, a.version.id)->size(), size_t{2});  // the plain one and the stage's
            QCOMPARE(s->plans(a.project, later.id)->size(), size_t{1});
            QCOMPARE(s->plans(other.project)->size(), size_t{1});
            QCOMPARE(code_of(s->plans(999)), QString("not-found"));
        }
        // Another session reads the same records and the plan text byte for byte.
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        auto plans = s->plans(s->projects()->front().id);
        QVERIFY(plans);
        const PlanRecord &read = (*plans)[1];
        QCOMPARE(read.id, staged.id);
        QCOMPARE(read.version_id, staged.version_id);
        QVERIFY(read.stage_id && *read.stage_id == *staged.stage_id);
        QVERIFY(!(*plans)[0].stage_id);
        QCOMPARE(read.target, std::string("host"));
        QCOMPARE(read.devices, 2);
        QCOMPARE(read.summary, staged.summary);
        QCOMPARE(read.makespan_seconds, 1.25e-3);
        QCOMPARE(read.peak_bytes, std::int64_t{3'500'000});
        QCOMPARE(read.created_at, staged.created_at);
        QCOMPARE(*s->load_plan_json(read.id), std::string(kPlanJson));
        QCOMPARE(message_of(s->load_plan_json(999)), "session " + path + " has no plan with id 999");
    }

    // Each bad plan, the exact message; nothing is saved.
    void bad_plan_is_refused_data() {
        QTest::addColumn<QString>("code");
        // $path, $stage, $version, $later and $stage_graph stand for the row's session and ids.
        QTest::addColumn<QString>("message");
        QTest::newRow("no target") << "invalid"
                                   << "a plan needs a target name";
        QTest::newRow("no device") << "invalid"
                                   << "a plan needs at least one device (got 0)";
        QTest::newRow("two-line summary") << "invalid"
                                          << "a plan summary is one line";
        QTest::newRow("negative makespan") << "invalid"
                                           << "a plan needs a finite, non-negative predicted makespan";
        QTest::newRow("NaN makespan") << "invalid"
                                      << "a plan needs a finite, non-negative predicted makespan";
        QTest::newRow("negative peak") << "invalid"
                                       << "a plan needs a non-negative predicted peak memory";
        QTest::newRow("plan text not JSON") << "invalid"
                                            << "a plan for target h100 is not valid JSON";
        QTest::newRow("unknown version") << "not-found"
                                         << "session $path has no graph version with id 999";
        QTest::newRow("unknown stage") << "not-found"
                                       << "session $path has no stage with id 999";
        QTest::newRow("stage of another version") << "invalid"
                                                  << "stage $stage belongs to graph version $version, not $later";
        QTest::newRow("a stage's graph as the version")
            << "invalid"
            << "graph version $stage_graph is a stage's graph; a plan names the version the pass ran on and the "
               "stage";
    }
    void bad_plan_is_refused() {
        QFETCH(QString, code);
        QFETCH(QString, message);
        const QString path = fresh_path();
        auto s = open_ok(path);
        QVERIFY(s);
        const Planned a = planned_project(*s, "mlp");
        const VersionInfo later = s->save_version(a.project, load_example("mlp.tapestry.json"), "save").value();
        PlanRecord plan = plan_on(a.version.id, a.stage.id);
        std::string_view text = kPlanJson;
        const QString row = QTest::currentDataTag();
        if (row == "no target") plan.target.clear();
        if (row == "no device") plan.devices = 0;
        if (row == "two-line summary") plan.summary += "\nand more";
        if (row == "negative makespan") plan.makespan_seconds = -1;
        if (row == "NaN makespan") plan.makespan_seconds = std::nan("");
        if (row == "negative peak") plan.peak_bytes = -1;
        if (row == "plan text not JSON") text = R"({"format": "tapestry-plan")";
        if (row == "unknown version") plan.version_id = 999;
        if (row == "unknown stage") plan.stage_id = 999;
        if (row == "stage of another version") plan.version_id = later.id;
        if (row == "a stage's graph as the version") plan = plan_on(a.stage.graph_version_id, std::nullopt);
        message.replace("$path", path)
            .replace("$stage_graph", QString::number(a.stage.graph_version_id))
            .replace("$stage", QString::number(a.stage.id))
            .replace("$version", QString::number(a.version.id))
            .replace("$later", QString::number(later.id));
        auto saved = s->save_plan(plan, text);
        QCOMPARE(code_of(saved), code);
        QCOMPARE(message_of(saved), message);
        QCOMPARE(s->plans(a.project)->size(), size_t{0});
    }

    void launches_round_trip() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        QVERIFY(s);
        const Planned a = planned_project(*s, "mlp");
        const PlanId plan = s->save_plan(plan_on(a.version.id, a.stage.id), kPlanJson)->id;
        LaunchRecord ok;
        ok.plan_id = plan;
        ok.backend = "cpu";
        ok.started_at = "2026-11-21T12:31:07.343Z";
        ok.finished_at = "2026-11-21T12:31:09.001Z";
        ok.status = "ok";
        ok.equivalence = "outputs equal within 1e-5";
        ok.measurements_json = R"({"wall_seconds": 1.658})";
        const std::vector<StepMeasurement> steps{
            {0, "0:0", 0.0, 0.5, 0.4}, {1, "0:1", 0.0, 0.75, 0.4}, {2, "0:0", 0.75, 1.5, 0.6}};
        auto recorded = s->record_launch(ok, steps);
        QVERIFY2(recorded, message_of(recorded).toUtf8().constData());
        QVERIFY(recorded->id > 0);
        LaunchRecord failed;
        failed.plan_id = plan;
        failed.backend = "cuda";
        failed.status = "failed";
        failed.error = "no CUDA device";
        auto second = s->record_launch(failed, {});
        QVERIFY(second);
        QCOMPARE(second->started_at.size(), ok.started_at.size());  // recorded now, in the store's format

        auto launches = s->launches(plan);
        QVERIFY(launches);
        QCOMPARE(launches->size(), size_t{2});
        const LaunchRecord &first = launches->front();
        QCOMPARE(first.id, recorded->id);
        QCOMPARE(first.backend, std::string("cpu"));
        QCOMPARE(first.started_at, ok.started_at);
        QCOMPARE(first.finished_at, ok.finished_at);
        QCOMPARE(first.equivalence, ok.equivalence);
        QCOMPARE(first.measurements_json, ok.measurements_json);
        QCOMPARE(launches->back().error, std::string("no CUDA device"));
        QCOMPARE(launches->back().measurements_json, std::string("{}"));
        QVERIFY(*s->step_measurements(recorded->id) == steps);
        QVERIFY(s->step_measurements(second->id)->empty());

        QCOMPARE(message_of(s->record_launch(launch_of(plan, "done"), {})),
                 QString("launch status 'done' is not one of ok, failed, cancelled"));
        QCOMPARE(message_of(s->record_launch(launch_of(plan, "ok", "yesterday"), {})),
                 QString("launch time 'yesterday' is not an ISO 8601 time (2026-11-21T12:31:07.343Z)"));
        QCOMPARE(message_of(s->record_launch(launch_of(999), {})), "session " + path + " has no plan with id 999");
        QCOMPARE(s->launches(plan)->size(), size_t{2});
    }

    void calibration_round_trip() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        QVERIFY(s);
        const Planned a = planned_project(*s, "mlp");
        const PlanId plan = s->save_plan(plan_on(a.version.id, std::nullopt), kPlanJson)->id;
        const LaunchId launch = s->record_launch(launch_of(plan), {})->id;
        QVERIFY(s->add_calibration(
            "host", {{"gemm", 1e9, 0.010, 0.012, launch, ""}, {"copy", 1e6, 1e-4, 2e-4, std::nullopt, ""}}));
        QVERIFY(s->add_calibration("h100", {{"gemm", 1e12, 0.5, 0.6, std::nullopt, ""}}));
        auto host = s->calibration("host");
        QVERIFY(host);
        QCOMPARE(host->size(), size_t{2});
        QCOMPARE(host->front().kernel_class, std::string("copy"));  // by kernel class, then size
        QVERIFY(!host->front().launch_id);
        QCOMPARE(host->back().size, 1e9);
        QCOMPARE(host->back().predicted_seconds, 0.010);
        QCOMPARE(host->back().measured_seconds, 0.012);
        QVERIFY(host->back().launch_id && *host->back().launch_id == launch);
        QVERIFY(!host->back().created_at.empty());
        QVERIFY(s->calibration("l40s")->empty());
        // One transaction: a point naming an unknown launch refuses the whole batch.
        auto refused =
            s->add_calibration("host", {{"reduction", 1e3, 1e-6, 1e-6, std::nullopt, ""}, {"gemm", 1, 1, 1, 999, ""}});
        QCOMPARE(message_of(refused), "session " + path + " has no launch with id 999");
        QCOMPARE(s->calibration("host")->size(), size_t{2});
        QCOMPARE(code_of(s->add_calibration("host", {{"", 1, 1, 1, std::nullopt, ""}})), QString("invalid"));
    }

    void read_only_session_refuses_plan_writes() {
        const QString path = fresh_path();
        PlanId plan = 0;
        VersionId version = 0;
        {
            auto s = open_ok(path);
            QVERIFY(s);
            const Planned a = planned_project(*s, "mlp");
            version = a.version.id;
            plan = s->save_plan(plan_on(version, std::nullopt), kPlanJson)->id;
            QVERIFY(s->save_target("mine", "user", "{}"));
        }
        const QByteArray before = file_hash(path);
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        QCOMPARE(code_of(s->save_plan(plan_on(version, std::nullopt), kPlanJson)), QString("read-only"));
        QCOMPARE(message_of(s->save_plan(plan_on(version, std::nullopt), kPlanJson)),
                 "session " + path + " was opened read-only");
        QCOMPARE(code_of(s->save_target("mine", "user", "{}")), QString("read-only"));
        QCOMPARE(code_of(s->delete_target("mine")), QString("read-only"));
        QCOMPARE(code_of(s->record_launch(launch_of(plan), {})), QString("read-only"));
        QCOMPARE(code_of(s->add_calibration("host", {{"gemm", 1, 1, 1, std::nullopt, ""}})), QString("read-only"));
        // Reading works, and nothing was written.
        QCOMPARE(s->plans(s->projects()->front().id)->size(), size_t{1});
        QCOMPARE(s->targets()->size(), size_t{1});
        s.reset();
        QCOMPARE(file_hash(path), before);
    }

    // ---- migrations -------------------------------------------------------------------

    void migration_from_schema_1() {
        const QString path = fresh_path();
        const Graph g = with_values(load_example("gpt2_block.tapestry.json"), 5);
        VersionInfo saved;
        {
            auto old = create_session_at_version(path.toStdString(), 1);
            QVERIFY2(old, old ? "" : old.error().message.c_str());
            QCOMPARE((*old)->schema_version(), 1);
            const ProjectId p = (*old)->create_project("gpt2").value();
            saved = (*old)->save_version(p, g, "save", nullptr).value();
            const Placements placed{{"ln1", {4, 5, true}}};
            QVERIFY((*old)->save_version(p, g, "autosave", &placed));
            QVERIFY((*old)->set_state(p, "view", "{\"zoom\": 2}"));
            StageRecord r;
            r.version_id = saved.id;
            r.pass_name = "p";
            QCOMPARE(QString::fromStdString((*old)->add_stage(r, g).error().code), QString("invalid"));
        }
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{1});
        QCOMPARE(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'stages'"), std::int64_t{0});

        auto s = open_ok(path);
        QVERIFY(s);
        QCOMPARE(s->schema_version(), current_schema_version());
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{current_schema_version()});
        const ProjectId p = s->projects()->front().id;
        QCOMPARE(s->versions(p)->size(), size_t{2});
        QCOMPARE(graph_difference(*s->load_version(saved.id), g), QString());
        QCOMPARE(s->placements(p)->at("ln1"), (NodePlacement{4, 5, true}));
        QCOMPARE(**s->state(p, "view"), std::string("{\"zoom\": 2}"));
        StageRecord r;
        r.version_id = saved.id;
        r.pass_name = "shard";
        QVERIFY(s->add_stage(r, g));
        QCOMPARE(s->stages(saved.id)->size(), size_t{1});
        // Migrations are an ordered history.
        for (size_t i = 0; i < migrations().size(); ++i) QCOMPARE(migrations()[i].version, static_cast<int>(i + 1));
        QCOMPARE(current_schema_version(), 6);
    }

    void migration_from_schema_2() {
        const QString path = fresh_path();
        const Graph g = with_values(load_example("mlp.tapestry.json"), 6);
        VersionInfo saved;
        StageRecord stage;
        {
            auto old = create_session_at_version(path.toStdString(), 2);
            QVERIFY2(old, old ? "" : old.error().message.c_str());
            const ProjectId p = (*old)->create_project("mlp").value();
            const Placements placed{{"fc1", {4, 5, true}}};
            saved = (*old)->save_version(p, g, "save", &placed).value();
            StageRecord r;
            r.version_id = saved.id;
            r.pass_name = "shard";
            r.summary = "split fc1 in 2";
            stage = (*old)->add_stage(r, g).value();
            QVERIFY((*old)->set_state(kSessionScope, "open_tabs", "[1]"));
            QCOMPARE(message_of((*old)->save_plan(plan_on(saved.id, stage.id), kPlanJson)),
                     "session " + path + " is at schema 2; plans need schema 3");
        }
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{2});
        QCOMPARE(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'plans'"), std::int64_t{0});
        // A read-only session reads a v2 file as it is: no v3 rows, no migration.
        {
            auto reader = open_ok(path, OpenMode::read_only);
            QVERIFY(reader);
            QCOMPARE(reader->schema_version(), 2);
            QVERIFY(reader->targets()->empty());
            QVERIFY(reader->plans(reader->projects()->front().id)->empty());
            QCOMPARE(code_of(reader->load_plan_json(1)), QString("not-found"));
        }
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{2});

        auto s = open_ok(path);
        QVERIFY(s);
        QCOMPARE(s->schema_version(), current_schema_version());
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{current_schema_version()});
        for (const std::string &table : tables_of_schema(3)) {
            const std::string sql =
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '" + table + "'";
            QVERIFY2(raw_int(path, sql.c_str()) == 1, table.c_str());
        }
        QCOMPARE(tables_of_schema(3).size(), tables_of_schema(2).size() + 7);
        const ProjectId p = s->projects()->front().id;
        QCOMPARE(graph_difference(*s->load_latest(p), g), QString());
        QCOMPARE(s->placements(p)->at("fc1"), (NodePlacement{4, 5, true}));
        QCOMPARE(**s->state(kSessionScope, "open_tabs"), std::string("[1]"));
        auto stages = s->stages(saved.id);
        QVERIFY(stages);
        QCOMPARE(stages->size(), size_t{1});
        QCOMPARE(stages->front().summary, std::string("split fc1 in 2"));
        // The migrated stage takes plans.
        auto plan = s->save_plan(plan_on(saved.id, stage.id), kPlanJson);
        QVERIFY2(plan, message_of(plan).toUtf8().constData());
        QCOMPARE(s->plans(p, saved.id)->size(), size_t{1});
    }

    // v4 gives a calibration point its kernel: points kept at v3 read as having
    // none, whether the file is read as it is or migrated; new points keep theirs.
    void migration_from_schema_3_keeps_calibration() {
        const QString path = fresh_path();
        {
            auto old = create_session_at_version(path.toStdString(), 3);
            QVERIFY2(old, old ? "" : old.error().message.c_str());
            QCOMPARE(message_of((*old)->add_calibration("host", {CalibrationRow{"gemm", 1e9, 0.01, 0.02, std::nullopt, {}, "matmul", 1}})),
                     "session " + path + " is at schema 3; calibration points need schema 6");
        }
        // What a v3 Tapestry wrote.
        QVERIFY(raw_exec(path, "INSERT INTO calibration (target, kernel_class, size, predicted_seconds, "
                               "measured_seconds, launch_id, created_at) VALUES ('host', 'elementwise', 2e6, 1e-3, 2e-3, "
                               "NULL, '2026-11-20T10:00:00Z')"));
        {
            auto reader = open_ok(path, OpenMode::read_only);
            QVERIFY(reader);
            QCOMPARE(reader->schema_version(), 3);
            auto rows = reader->calibration("host");
            QVERIFY(rows);
            QCOMPARE(rows->size(), size_t{1});
            QCOMPARE(rows->front().kernel, std::string());
            QCOMPARE(rows->front().threads, 0);
            QCOMPARE(rows->front().measured_seconds, 2e-3);
        }
        auto s = open_ok(path);
        QVERIFY(s);
        QCOMPARE(s->schema_version(), 6);
        QVERIFY(s->add_calibration("host", {CalibrationRow{"elementwise", 3e6, 1e-3, 0.5e-3, std::nullopt, {}, "layernorm", 2}}));
        auto rows = s->calibration("host");
        QVERIFY(rows);
        QCOMPARE(rows->size(), size_t{2});
        QCOMPARE((*rows)[0].kernel, std::string());
        QCOMPARE((*rows)[0].threads, 0);
        QCOMPARE((*rows)[1].kernel, std::string("layernorm"));
        QCOMPARE((*rows)[1].threads, 2);
        QCOMPARE((*rows)[1].size, 3e6);
    }

    // v5 gives a calibration point its kernel's dtype: points kept at v4 read as
    // having none ("" — their kernel's every-dtype group), read as the file is or
    // migrated; new points keep theirs.
    void migration_from_schema_4_keeps_calibration() {
        const QString path = fresh_path();
        {
            auto old = create_session_at_version(path.toStdString(), 4);
            QVERIFY2(old, old ? "" : old.error().message.c_str());
            QCOMPARE(message_of((*old)->add_calibration(
                         "h200", {CalibrationRow{"reduction", 2e7, 1e-5, 2e-5, std::nullopt, {}, "layernorm", 0, "bf16"}})),
                     "session " + path + " is at schema 4; calibration points need schema 6");
        }
        // What a v4 Tapestry wrote.
        QVERIFY(raw_exec(path, "INSERT INTO calibration (target, kernel_class, size, predicted_seconds, "
                               "measured_seconds, launch_id, created_at, kernel, threads) VALUES ('h200', 'reduction', "
                               "2e7, 1e-5, 1.9e-5, NULL, '2026-11-26T10:00:00Z', 'layernorm', 0)"));
        {
            auto reader = open_ok(path, OpenMode::read_only);
            QVERIFY(reader);
            QCOMPARE(reader->schema_version(), 4);
            auto rows = reader->calibration("h200");
            QVERIFY(rows);
            QCOMPARE(rows->size(), size_t{1});
            QCOMPARE(rows->front().kernel, std::string("layernorm"));
            QCOMPARE(rows->front().dtype, std::string());
        }
        auto s = open_ok(path);
        QVERIFY(s);
        QCOMPARE(s->schema_version(), 6);
        QVERIFY(s->add_calibration("h200", {CalibrationRow{"reduction", 2.5e7, 1e-5, 1.1e-5, std::nullopt, {}, "layernorm", 0, "bf16"}}));
        auto rows = s->calibration("h200");
        QVERIFY(rows);
        QCOMPARE(rows->size(), size_t{2});
        QCOMPARE((*rows)[0].dtype, std::string());
        QCOMPARE((*rows)[1].dtype, std::string("bf16"));
        QCOMPARE((*rows)[1].kernel, std::string("layernorm"));
    }

    // v6 gives a calibration point its kernel's exact shape: points kept at v5 read
    // as having none ("" — their kernel's groups only), read as the file is or
    // migrated; new points keep theirs.
    void migration_from_schema_5_keeps_calibration() {
        const QString path = fresh_path();
        {
            auto old = create_session_at_version(path.toStdString(), 5);
            QVERIFY2(old, old ? "" : old.error().message.c_str());
            QCOMPARE(message_of((*old)->add_calibration(
                         "host", {CalibrationRow{"gemm", 2e9, 1e-2, 1.2e-2, std::nullopt, {}, "linear", 1, "f32",
                                                 "2048x768 768x3072 3072 > 2048x3072"}})),
                     "session " + path + " is at schema 5; calibration points need schema 6");
        }
        // What a v5 Tapestry wrote.
        QVERIFY(raw_exec(path, "INSERT INTO calibration (target, kernel_class, size, predicted_seconds, "
                               "measured_seconds, launch_id, created_at, kernel, threads, dtype) VALUES ('host', 'gemm', "
                               "2e9, 1e-2, 1.1e-2, NULL, '2026-11-27T10:00:00Z', 'linear', 1, 'f32')"));
        {
            auto reader = open_ok(path, OpenMode::read_only);
            QVERIFY(reader);
            QCOMPARE(reader->schema_version(), 5);
            auto rows = reader->calibration("host");
            QVERIFY(rows);
            QCOMPARE(rows->size(), size_t{1});
            QCOMPARE(rows->front().dtype, std::string("f32"));
            QCOMPARE(rows->front().shape, std::string());
        }
        auto s = open_ok(path);
        QVERIFY(s);
        QCOMPARE(s->schema_version(), 6);
        QVERIFY(s->add_calibration("host", {CalibrationRow{"gemm", 2e9, 1e-2, 1.2e-2, std::nullopt, {}, "linear", 1, "f32",
                                                           "2048x768 768x3072 3072 > 2048x3072"}}));
        auto rows = s->calibration("host");
        QVERIFY(rows);
        QCOMPARE(rows->size(), size_t{2});
        QCOMPARE((*rows)[0].shape, std::string());
        QCOMPARE((*rows)[1].shape, std::string("2048x768 768x3072 3072 > 2048x3072"));
        QCOMPARE((*rows)[1].dtype, std::string("f32"));
    }

    // The step to v3 is one transaction: a v2 file on which it fails half-way
    // (a table of that name already exists) stays at v2 without the step's first tables.
    void migration_to_schema_3_is_all_or_nothing() {
        const QString path = fresh_path();
        {
            auto old = create_session_at_version(path.toStdString(), 2);
            QVERIFY(old);
            QVERIFY((*old)->create_project("mlp"));
        }
        QVERIFY(raw_exec(path, "CREATE TABLE launches (x)"));
        auto s = Session::open(path.toStdString());
        QVERIFY(!s);
        QVERIFY2(s.error().message.find("migration to schema 3 failed") != std::string::npos,
                 s.error().message.c_str());
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{2});
        QCOMPARE(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('targets', 'plans')"),
                 std::int64_t{0});
        QCOMPARE(raw_int(path, "SELECT count(*) FROM projects"), std::int64_t{1});
    }

    // ---- refused files ------------------------------------------------------------------

    void newer_version_is_refused() {
        const QString path = make_session();
        QVERIFY(!path.isEmpty());
        QVERIFY(raw_exec(path, "PRAGMA user_version = 99"));
        QVERIFY(!QFile::exists(path + "-wal"));
        expect_refused(path, OpenMode::read_write, "newer-version");
        expect_refused(path, OpenMode::read_only, "newer-version");
        auto s = Session::open(path.toStdString());
        QCOMPARE(QString::fromStdString(s.error().message),
                 "session " + path +
                     " was written by a newer Tapestry (schema version 99; this build reads up to 6); it was left "
                     "unchanged");
    }

    void damaged_file_is_refused_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("code");
        QTest::newRow("random bytes") << "random"
                                      << "damaged";
        QTest::newRow("truncated session") << "truncated"
                                           << "damaged";
        QTest::newRow("scribbled pages") << "scribbled"
                                         << "damaged";
        QTest::newRow("text file") << "text"
                                   << "damaged";
        QTest::newRow("another application's database") << "foreign"
                                                        << "invalid";
    }
    void damaged_file_is_refused() {
        QFETCH(QString, kind);
        QFETCH(QString, code);
        QString path = fresh_path();
        if (kind == "random" || kind == "text") {
            QByteArray bytes;
            std::mt19937 rng(42);
            if (kind == "random")
                for (int i = 0; i < 8192; ++i) bytes.append(static_cast<char>(rng() & 0xff));
            else
                bytes = "{\"format\": \"tapestry-project\"}\n";
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(bytes);
        } else if (kind == "foreign") {
            QVERIFY(raw_exec(path, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"));
        } else {
            path = make_session();
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadWrite));
            const qint64 size = f.size();
            QVERIFY(size > 16 * 4096);
            if (kind == "truncated") {
                QVERIFY(f.resize(size / 2));
            } else {
                // Overwrite the middle pages with garbage, keeping the header.
                QVERIFY(f.seek(4 * 4096));
                QByteArray junk(8 * 4096, '\x5a');
                f.write(junk);
            }
        }
        expect_refused(path, OpenMode::read_write, code);
        expect_refused(path, OpenMode::read_only, code);
    }

    void read_only_file_is_refused() {
        const QString path = make_session();
        QVERIFY(!path.isEmpty());
        QVERIFY(QFile::setPermissions(path, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther));
        if (::access(path.toUtf8().constData(), W_OK) == 0) {
            QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
            QSKIP("running as a user who can write a 0444 file (root): a read-only file cannot be made here");
        }
        expect_refused(path, OpenMode::read_write, "read-only");
        // Reading it is fine.
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        QCOMPARE(s->projects()->size(), size_t{1});
        s.reset();
        QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    }

    void missing_file_read_only_is_not_created() {
        const QString path = files_.path("nothing-here.tapestry-session");
        auto s = Session::open(path.toStdString(), OpenMode::read_only);
        QVERIFY(!s);
        QCOMPARE(QString::fromStdString(s.error().code), QString("not-found"));
        QVERIFY(!QFile::exists(path));
    }

    // ---- locking ---------------------------------------------------------------------------

    void second_open_in_same_process_is_locked() {
        const QString path = make_session();
        auto first = open_ok(path);
        QVERIFY(first);
        const QByteArray before = file_hash(path);
        auto second = Session::open(path.toStdString());
        QVERIFY(!second);
        QCOMPARE(QString::fromStdString(second.error().code), QString("locked"));
        QCOMPARE(QString::fromStdString(second.error().message),
                 "session " + path + " is open in another Tapestry window or process");
        QCOMPARE(file_hash(path), before);
        // A reader works beside the writer and sees its commits.
        auto reader = open_ok(path, OpenMode::read_only);
        QVERIFY(reader);
        const ProjectId p = first->projects()->front().id;
        QVERIFY(first->save_version(p, load_example("mlp.tapestry.json"), "autosave"));
        QCOMPARE(reader->projects()->front().version_count, 5);
        // The writer still works after the reader closed (its locks survived).
        reader.reset();
        QVERIFY(first->save_version(p, load_example("mlp.tapestry.json"), "autosave"));
        first.reset();
        auto again = open_ok(path);
        QVERIFY(again);
        QCOMPARE(again->projects()->front().version_count, 6);
    }

    void open_in_another_process_is_locked() {
        const QString cli = qEnvironmentVariable("TAPESTRY_CLI");
        if (cli.isEmpty()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString path = make_session();
        const QString project = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/mlp.tapestry.json";
        auto held = open_ok(path);
        QVERIFY(held);
        QProcess p;
        p.start(cli, {"session", "import", path, project, "--wait", "0"});  // test_hardening: the wait
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 1);
        QCOMPARE(QString::fromUtf8(p.readAllStandardError()).trimmed(),
                 "tapestry: session " + path + " is open in another Tapestry window or process");
        // A read-only open in the other process works beside the writer.
        p.start(cli, {"session", "list", path, "--json"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(p.readAllStandardOutput().contains("\"versions\": 4"));
        held.reset();
        p.start(cli, {"session", "import", path, project});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        auto s = open_ok(path);
        QCOMPARE(s->projects()->size(), size_t{2});
    }

    // ---- deletion and threads ------------------------------------------------------------

    void delete_cascades() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        QVERIFY(s);
        const ProjectId keep = s->create_project("keep").value();
        const ProjectId gone = s->create_project("gone").value();
        const Graph shared = with_values(load_example("mlp.tapestry.json"), 11);
        const Graph own = with_values(load_example("convnet.tapestry.json"), 12);
        QVERIFY(s->save_version(keep, shared, "save"));
        const Placements placed{{"x", {1, 1, true}}};
        const VersionInfo v = s->save_version(gone, own, "save", &placed).value();
        QVERIFY(s->save_version(gone, shared, "save"));
        QVERIFY(s->set_state(gone, "view", "{}"));
        StageRecord r;
        r.version_id = v.id;
        r.pass_name = "p";
        QVERIFY(s->add_stage(r, own));
        const std::int64_t before = *s->value_count();
        QVERIFY(s->delete_project(gone));
        QCOMPARE(s->projects()->size(), size_t{1});
        QCOMPARE(QString::fromStdString(s->versions(gone).error().code), QString("not-found"));
        QCOMPARE(QString::fromStdString(s->delete_project(gone).error().code), QString("not-found"));
        std::int64_t shared_values = 0;
        for (const TensorPtr &t : shared.tensors()) shared_values += t->value != nullptr;
        QVERIFY(before > shared_values);
        QCOMPARE(*s->value_count(), shared_values);  // only the kept project's values remain
        s.reset();
        for (const char *sql :
             {"SELECT count(*) FROM graph_versions WHERE project_id = 2", "SELECT count(*) FROM placements",
              "SELECT count(*) FROM project_state", "SELECT count(*) FROM stages",
              "SELECT count(*) FROM version_values WHERE version_id NOT IN (SELECT id FROM "
              "graph_versions)"})
            QCOMPARE(raw_int(path, sql), std::int64_t{0});
        auto reopened = open_ok(path);
        QCOMPARE(graph_difference(*reopened->load_latest(keep), shared), QString());
    }

    // Deleting a stage or a project removes the plans, launches, measured steps,
    // calibration and search rows under it, and nothing of another project.
    void v3_rows_cascade_with_their_version() {
        const QString path = fresh_path();
        Planned gone, keep;
        PlanId stage_plan = 0;
        {
            auto s = open_ok(path);
            QVERIFY(s);
            keep = planned_project(*s, "keep");
            gone = planned_project(*s, "gone");
            for (const Planned *a : {&keep, &gone}) {
                const PlanId whole = s->save_plan(plan_on(a->version.id, std::nullopt), kPlanJson)->id;
                const PlanId staged = s->save_plan(plan_on(a->version.id, a->stage.id), kPlanJson)->id;
                if (a == &gone) stage_plan = staged;
                for (PlanId plan : {whole, staged}) {
                    const LaunchId launch = s->record_launch(launch_of(plan), {{0, "0:0", 0, 1, 1}})->id;
                    QVERIFY(s->add_calibration("host", {{"gemm", 1, 1, 1, launch, ""}}));
                }
            }
            QVERIFY(s->add_calibration("host", {{"copy", 1, 1, 1, std::nullopt, ""}}));  // a probe: no launch
            QVERIFY(s->save_target("mine", "user", "{}"));
        }
        // A search run and a candidate planted by hand (test_store_search covers the API).
        const std::string runs =
            "PRAGMA foreign_keys = ON; INSERT INTO search_runs (version_id, target, settings_json, seed, started_at, "
            "status) VALUES (" +
            std::to_string(gone.version.id) +
            ", 'h100', '{}', 7, 'now', 'running'); INSERT INTO search_candidates (run_id, generation, "
            "objectives_json, on_front) VALUES (last_insert_rowid(), 0, '[1, 2]', 1);";
        QVERIFY(raw_exec(path, runs.c_str()));
        auto count = [&](const char *sql) { return raw_int(path, sql); };
        QCOMPARE(count("SELECT count(*) FROM plans"), std::int64_t{4});
        QCOMPARE(count("SELECT count(*) FROM launches"), std::int64_t{4});

        // A stage goes: its plan with its launch, steps and calibration go too.
        const std::string drop_stage =
            "PRAGMA foreign_keys = ON; DELETE FROM stages WHERE id = " + std::to_string(gone.stage.id);
        QVERIFY(raw_exec(path, drop_stage.c_str()));
        QCOMPARE(count("SELECT count(*) FROM plans"), std::int64_t{3});
        QCOMPARE(count(("SELECT count(*) FROM launches WHERE plan_id = " + std::to_string(stage_plan)).c_str()),
                 std::int64_t{0});
        QCOMPARE(count("SELECT count(*) FROM step_measurements"), std::int64_t{3});
        QCOMPARE(count("SELECT count(*) FROM calibration"), std::int64_t{4});

        {
            auto s = open_ok(path);
            QVERIFY(s);
            QVERIFY(s->delete_project(gone.project));
            QCOMPARE(s->plans(keep.project)->size(), size_t{2});
            QCOMPARE(code_of(s->plans(gone.project)), QString("not-found"));
        }
        QCOMPARE(count("SELECT count(*) FROM plans"), std::int64_t{2});
        QCOMPARE(count("SELECT count(*) FROM launches"), std::int64_t{2});
        QCOMPARE(count("SELECT count(*) FROM step_measurements"), std::int64_t{2});
        QCOMPARE(count("SELECT count(*) FROM calibration"), std::int64_t{3});  // keep's two and the probe
        QCOMPARE(count("SELECT count(*) FROM calibration WHERE launch_id IS NULL"), std::int64_t{1});
        QCOMPARE(count("SELECT count(*) FROM search_runs"), std::int64_t{0});
        QCOMPARE(count("SELECT count(*) FROM search_candidates"), std::int64_t{0});
        QCOMPARE(count("SELECT count(*) FROM targets"), std::int64_t{1});  // targets belong to the session
        QCOMPARE(count("SELECT count(*) FROM pragma_foreign_key_check"), std::int64_t{0});
    }

    void saves_from_a_worker_while_reading() {
        auto s = open_ok(fresh_path());
        QVERIFY(s);
        const ProjectId p = s->create_project("mlp").value();
        const Graph g = with_values(load_example("mlp.tapestry.json"), 2);
        std::atomic<int> failures{0};
        std::thread worker([&] {
            for (int i = 0; i < 20; ++i)
                if (!s->save_version(p, g, "autosave")) ++failures;
        });
        for (int i = 0; i < 200; ++i) {
            if (!s->set_state(kSessionScope, "tick", std::to_string(i))) ++failures;
            if (!s->state(kSessionScope, "tick")) ++failures;
            if (!s->projects()) ++failures;
        }
        worker.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(s->versions(p)->size(), size_t{20});
        QCOMPARE(graph_difference(*s->load_latest(p), g), QString());
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "test_store.moc"
