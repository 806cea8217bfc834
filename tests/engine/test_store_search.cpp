// Search runs in the session store (store/session.h, docs/sessions.md "Search
// runs"): a run and its candidates round-trip with every field (the choices that
// rebuild a plan, the figures, the front, a seed past 2^63); a run whose process
// was killed reads back "running" with what it had committed; a row whose JSON
// does not read is refused with the run and the row named; bad writes are refused
// with the message a user sees; runs go with their graph version and project.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <limits>

#include "search/session_runs.h"
#include "store/session.h"
#include "store_support.h"
#include "test_projects.h"

using namespace tapestry;
using namespace tapestry::store;
using namespace tapestry::test;

namespace {

// Candidate `i` of generation `generation`: distinct choices and figures.
SearchCandidateRecord candidate(int i, int generation) {
    SearchCandidateRecord c;
    c.generation = generation;
    c.index = i;
    c.mutator = i == 0 ? "seed" : "reshard";
    c.dim = {i % 2 == 0 ? 0 : -1, 1, -1};
    c.parts = {i % 2 == 0 ? 4 : 1, 2, 1};
    if (i % 2 == 1) {  // a product split: a second split of op 0's parts
        c.dim2 = {1, -1, -1};
        c.parts2 = {2, 1, 1};
    }
    c.rule = i % 3 == 2 ? "pipeline" : "shard";
    c.stages = c.rule == "pipeline" ? 2 : 0;
    if (i % 4 >= 2) {  // fused, every other one with ops kept out of the fusion
        c.fused = true;
        if (i % 4 == 3) c.unfused = {0, 2};
    }
    if (i % 3 == 1) c.at = {-1, 2, 0};  // device maps: fc2 from device 2, the third op from device 0
    if (c.rule == "pipeline" && i % 2 == 0) c.cuts = {2};  // stage 2 begins at the third op
    if (i % 5 == 4) c.substitution = "expand";  // the candidate starts from the expanded graph
    c.key = "k" + std::to_string(i);
    c.description = "fc1:0=4, fc2:1=2 · " + c.rule;  // a comma and a non-ASCII dot survive
    c.makespan_seconds = 1e-3 / (i + 1);
    c.peak_bytes = 1.5e9 + i;
    c.devices = 1 + i % 4;
    c.communication_bytes = 1024.0 * i;
    c.energy_joules = 0.25 * i;
    c.violation = i == 3 ? 0.25 : 0;
    c.violated = i == 3 ? "peak 100 GiB > cap 80 GiB" : "";
    c.objectives = {c.makespan_seconds, c.peak_bytes, double(c.devices)};
    return c;
}

bool same(const SearchCandidateRecord &a, const SearchCandidateRecord &b) {
    return a.generation == b.generation && a.index == b.index && a.mutator == b.mutator && a.dim == b.dim &&
           a.dim2 == b.dim2 && a.parts2 == b.parts2 && a.parts == b.parts && a.rule == b.rule && a.stages == b.stages &&
           a.fused == b.fused && a.unfused == b.unfused && a.at == b.at && a.cuts == b.cuts &&
           a.substitution == b.substitution &&
           a.key == b.key && a.description == b.description && a.objectives == b.objectives &&
           a.makespan_seconds == b.makespan_seconds && a.peak_bytes == b.peak_bytes && a.devices == b.devices &&
           a.communication_bytes == b.communication_bytes && a.energy_joules == b.energy_joules &&
           a.violation == b.violation && a.violated == b.violated;
}

SearchRunRecord run_of(VersionId version, std::uint64_t seed = 7) {
    SearchRunRecord r;
    r.version_id = version;
    r.target = "h100-sxm";
    r.settings_json = "{\"devices\": 4, \"objectives\": [\"time\", \"memory\", \"devices\"]}";
    r.seed = seed;
    return r;
}

}  // namespace

class TestStoreSearch : public QObject {
    Q_OBJECT

    SessionFiles files_;

