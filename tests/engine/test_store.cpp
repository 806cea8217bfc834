// The SQLite session store (store/session.h, docs/sessions.md): round trips of
// every example, version numbering, value deduplication, placements and state,
// migration from a genuine schema-1 file, and the files it must refuse — damaged,
// newer, read-only, locked — which must stay byte-identical.
#include <sqlite3.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "io/project_file.h"
#include "store/content_hash.h"
#include "store/schema.h"
#include "store/session.h"

using namespace tapestry;
using namespace tapestry::store;
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

// Runs SQL on a file with the plain SQLite API, outside the store.
bool raw_exec(const QString &path, const char *sql) {
    sqlite3 *db = nullptr;
    bool ok = sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) ==
              SQLITE_OK;
    ok = ok && sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

std::int64_t raw_int(const QString &path, const char *sql) {
    sqlite3 *db = nullptr;
    std::int64_t v = -1;
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt *s = nullptr;
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return v;
}

}  // namespace

class TestStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int counter_ = 0;

    QString fresh_path() { return dir_.filePath(QString("s%1.tapestry-session").arg(++counter_)); }

    std::unique_ptr<Session> open_ok(const QString &path, OpenMode mode = OpenMode::read_write) {
        auto s = Session::open(path.toStdString(), mode);
        if (!s) qWarning("%s", s.error().message.c_str());
        return s ? std::move(s).value() : nullptr;
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
        QVERIFY(dir_.isValid());
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
        // A read-only session writes nothing.
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
        QCOMPARE(s->schema_version(), 2);
        QCOMPARE(raw_int(path, "PRAGMA user_version"), std::int64_t{2});
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
        QCOMPARE(current_schema_version(), 2);
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
        QVERIFY(s.error().message.find("newer Tapestry") != std::string::npos);
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
        const QString path = dir_.filePath("nothing-here.tapestry-session");
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