    QString fresh_path() { return files_.fresh(); }
    static std::unique_ptr<Session> open_ok(const QString &path, OpenMode mode = OpenMode::read_write) {
        return SessionFiles::open(path, mode);
    }

    // A project named `name` with one saved version of a small MLP.
    static std::pair<ProjectId, VersionId> project_with_version(Session &s, const std::string &name) {
        const ProjectId p = s.create_project(name).value();
        return {p, s.save_version(p, parse(mlp_project_text(8)), "save")->id};
    }

    // A session whose one run holds candidates 0, 1, 2 (row ids 1, 2, 3), left running.
    QString session_with_run() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        if (!s) return {};
        auto run = s->start_search_run(run_of(project_with_version(*s, "mlp").second));
        if (!run || !s->append_search_candidates(run->id, {candidate(0, 0), candidate(1, 0), candidate(2, 1)}))
            return {};
        return path;
    }

private slots:
    void initTestCase() { QVERIFY(files_.valid()); }

    void run_round_trips() {
        const QString path = fresh_path();
        SearchRunId id = 0;
        VersionId version = 0, later = 0;
        ProjectId project = 0;
        std::vector<SearchCandidateRecord> written;
        const std::uint64_t seed = std::numeric_limits<std::uint64_t>::max() - 6;  // past INT64_MAX
        {
            auto s = open_ok(path);
            QVERIFY(s);
            std::tie(project, version) = project_with_version(*s, "mlp");
            auto run = s->start_search_run(run_of(version, seed));
            QVERIFY2(run, run ? "" : run.error().message.c_str());
            id = run->id;
            QCOMPARE(QString::fromStdString(run->status), QString("running"));
            QVERIFY(!run->started_at.empty());
            QVERIFY(run->finished_at.empty());
            for (int i = 0; i < 5; ++i) written.push_back(candidate(i, i < 3 ? 0 : 1));
            QVERIFY(s->append_search_candidates(id, {written.begin(), written.begin() + 3}));
            QVERIFY(s->mark_search_front(id, {"k0", "k2"}));
            QVERIFY(s->append_search_candidates(id, {written.begin() + 3, written.end()}));
            // The front moved: k2 left it, k4 joined (an unknown key is ignored).
            QVERIFY(s->mark_search_front(id, {"k0", "k4", "no such key"}));
            auto done = s->finish_search_run(id, "stopped");
            QVERIFY2(done, done ? "" : done.error().message.c_str());
            QCOMPARE(QString::fromStdString(done->status), QString("stopped"));
            QVERIFY(done->finished_at >= done->started_at);
            QCOMPARE(done->candidates, 5);
            QCOMPARE(done->on_front, 2);
            // A second run, on a later version of the same project.
            later = s->save_version(project, parse(mlp_project_text(16)), "autosave")->id;
            QVERIFY(s->start_search_run(run_of(later)));
        }
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        auto all = s->search_runs(project);
        QVERIFY(all);
        QCOMPARE(all->size(), size_t{2});
        QCOMPARE((*all)[0].id, id);
        QCOMPARE((*all)[1].version_id, later);
        QCOMPARE(QString::fromStdString((*all)[1].status), QString("running"));
        auto of_version = s->search_runs(project, version);
        QVERIFY(of_version);
        QCOMPARE(of_version->size(), size_t{1});
        QCOMPARE((*of_version)[0].seed, seed);
        QCOMPARE((*of_version)[0].candidates, 5);

        auto loaded = s->load_search_run(id);
        QVERIFY2(loaded, loaded ? "" : loaded.error().message.c_str());
        QCOMPARE(loaded->run.target, std::string("h100-sxm"));
        QCOMPARE(loaded->run.settings_json, run_of(version).settings_json);
        QCOMPARE(loaded->run.seed, seed);
        QCOMPARE(loaded->run.status, std::string("stopped"));
        QCOMPARE(loaded->candidates.size(), written.size());
        for (size_t i = 0; i < written.size(); ++i) {
            QVERIFY2(same(loaded->candidates[i], written[i]), written[i].key.c_str());
            QCOMPARE(loaded->candidates[i].on_front, i == 0 || i == 4);
            QVERIFY(loaded->candidates[i].row > 0);
        }
    }

    // A search killed mid-run (SIGKILL: no close, no finish) leaves its run
    // "running" with the candidates and front it had committed.
    void run_left_running_by_a_crash_reads_back_as_such() {
        const QString path = fresh_path();
        ProjectId project = 0;
        {
            auto s = open_ok(path);
            QVERIFY(s);
            project = project_with_version(*s, "mlp").first;
        }
        const pid_t child = fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            auto s = Session::open(path.toStdString());
            if (!s) _exit(2);
            const VersionId version = (*s)->projects()->front().latest_version_id;
            auto run = (*s)->start_search_run(run_of(version));
            if (!run || !(*s)->append_search_candidates(run->id, {candidate(0, 0), candidate(1, 0)}) ||
                !(*s)->mark_search_front(run->id, {"k1"}))
                _exit(3);
            raise(SIGKILL);
            _exit(4);
        }
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child died before its kill");

        auto s = open_ok(path);
        QVERIFY(s);
        auto runs = s->search_runs(project);
        QVERIFY(runs);
        QCOMPARE(runs->size(), size_t{1});
        const SearchRunRecord &r = runs->front();
        QCOMPARE(QString::fromStdString(r.status), QString("running"));
        QVERIFY(r.finished_at.empty());
        QCOMPARE(r.candidates, 2);
        QCOMPARE(r.on_front, 1);
        auto loaded = s->load_search_run(r.id);
        QVERIFY(loaded);
        QVERIFY(same(loaded->candidates[1], candidate(1, 0)));
        QVERIFY(loaded->candidates[1].on_front);
    }

    // ---- errors: each bad row and bad write, with the words a user reads -------------

    void malformed_row_names_the_run_and_row_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("why");
        QTest::newRow("objectives not JSON")
            << "UPDATE search_candidates SET objectives_json = '{\"objectives\": [1,' WHERE id = 2"
            << "objectives_json is not valid JSON";
        QTest::newRow("choices not JSON") << "UPDATE search_candidates SET plan_json = 'key=k1' WHERE id = 2"
                                          << "plan_json is not valid JSON";
        QTest::newRow("choices missing") << "UPDATE search_candidates SET plan_json = NULL WHERE id = 2"
                                         << "plan_json is empty (the candidate's choices)";
        QTest::newRow("no split dims")
            << "UPDATE search_candidates SET plan_json = json_remove(plan_json, '$.candidate.dim') WHERE id = 2"
            << "plan_json.candidate has no 'dim'";
        QTest::newRow("figure of the wrong type")
            << "UPDATE search_candidates SET objectives_json = json_set(objectives_json, '$.figures.peak_bytes', "
               "'a lot') WHERE id = 2"
            << "objectives_json.figures: 'peak_bytes' has the wrong type (string)";
        QTest::newRow("second split of other ops")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.dim2', json('[1]')) "
               "WHERE id = 2"
            << "plan_json.candidate: dim2 and parts2 do not match dim";
        QTest::newRow("dims and parts differ")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.parts', json('[4]')) "
               "WHERE id = 2"
            << "plan_json.candidate: dim and parts differ in length";
        QTest::newRow("fusion of the wrong type")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.fused', 'yes') WHERE id = 2"
            << "plan_json.candidate: 'fused' has the wrong type (string)";
        QTest::newRow("an unfused op that is not one")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.fused', json('true'), "
               "'$.candidate.unfused', json('[7]')) WHERE id = 2"
            << "plan_json.candidate: unfused names operation 7 of 3";
        QTest::newRow("a map of other ops")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.at', json('[1, 2]')) WHERE id = 2"
            << "plan_json.candidate: at maps 2 operations of 3";
        QTest::newRow("a map to no device")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.at', json('[-1, -2, 0]')) "
               "WHERE id = 2"
            << "plan_json.candidate: at names device -2";
        QTest::newRow("cuts of another rule")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.cuts', json('[1]')) WHERE id = 2"
            << "plan_json.candidate: 1 cuts for rule 'shard' of 0 stages";
        QTest::newRow("cuts out of order")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.rule', 'pipeline', "
               "'$.candidate.stages', 3, '$.candidate.cuts', json('[2, 1]')) WHERE id = 2"
            << "plan_json.candidate: cuts names operation 1 of 3 (ascending, from 1)";
        QTest::newRow("an unknown substitution")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.substitution', 'inline') WHERE id = 2"
            << "plan_json.candidate: substitution 'inline' (known: expand, fuse)";
        QTest::newRow("a map that is not a list")
            << "UPDATE search_candidates SET plan_json = json_set(plan_json, '$.candidate.at', 'everywhere') WHERE id = 2"
            << "plan_json.candidate: 'at' has the wrong type (string)";
    }

    void malformed_row_names_the_run_and_row() {
        QFETCH(QString, sql);
        QFETCH(QString, why);
        const QString path = session_with_run();
        QVERIFY(!path.isEmpty());
        QVERIFY(raw_exec(path, sql.toUtf8().constData()));
        auto s = open_ok(path);
        QVERIFY(s);
        auto loaded = s->load_search_run(1);
        QCOMPARE(code_of(loaded), QString("damaged"));
        QCOMPARE(message_of(loaded), "session " + path + ": search run 1, candidate row 2: " + why);
        // The listing still reads (it does not parse the rows).
        QCOMPARE(s->search_runs(1)->front().candidates, 3);
    }

    // A row written before energy was a figure has no energy_joules: it reads as 0.
    void row_without_energy_reads_as_zero() {
        const QString path = session_with_run();
        QVERIFY(!path.isEmpty());
        QVERIFY(raw_exec(path, "UPDATE search_candidates SET objectives_json = "
                               "json_remove(objectives_json, '$.figures.energy_joules') WHERE id = 2"));
        auto s = open_ok(path);
        QVERIFY(s);
        auto loaded = s->load_search_run(1);
        QVERIFY2(loaded, loaded ? "" : loaded.error().message.c_str());
        QCOMPARE(loaded->candidates[1].energy_joules, 0.0);
        QCOMPARE(loaded->candidates[2].energy_joules, candidate(2, 1).energy_joules);
    }

    void bad_write_is_refused_data() {
        QTest::addColumn<int>("what");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("settings not JSON") << 0 << "invalid"
                                           << "the settings of a search run on h100-sxm are not valid JSON";
        QTest::newRow("no target") << 1 << "invalid"
                                   << "a search run needs a target name";
        QTest::newRow("unknown version") << 2 << "not-found"
                                         << "session %1 has no graph version with id 99";
        QTest::newRow("unknown status") << 3 << "invalid"
                                        << "search status 'done' is not one of finished, stopped, failed";
        QTest::newRow("finished twice") << 4 << "invalid"
                                        << "search run 1 is already finished";
        QTest::newRow("appended after the finish")
            << 5 << "invalid"
            << "search run 1 is finished; candidates are added to a running search";
        QTest::newRow("dims and parts differ") << 6 << "invalid"
                                               << "a candidate of search run 1 'k7' has 3 split dims but 2 part counts";
        QTest::newRow("figure not finite")
            << 7 << "invalid"
            << "a candidate of search run 1 'k7' has a figure that is not a finite number";
        QTest::newRow("unknown run") << 8 << "not-found"
                                     << "session %1 has no search run with id 42";
        QTest::newRow("no key") << 9 << "invalid"
                                << "a candidate of search run 1 needs its key";
        QTest::newRow("second split of other ops")
            << 10 << "invalid"
            << "a candidate of search run 1 'k7' has a second split of 2 dims and 2 part counts for 3 operations";
        QTest::newRow("ops kept out of no fusion")
            << 11 << "invalid" << "a candidate of search run 1 'k7' keeps operations out of a fusion it does not have";
        QTest::newRow("an op kept out twice")
            << 12 << "invalid"
            << "a candidate of search run 1 'k7' keeps an operation out of fusion that is not one of its 3 (or not in "
               "ascending order)";
        QTest::newRow("a map of other ops") << 13 << "invalid" << "a candidate of search run 1 'k7' maps 2 operations of 3";
        QTest::newRow("a map to no device") << 14 << "invalid"
                                            << "a candidate of search run 1 'k7' maps an operation to device -3";
        QTest::newRow("cuts of another rule") << 15 << "invalid"
                                              << "a candidate of search run 1 'k7' has 1 pipeline cuts for the rule 'shard'";
        QTest::newRow("cuts out of order")
            << 16 << "invalid"
            << "a candidate of search run 1 'k7' cuts its pipeline at operation 2 of 3 (cuts ascend from operation 1)";
        QTest::newRow("an unknown substitution")
            << 17 << "invalid"
            << "a candidate of search run 1 'k7' starts from substitution 'inline' (known: expand, fuse)";
    }

    void bad_write_is_refused() {
        QFETCH(int, what);
        QFETCH(QString, code);
        QFETCH(QString, message);
        const QString path = session_with_run();
        QVERIFY(!path.isEmpty());
        auto s = open_ok(path);
        QVERIFY(s);
        const VersionId version = s->projects()->front().latest_version_id;
        SearchRunRecord run = run_of(version);
        SearchCandidateRecord bad = candidate(7, 2);
        Expected<Done, StoreError> status = Done{};
        Expected<SearchRunRecord, StoreError> record = run;
        switch (what) {
            case 0: run.settings_json = "{devices: 4}"; break;
            case 1: run.target.clear(); break;
            case 2: run.version_id = 99; break;
            case 3: record = s->finish_search_run(1, "done"); break;
            case 4:
                QVERIFY(s->finish_search_run(1, "finished"));
                record = s->finish_search_run(1, "stopped");
                break;
            case 5:
                QVERIFY(s->finish_search_run(1, "finished"));
                status = s->append_search_candidates(1, {bad});
                break;
            case 6: bad.parts.pop_back(); break;
            case 7: bad.peak_bytes = std::numeric_limits<double>::infinity(); break;
            case 8: status = s->append_search_candidates(42, {bad}); break;
            case 9: bad.key.clear(); break;
            case 10:
                bad.dim2.pop_back();
                bad.parts2.pop_back();
                break;
            case 11:
                bad.fused = false;
                bad.unfused = {1};
                break;
            case 12:
                bad.fused = true;
                bad.unfused = {1, 1};
                break;
            case 13: bad.at = {0, 1}; break;
            case 14: bad.at = {-1, -3, 0}; break;
            case 15: bad.cuts = {1}; break;
            case 16:
                bad.rule = "pipeline";
                bad.stages = 3;
                bad.cuts = {2, 2};
                break;
            case 17: bad.substitution = "inline"; break;
        }
        if (what <= 2) record = s->start_search_run(run);
        if (what == 6 || what == 7 || what >= 9) status = s->append_search_candidates(1, {candidate(8, 2), bad});
        const QString got_code = !status ? code_of(status) : code_of(record);
        const QString got_message = !status ? message_of(status) : message_of(record);
        QCOMPARE(got_code, code);
        QCOMPARE(got_message, message.contains("%1") ? message.arg(path) : message);
        // A refused batch stores nothing of itself.
        QCOMPARE(s->load_search_run(1)->candidates.size(), size_t{3});
    }

    void read_only_session_refuses_search_writes() {
        const QString path = session_with_run();
        QVERIFY(!path.isEmpty());
        auto s = open_ok(path, OpenMode::read_only);
        QVERIFY(s);
        QCOMPARE(code_of(s->start_search_run(run_of(1))), QString("read-only"));
        QCOMPARE(code_of(s->append_search_candidates(1, {candidate(5, 0)})), QString("read-only"));
        QCOMPARE(code_of(s->mark_search_front(1, {"k0"})), QString("read-only"));
        QCOMPARE(code_of(s->finish_search_run(1, "failed")), QString("read-only"));
        QCOMPARE(s->load_search_run(1)->candidates.size(), size_t{3});
    }

    // A run goes with the graph version it searched (and so with its project); the
    // runs of other versions and projects stay.
    void runs_cascade_with_their_version() {
        const QString path = fresh_path();
        VersionId first = 0, second = 0;
        ProjectId gone = 0, keep = 0;
        {
            auto s = open_ok(path);
            QVERIFY(s);
            std::tie(gone, first) = project_with_version(*s, "gone");
            second = s->save_version(gone, parse(mlp_project_text(16)), "save")->id;
            keep = project_with_version(*s, "keep").first;
            const VersionId kept = s->projects()->back().latest_version_id;
            for (VersionId v : {first, second, kept}) {
                auto run = s->start_search_run(run_of(v));
                QVERIFY(run);
                QVERIFY(s->append_search_candidates(run->id, {candidate(0, 0), candidate(1, 0)}));
            }
        }
        auto count = [&](const char *sql) { return raw_int(path, sql); };
        QCOMPARE(count("SELECT count(*) FROM search_candidates"), std::int64_t{6});
        const std::string drop =
            "PRAGMA foreign_keys = ON; DELETE FROM graph_versions WHERE id = " + std::to_string(first);
        QVERIFY(raw_exec(path, drop.c_str()));
        QCOMPARE(count("SELECT count(*) FROM search_runs"), std::int64_t{2});
        QCOMPARE(count("SELECT count(*) FROM search_candidates"), std::int64_t{4});
        {
            auto s = open_ok(path);
            QVERIFY(s);
            QCOMPARE(s->search_runs(gone)->size(), size_t{1});
            QVERIFY(s->delete_project(gone));
            QCOMPARE(s->search_runs(keep)->size(), size_t{1});
            QCOMPARE(code_of(s->search_runs(gone)), QString("not-found"));
        }
        QCOMPARE(count("SELECT count(*) FROM search_runs"), std::int64_t{1});
        QCOMPARE(count("SELECT count(*) FROM search_candidates"), std::int64_t{2});
        QCOMPARE(count("SELECT count(*) FROM pragma_foreign_key_check"), std::int64_t{0});
    }

    // The settings a run keeps read back as written, and as older builds wrote
    // them (Qt's JSON, fields missing, the evaluation budget a double); a field of
    // the wrong kind reads as its default; what cannot be settings is refused.
    void settings_round_trip_and_read_old_forms() {
        search::RunSettings r;
        r.devices = 64;
        r.nodes = 8;
        r.objectives = {search::Objective::time, search::Objective::communication};
        r.constraints.memory_cap = 80.0 * (1 << 30);
        r.constraints.max_time = 5e-3;
        r.options.budget_seconds = 12.5;
        r.options.max_evaluations = 4000;
        r.options.population = 32;
        r.options.stall_generations = 0;
        r.fusion = r.cuts = true;
        auto back = search::parse_settings(search::settings_json(r));
        QVERIFY2(back, back ? "" : back.error().c_str());
        QCOMPARE(back->devices, 64);
        QCOMPARE(back->nodes, 8);
        QVERIFY(back->objectives == r.objectives);
        QCOMPARE(back->constraints.memory_cap, r.constraints.memory_cap);
        QCOMPARE(back->constraints.max_time, 5e-3);
        QCOMPARE(back->options.budget_seconds, 12.5);
        QCOMPARE(back->options.max_evaluations, 4000L);
        QCOMPARE(back->options.population, 32);
        QCOMPARE(back->options.stall_generations, 0);
        QVERIFY(back->fusion && back->cuts && !back->maps && !back->substitute);
        QCOMPARE(back->warm_start_run, std::int64_t{0});
        QVERIFY(search::settings_json(r).find("warm_start_run") == std::string::npos);  // only when there is one
        r.warm_start_run = 7;  // started from run 7's front
        QVERIFY(search::settings_json(r).find("\"warm_start_run\":7") != std::string::npos);
        QCOMPARE(search::parse_settings(search::settings_json(r))->warm_start_run, std::int64_t{7});

        // As the studio wrote it before (QJsonDocument::Compact, every number a double).
        auto qt = search::parse_settings(
            R"({"budget_seconds":30,"cuts":false,"devices":8,"fusion":true,"maps":true,"max_evaluations":400,)"
            R"("max_time_seconds":0,"memory_cap_bytes":0,"nodes":0,"objectives":["time","memory","devices"],)"
            R"("population":24,"stall_generations":12,"substitute":false})");
        QVERIFY2(qt, qt ? "" : qt.error().c_str());
        QCOMPARE(qt->devices, 8);
        QCOMPARE(qt->options.max_evaluations, 400L);
        QCOMPARE(qt->objectives.size(), size_t{3});
        QVERIFY(qt->fusion && qt->maps && !qt->cuts);
        auto old = search::parse_settings(R"({"devices": 4, "nodes": 0, "objectives": ["time"], "max_evaluations": 2.0e3})");
        QVERIFY(old);
        QCOMPARE(old->options.max_evaluations, 2000L);
        QCOMPARE(old->options.population, search::SearchOptions{}.population);
        QVERIFY(!old->fusion && !old->maps && !old->cuts && !old->substitute);
        auto odd = search::parse_settings(R"({"devices": 4, "objectives": ["time"], "population": "many", "fusion": 1})");
        QVERIFY(odd);
        QCOMPARE(odd->options.population, search::SearchOptions{}.population);
        QVERIFY(!odd->fusion);

        QCOMPARE(QString::fromStdString(search::parse_settings("{devices").error()), QString("settings: not JSON"));
        QCOMPARE(QString::fromStdString(search::parse_settings("[4]").error()), QString("settings: not a JSON object"));
        QCOMPARE(QString::fromStdString(search::parse_settings(R"({"objectives": ["time"]})").error()),
                 QString("settings: 'devices' is not a device count"));
        QVERIFY(QString::fromStdString(search::parse_settings(R"({"devices": 2, "objectives": ["speed"]})").error())
                    .startsWith("settings: objectives: "));
    }

    // A row's choices make the candidate again (its key is the row's), and its
    // figures read back; an unknown rule is refused by name.
    void candidate_rows_make_their_candidates() {
        for (int i = 0; i < 10; ++i) {
            SearchCandidateRecord r = candidate(i, 0);
            auto c = search::candidate_of(r);
            QVERIFY2(c, c ? "" : c.error().c_str());
            QVERIFY(c->dim == r.dim && c->parts == r.parts && c->dim2 == r.dim2 && c->parts2 == r.parts2);
            QCOMPARE(QString::fromLatin1(search::rule_name(c->rule)), QString::fromStdString(r.rule));
            QCOMPARE(c->stages, r.stages);
            QCOMPARE(c->fused, r.fused);
            QVERIFY(c->unfused == r.unfused && c->at == r.at && c->cuts == r.cuts);
            QCOMPARE(c->substitution, r.substitution);
            const search::Figures f = search::figures_of(r);
            QCOMPARE(f.makespan, r.makespan_seconds);
            QCOMPARE(f.peak, r.peak_bytes);
            QCOMPARE(f.devices, r.devices);
            QCOMPARE(f.comm_bytes, r.communication_bytes);
            QCOMPARE(f.energy, r.energy_joules);
            QCOMPARE(f.violated, r.violated);
        }
        SearchCandidateRecord bad = candidate(0, 0);
        bad.rule = "scatter";
        auto refused = search::candidate_of(bad);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error()).contains("scatter"), refused.error().c_str());
    }

    // The keeper writes a run as the search goes: candidates per flush, the front
    // when it moved, the outcome; after the store refuses a write it keeps nothing
    // more, says why, and what it wrote before stays.
    void run_keeper_keeps_a_run_and_stops_at_the_first_failure() {
        const QString path = fresh_path();
        auto s = open_ok(path);
        QVERIFY(s);
        const VersionId version = project_with_version(*s, "mlp").second;
        search::RunSettings settings;
        settings.devices = 4;
        settings.objectives = {search::Objective::time, search::Objective::memory};
        search::RunKeeper keeper(*s, version, "host", settings, 42);
        QVERIFY2(keeper.error().empty(), keeper.error().c_str());
        QVERIFY(keeper.run() > 0);
        keeper.add(candidate(0, 0));
        keeper.add(candidate(1, 0));
        keeper.flush({"k0"}, true);
        keeper.add(candidate(2, 1));
        keeper.flush({"k0"}, false);
        keeper.finish({"k2"}, "finished");
        QVERIFY2(keeper.error().empty(), keeper.error().c_str());
        auto run = s->load_search_run(keeper.run());
        QVERIFY2(run, run ? "" : run.error().message.c_str());
        QCOMPARE(run->run.status, std::string("finished"));
        QCOMPARE(run->run.seed, std::uint64_t{42});
        QCOMPARE(run->run.target, std::string("host"));
        QCOMPARE(search::parse_settings(run->run.settings_json)->devices, 4);
        QCOMPARE(run->candidates.size(), size_t{3});
        QVERIFY(!run->candidates[0].on_front && run->candidates[2].on_front);

        // A figure that is not a number: the store refuses the batch, the keeper stops.
        search::RunKeeper second(*s, version, "host", settings, 1);
        second.add(candidate(0, 0));
        second.flush({}, false);
        SearchCandidateRecord broken = candidate(1, 1);
        broken.makespan_seconds = std::numeric_limits<double>::quiet_NaN();
        second.add(broken);
        second.flush({"k1"}, true);
        QVERIFY2(QString::fromStdString(second.error()).contains("not a finite number"), second.error().c_str());
        const std::string first_error = second.error();
        second.add(candidate(3, 2));
        second.finish({"k3"}, "finished");
        QCOMPARE(second.error(), first_error);  // the first failure is the one said
        auto kept = s->load_search_run(second.run());
        QVERIFY(kept);
        QCOMPARE(kept->candidates.size(), size_t{1});
        QCOMPARE(kept->run.status, std::string("running"));  // never finished: the store says so
    }

    // The CLI's searches of a file hang off "<graph> (searches)": one version while
    // the file is unchanged, a new one when it changed.
    void searches_of_a_file_share_a_version_while_it_is_unchanged() {
        auto s = open_ok(fresh_path());
        QVERIFY(s);
        const Graph mlp = parse(mlp_project_text(8));
        auto first = search::searched_version(*s, mlp);
        QVERIFY2(first, first ? "" : first.error().c_str());
        auto again = search::searched_version(*s, mlp);
        QVERIFY(again);
        QCOMPARE(again->project, first->project);
        QCOMPARE(again->version, first->version);
        QCOMPARE(QString::fromStdString(s->project(first->project)->name),
                 QString::fromStdString(mlp.name + " (searches)"));
        auto changed = search::searched_version(*s, parse(mlp_project_text(16)));
        QVERIFY(changed);
        QCOMPARE(changed->project, first->project);
        QVERIFY(changed->version != first->version);
        QCOMPARE(s->projects()->size(), size_t{1});
    }
};

QTEST_GUILESS_MAIN(TestStoreSearch)
#include "test_store_search.moc"
