// The Optimize dock driven through the real window (issue 16, deliverable 5): the
// MLP searched on 4 × h100-sxm under an evaluation budget — the chart fills with
// points, a front and its step line, the hand baselines and the memory cap; the
// progress line gives plans per second, the front and the best of each objective;
// a front point clicked on the chart opens its plan in the Plan dock (its
// figures the point's, certified, the canvas coloured by device); two points
// compare side by side; the front exports as CSV and JSON, the chart as PNG and
// SVG; the run is kept in the session and shown again when the session is
// reopened, and its points still open their plans. Ctrl+Alt+O starts a search;
// while it runs the chart gets 10 to 13 updates a second; Stop ends an unbounded
// one within a second or two. The chart alone: many off-front points are
// thinned, zoom and reset, hit tests and tooltips. Refused settings say why.
//
// With TAPESTRY_SCREENSHOT_DIR set it saves docs/screenshots/studio-optimize.png
// (the GPT-2 block on 8 × h100-sxm).
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtTest/QtTest>

#include "app/studio/editing_controller.h"
#include "app/studio/main_window.h"
#include "app/studio/optimize_controller.h"
#include "app/studio/plan_controller.h"
#include "edit/editor.h"
#include "studio_support.h"
#include "views/graph_scene.h"
#include "views/optimize_worker.h"
#include "views/pareto_chart.h"
#include "test_projects.h"
#include "views/plan_gantt.h"

using namespace tapestry;
using namespace tapestry::views;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 120000;
constexpr int kStopWithinMs = 3000;  // Stop to idle: the search polls between evaluations (a few ms each)

// A window showing a project (through a session when one is given), the Optimize dock open.
struct OptimizeWindow {
    MainWindow w;
    OptimizeController *opt = nullptr;

    bool show() {
        w.resize(1600, 1000);
        w.show();
        if (!QTest::qWaitForWindowExposed(&w)) return false;
        opt = w.optimizer();
        opt->optimizeDock()->show();
        return true;
    }
    bool open(const QString &example) { return show() && openAndWait(w, examplePath(example)); }
    // Opens the session at `path` (a new one starts on the MLP example, saved into it)
    // and waits until its project is laid out and its searches are listed.
    bool openSession(const QString &path) {
        if (!show()) return false;
        const bool fresh = !QFileInfo::exists(path);
        QSignalSpy listed(opt, &OptimizeController::runsListed);
        if (!openSessionAndWait(w, path, kTimeoutMs)) return false;
        return fresh || listed.count() > 0 || listed.wait(kTimeoutMs);
    }
    // Sets the dock's fields for a search of `devices` × h100-sxm.
    void settings(int devices, int evaluations, double budget, int stall) {
        QVERIFY(opt->selectTarget(QStringLiteral("h100-sxm")));
        opt->devicesBox()->setValue(devices);
        opt->nodesBox()->setValue(0);
        for (search::Objective o : {search::Objective::time, search::Objective::memory, search::Objective::devices})
            opt->objectiveBox(o)->setChecked(true);
        opt->objectiveBox(search::Objective::communication)->setChecked(false);
        opt->memoryCapBox()->setValue(0);
        opt->maxTimeBox()->setValue(0);
        opt->evaluationsBox()->setValue(evaluations);
        opt->budgetBox()->setValue(budget);
        opt->seedBox()->setValue(2);
        opt->stallBox()->setValue(stall);
    }
    // Clicks Start and waits for the search's end; its outcome.
    bool search() {
        QSignalSpy finished(opt, &OptimizeController::searchFinished);
        QTest::mouseClick(opt->startButton(), Qt::LeftButton);
        if (!opt->isSearching()) return false;
        if (finished.count() == 0 && !finished.wait(kTimeoutMs)) return false;
        return finished.front().front().toBool();
    }
    // Clicks a point on the chart as a user does; the Plan dock's outcome ("" when opened).
    QString clickPoint(const QString &key) {
        QSignalSpy opened(opt, &OptimizeController::pointOpened);
        ParetoChart *chart = opt->chart();
        const QPoint at = chart->viewPosition(key);
        if (chart->keyAt(at) != key) return QStringLiteral("the point is not where the chart drew it");
        QTest::mouseClick(chart->chartView()->viewport(), Qt::LeftButton, Qt::NoModifier, at);
        if (opened.count() == 0 && !opened.wait(kTimeoutMs)) return QStringLiteral("no plan came");
        return opened.front().at(1).toString();
    }
};

QString readAll(const QString &path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The points of `chart` with figures made up: `count` of them, the first `front` on the front.
void fillSynthetic(ParetoChart &chart, int count, int front) {
    std::vector<ParetoPoint> points;
    QStringList keys;
    for (int i = 0; i < count; ++i) {
        ParetoPoint p;
        p.key = QStringLiteral("k%1").arg(i);
        p.description = QStringLiteral("plan %1 · shard").arg(i);
        p.mutator = QStringLiteral("reshard");
        const double t = i < front ? 1e-3 * (1 + i) : 1e-3 * (2 + (i * 37) % 100) / 4;
        const double m = i < front ? 1e9 * (front - i) : 1e9 * (2 + (i * 53) % 97) / 4;
        p.figures.makespan = t;
        p.figures.peak = m + (i < front ? 0 : 1e9 * front);
        p.figures.devices = 1 + i % 8;
        p.index = i;
        points.push_back(p);
        if (i < front) keys << p.key;
    }
    chart.reset({search::Objective::time, search::Objective::memory, search::Objective::devices});
    chart.addPoints(points);
    chart.setFront(keys);
    chart.redrawNow();
}

}  // namespace

class TestOptimizeDock : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString session_path_;  // the session the first search is kept in, reopened after

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        for (const char *group : {"window", "optimize", "plan"}) QSettings().remove(QString::fromLatin1(group));
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
        QVERIFY(dir_.isValid());
        session_path_ = dir_.filePath(QStringLiteral("optimize.tapestry-session"));
    }

    void searchFillsTheChartAndOpensAPlan() {
        OptimizeWindow ow;
        QVERIFY(ow.openSession(session_path_));
        OptimizeController *opt = ow.opt;
        QVERIFY(opt->targetBox()->findText(QStringLiteral("host")) < 0);  // not measured: not offered
        ow.settings(4, 60, 0, 0);
        QVERIFY2(ow.search(), qPrintable(opt->lastError()));
        QVERIFY2(ow.w.statusBar()->currentMessage().startsWith(QStringLiteral("Optimized mlp.tapestry.json: 60 plans")),
                 qPrintable(ow.w.statusBar()->currentMessage()));
        QVERIFY(ow.w.statusBar()->currentMessage().contains(QStringLiteral("stopped: evaluations")));

        // The chart: every planned candidate a point, the front coloured and stepped.
        ParetoChart *chart = opt->chart();
        chart->redrawNow();
        QVERIFY2(chart->pointCount() > 20 && chart->pointCount() <= 60,
                 qPrintable(QString::number(chart->pointCount())));
        QVERIFY(chart->frontCount() >= 3);
        QCOMPARE(chart->frontPointsDrawn(), chart->frontCount());
        QCOMPARE(chart->offFrontDrawn(), chart->pointCount() - chart->frontCount());  // few: none thinned
        QVERIFY(chart->frontLine()->count() >= 2);
        QCOMPARE(chart->xFigure(), search::Objective::time);
        QCOMPARE(chart->yFigure(), search::Objective::memory);
        QCOMPARE(chart->colourFigure(), std::optional<search::Objective>(search::Objective::devices));
        // The step line goes down and right: each step no slower and no fuller than the one before.
        const QList<QPointF> steps = chart->frontLine()->points();
        for (int i = 1; i < steps.size(); ++i)
            QVERIFY(steps[i].x() >= steps[i - 1].x() && steps[i].y() <= steps[i - 1].y());
        // The memory cap (the target's 80 GB, far above these plans) and the baselines.
        QCOMPARE(chart->memoryCapLine()->count(), 2);
        QCOMPARE(chart->maxTimeLine()->count(), 0);
        QTRY_COMPARE_WITH_TIMEOUT(chart->baselines().size(), size_t{4}, kTimeoutMs);
        for (const BaselinePoint &b : chart->baselines()) QVERIFY2(b.refused.isEmpty(), qPrintable(b.refused));

        // The progress line.
        const QString progress = opt->progressLabel()->text();
        QVERIFY2(progress.contains(QStringLiteral("60 plans (")) && progress.contains(QStringLiteral("/s)")),
                 qPrintable(progress));
        QVERIFY2(progress.contains(QStringLiteral("front %1").arg(chart->frontCount())), qPrintable(progress));
        for (const char *best : {"best step time", "best peak memory per device", "best devices 1"})
            QVERIFY2(progress.contains(QLatin1String(best)), qPrintable(progress));

        // Hover: the plan and its figures, labelled predictions.
        const QString key = chart->front().front();
        const ParetoPoint *point = chart->point(key);
        QVERIFY(point);
        const QString tip = chart->toolTipFor(key);
        QVERIFY2(tip.contains(point->brief()) && !point->summary.isEmpty() && tip.contains(QStringLiteral("predictions")) &&
                     tip.contains(figureText(search::Objective::time, point->figures.makespan)),
                 qPrintable(tip));

        // A click on a front point: its plan in the Plan dock, certified, with the point's
        // own figures, and the canvas coloured by device.
        QCOMPARE(ow.clickPoint(key), QString());
        QCOMPARE(chart->selection(), QStringList{key});
        const auto r = ow.w.plans()->result();
        QVERIFY(r);
        QVERIFY(r->certificate.pass());
        QCOMPARE(r->prediction.makespan, point->figures.makespan);
        QCOMPARE(static_cast<double>(r->prediction.peak), point->figures.peak);
        QVERIFY(ow.w.plans()->planDock()->isVisible());
        QVERIFY(ow.w.plans()->gantt()->rowCount() > 0);
        QVERIFY(!ow.w.scene()->deviceColours().isEmpty());
        QVERIFY2(ow.w.statusBar()->currentMessage().startsWith(QStringLiteral("Plan of ")),
                 qPrintable(ow.w.statusBar()->currentMessage()));
        QVERIFY(opt->optimizeDock()->isVisible());  // beside the Plan dock, not behind it

        // Two points compared side by side.
        const QString other = chart->front().back();
        QVERIFY(chart->selectPoint(other, true));
        QCOMPARE(chart->selection(), (QStringList{key, other}));
        QVERIFY(opt->compareButton()->isEnabled());
        QSignalSpy compared(opt, &OptimizeController::compared);
        QTest::mouseClick(opt->compareButton(), Qt::LeftButton);
        QVERIFY(compared.count() > 0 || compared.wait(kTimeoutMs));
        QCOMPARE(compared.front().front().toString(), QString());
        QVERIFY(opt->compareDialog() && opt->compareDialog()->isVisible());
        auto *table = opt->compareDialog()->findChild<QTableWidget *>(QStringLiteral("optimizeCompareTable"));
        QVERIFY(table);
        // Each plan briefly (a run of ops split alike once), the whole description on hover.
        QCOMPARE(table->item(0, 0)->text(), point->brief());
        QCOMPARE(table->item(0, 0)->toolTip(), point->description);
        QCOMPARE(table->item(0, 1)->text(), chart->point(other)->brief());
        QCOMPARE(table->item(0, 1)->toolTip(), chart->point(other)->description);
        QCOMPARE(table->verticalHeaderItem(1)->text(), QStringLiteral("step time"));
        QCOMPARE(table->item(1, 0)->text(), figureText(search::Objective::time, point->figures.makespan));
        QVERIFY(table->rowCount() >= 8 + 1);  // the figures, then a peak per device
        opt->compareDialog()->close();

        // Exports: the front as CSV (the CLI's columns) and JSON, the chart as PNG and SVG.
        QTemporaryDir out;
        const QString csv = out.filePath(QStringLiteral("front.csv"));
        QSignalSpy exported(opt, &OptimizeController::frontExported);
        QVERIFY(opt->exportFront(csv));
        QVERIFY(exported.count() > 0 || exported.wait(kTimeoutMs));
        QCOMPARE(exported.front().at(1).toString(), QString());
        const QStringList lines = readAll(csv).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), chart->frontCount() + 1);
        QCOMPARE(lines.front(),
                 QStringLiteral("index,makespan_seconds,peak_bytes,devices,communication_bytes,energy_joules,feasible,plan"));
        QVERIFY2(lines[1].startsWith(QStringLiteral("0,")) && lines[1].endsWith(QStringLiteral("\"")),
                 qPrintable(lines[1]));
        const QString json = out.filePath(QStringLiteral("front.json"));
        QVERIFY(opt->exportFront(json));
        QVERIFY(exported.count() > 1 || exported.wait(kTimeoutMs));
        const QJsonObject front = QJsonDocument::fromJson(readAll(json).toUtf8()).object();
        QCOMPARE(front.value(QStringLiteral("format")).toString(), QStringLiteral("tapestry-front"));
        QCOMPARE(front.value(QStringLiteral("front")).toArray().size(), chart->frontCount());
        QCOMPARE(opt->exportChart(out.filePath(QStringLiteral("chart.png"))), QString());
        QVERIFY(QImage(out.filePath(QStringLiteral("chart.png"))).width() > 100);
        QCOMPARE(opt->exportChart(out.filePath(QStringLiteral("chart.svg"))), QString());
        QVERIFY(readAll(out.filePath(QStringLiteral("chart.svg"))).contains(QStringLiteral("<svg")));

        // Kept in the session: one finished run with every planned candidate and the front.
        QTRY_COMPARE_WITH_TIMEOUT(opt->runs().size(), size_t{1}, kTimeoutMs);
        const store::SearchRunRecord &run = opt->runs().front();
        QCOMPARE(QString::fromStdString(run.status), QStringLiteral("finished"));
        QCOMPARE(run.candidates, chart->pointCount());
        QCOMPARE(run.on_front, chart->frontCount());
        QCOMPARE(run.seed, std::uint64_t{2});
        QCOMPARE(opt->shownRun(), run.id);
        QCOMPARE(opt->runBox()->count(), 1);
    }

    // The session of the first test, reopened in a new window: the run is listed and
    // drawn again, and its points open their plans (rebuilt from the stored choices).
    void reopeningTheSessionShowsTheRun() {
        if (!QFileInfo::exists(session_path_)) QSKIP("needs searchFillsTheChartAndOpensAPlan's session");
        std::vector<store::SearchCandidateRecord> stored;
        store::SearchRunId id = 0;
        {
            auto s = store::Session::open(session_path_.toStdString(), store::OpenMode::read_only);
            QVERIFY(s);
            const store::ProjectId project = (*s)->projects()->front().id;
            id = (*s)->search_runs(project)->front().id;
            stored = (*s)->load_search_run(id)->candidates;
        }
        {
            // The user's last settings differ from the run's: the dock starts from them.
            QSettings settings;
            settings.setValue(QStringLiteral("optimize/devices"), 2);
            settings.setValue(QStringLiteral("optimize/seed"), 99);
            settings.setValue(QStringLiteral("optimize/evaluations"), 7);
            settings.setValue(QStringLiteral("optimize/objectives"), QStringList{"time", "communication"});
        }
        OptimizeWindow ow;
        QSignalSpy shown(ow.w.optimizer(), &OptimizeController::runShown);
        QVERIFY(ow.openSession(session_path_));
        QVERIFY(shown.count() > 0 || shown.wait(kTimeoutMs));
        QCOMPARE(shown.front().at(0).toLongLong(), id);
        QCOMPARE(shown.front().at(1).toString(), QString());
        OptimizeController *opt = ow.opt;
        QCOMPARE(opt->shownRun(), id);
        // The dock shows the run's settings (searchFillsTheChartAndOpensAPlan's: 4
        // devices, 60 evaluations, seed 2, time · memory · devices), so Start runs it again.
        QCOMPARE(opt->targetBox()->currentText(), QStringLiteral("h100-sxm"));
        QCOMPARE(opt->devicesBox()->value(), 4);
        QCOMPARE(opt->evaluationsBox()->value(), 60);
        QCOMPARE(opt->seedBox()->value(), 2);
        QVERIFY(opt->objectiveBox(search::Objective::time)->isChecked());
        QVERIFY(opt->objectiveBox(search::Objective::memory)->isChecked());
        QVERIFY(opt->objectiveBox(search::Objective::devices)->isChecked());
        QVERIFY(!opt->objectiveBox(search::Objective::communication)->isChecked());
        QCOMPARE(opt->runBox()->count(), 1);
        QVERIFY(opt->runBox()->currentText().startsWith(QStringLiteral("#%1 · ").arg(id)));
        ParetoChart *chart = opt->chart();
        QCOMPARE(chart->pointCount(), static_cast<int>(stored.size()));
        int on_front = 0;
        for (const store::SearchCandidateRecord &c : stored) on_front += c.on_front ? 1 : 0;
        QCOMPARE(chart->frontCount(), on_front);
        QVERIFY(opt->progressLabel()->text().contains(QStringLiteral("finished")));
        QTRY_COMPARE_WITH_TIMEOUT(chart->baselines().size(), size_t{4}, kTimeoutMs);
        const QString key = chart->front().back();
        QCOMPARE(ow.clickPoint(key), QString());
        QCOMPARE(ow.w.plans()->result()->prediction.makespan, chart->point(key)->figures.makespan);
    }

    void stopEndsAnUnboundedSearch() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("stop.tapestry-session"));
        OptimizeWindow ow;
        QVERIFY(ow.openSession(path));
        OptimizeController *opt = ow.opt;
        ow.settings(4, 0, 0, 0);  // no evaluation budget, no time budget, never stalls
        // Ctrl+Alt+O starts it: no other action of the window has that shortcut.
        int holders = 0;
        for (const QAction *a : ow.w.findChildren<QAction *>())
            holders += a->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+Alt+O"))) ? 1 : 0;
        QCOMPARE(holders, 1);
        QSignalSpy finished(opt, &OptimizeController::searchFinished);
        QTest::keyClick(&ow.w, Qt::Key_O, Qt::ControlModifier | Qt::AltModifier);
        QVERIFY(opt->isSearching());
        QVERIFY(!opt->startButton()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(opt->chart()->pointCount() >= 10, kTimeoutMs);
        QVERIFY(opt->isSearching());
        // The stream: at least 10 updates a second while it runs, and never more than
        // one per interval (a fast search does not flood the event loop).
        QSignalSpy updates(opt->worker(), &OptimizeWorker::updated);
        QTest::qWait(2000);
        QVERIFY2(updates.count() >= 20 && updates.count() <= 2000 / OptimizeWorker::kStreamIntervalMs + 1,
                 qPrintable(QString::number(updates.count())));
        QElapsedTimer clock;
        clock.start();
        QTest::mouseClick(opt->stopButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!opt->isSearching(), kStopWithinMs);
        QVERIFY2(clock.elapsed() < kStopWithinMs, qPrintable(QString::number(clock.elapsed())));
        QVERIFY(finished.count() > 0 || finished.wait(kTimeoutMs));
        QVERIFY(finished.front().front().toBool());
        QVERIFY2(ow.w.statusBar()->currentMessage().contains(QStringLiteral("stopped: stopped")),
                 qPrintable(ow.w.statusBar()->currentMessage()));
        QVERIFY(opt->startButton()->isEnabled());
        QVERIFY(opt->chart()->frontCount() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(opt->runs().size(), size_t{1}, kTimeoutMs);
        QCOMPARE(QString::fromStdString(opt->runs().front().status), QStringLiteral("stopped"));
    }

    void refusedSettingsSayWhy() {
        OptimizeWindow ow;
        QVERIFY(ow.open(QStringLiteral("mlp")));
        OptimizeController *opt = ow.opt;
        ow.settings(4, 30, 0, 0);
        for (search::Objective o : {search::Objective::time, search::Objective::memory, search::Objective::devices})
            opt->objectiveBox(o)->setChecked(false);
        QVERIFY(!opt->startButton()->isEnabled());
        QVERIFY(!opt->startSearch());
        QCOMPARE(opt->lastError(), QStringLiteral("pick at least one objective"));
        QCOMPARE(ow.w.statusBar()->currentMessage(), QStringLiteral("Optimize: pick at least one objective"));
        // A device count the target's clusters cannot make: the cluster's own words.
        opt->objectiveBox(search::Objective::time)->setChecked(true);
        opt->devicesBox()->setValue(3);
        opt->nodesBox()->setValue(2);
        QVERIFY(!ow.search());
        QVERIFY2(opt->progressLabel()->text().contains(QStringLiteral("Not optimized")),
                 qPrintable(opt->progressLabel()->text()));
        QCOMPARE(opt->lastError(), QStringLiteral("3 devices do not spread evenly over 2 nodes"));
        QCOMPARE(opt->chart()->pointCount(), 0);
    }

    // The session's launches on the target calibrate the dock's figures: the
    // evaluator's, a front plan's and the baselines' alike (the same model as
    // `tapestry optimize --session`).
    void sessionCalibratesTheFigures() {
        QTemporaryDir dir;
        auto opened = store::Session::open(dir.filePath(QStringLiteral("c.tapestry-session")).toStdString());
        QVERIFY(opened.has_value());
        std::shared_ptr<store::Session> session(std::move(*opened));
        std::vector<store::CalibrationRow> rows;  // every gemm of the MLP's sizes at 2× its prediction
        for (double size : {2e9, 3e9, 4e9, 2e10, 3e10, 4e10}) rows.push_back({"gemm", size, 1e-3, 2e-3, std::nullopt, ""});
        QVERIFY(session->add_calibration("h100-sxm", rows));
        const Graph g = test::example_graph("mlp");
        const cost::Target h100 = test::builtin_target_or_stop("h100-sxm");
        SearchSetup plain{g, h100, 4, 0, {search::Objective::time, search::Objective::memory}, {}};
        SearchSetup calibrated = plain;
        calibrated.calibration = session;
        auto a = makeEvaluator(plain), b = makeEvaluator(calibrated);
        QVERIFY2(a && b, a ? (b ? "" : b.error().c_str()) : a.error().c_str());
        QCOMPARE((*a)->model().calibration().samples().size(), size_t{0});
        QCOMPARE((*b)->model().calibration().samples().size(), size_t{6});
        const search::Candidate c = (*a)->space().batch_split(4);
        const double before = (*a)->evaluate(c).figures.makespan, after = (*b)->evaluate(c).figures.makespan;
        QVERIFY2(after > 1.5 * before, qPrintable(QString("%1 vs %2").arg(after).arg(before)));
        // A front plan made again shows the evaluated figure; the baselines take the same model.
        const PlansOutcome p = OptimizeWorker::plans(calibrated, {c});
        QVERIFY2(p.ok, qPrintable(p.error));
        QCOMPARE(p.plans.front()->prediction.makespan, after);
        const BaselinesOutcome plain_b = OptimizeWorker::baselines(plain), cal_b = OptimizeWorker::baselines(calibrated);
        QCOMPARE(cal_b.baselines.size(), plain_b.baselines.size());
        QVERIFY(!cal_b.baselines.empty());
        for (size_t i = 0; i < cal_b.baselines.size(); ++i)
            if (cal_b.baselines[i].refused.isEmpty())
                QVERIFY2(cal_b.baselines[i].figures.makespan > plain_b.baselines[i].figures.makespan,
                         qPrintable(cal_b.baselines[i].name));
    }

    // Fusion is on by default and kept with a run's settings; runs kept before it
    // read as searched without it (their candidates have none).
    // A memory cap no plan of the MLP keeps (10 MiB; its plans peak above 30 MiB):
    // the front is of the least violating plans, drawn as over a constraint, and
    // the status line says that no plan found keeps the constraints.
    void noFeasiblePlanIsSaid() {
        OptimizeWindow ow;
        QVERIFY(ow.open(QStringLiteral("mlp")));
        ow.settings(4, 40, 0, 0);
        ow.opt->memoryCapBox()->setValue(0.01);
        QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
        const QString message = ow.w.statusBar()->currentMessage();
        QVERIFY2(message.contains(QStringLiteral("; no plan found keeps the constraints (every point of the front is over one)")),
                 qPrintable(message));
        for (const ParetoPoint *p : ow.opt->chart()->frontPoints()) QVERIFY(p->figures.violation > 0);
        // With the target's cap the same search finds feasible plans, and says nothing of it.
        ow.opt->memoryCapBox()->setValue(0);
        QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
        QVERIFY(!ow.w.statusBar()->currentMessage().contains(QStringLiteral("no plan found keeps")));
    }

    void fusionIsASettingOfTheRun() {
        OptimizeWindow ow;
        QVERIFY(ow.open(QStringLiteral("mlp")));
        QVERIFY(ow.opt->fusionBox()->isChecked());
        RunSettings r;
        r.devices = 4;
        r.objectives = {search::Objective::time};
        r.fusion = true;
        auto back = search::parse_settings(search::settings_json(r));
        QVERIFY(back.has_value());
        QVERIFY(back->fusion);
        r.fusion = false;
        QVERIFY(!search::parse_settings(search::settings_json(r))->fusion);
        auto old = search::parse_settings(R"({"devices": 4, "nodes": 0, "objectives": ["time"]})");
        QVERIFY(old.has_value());
        QVERIFY(!old->fusion);
    }

    // Device maps are off by default (a wider space, searched more thinly) and kept
    // with a run's settings; a run with them has mapped candidates, which the session
    // keeps with their maps and whose plans open from the chart with the figures shown.
    void deviceMapsAreASettingOfTheRun() {
        RunSettings r;
        r.devices = 4;
        r.objectives = {search::Objective::time};
        r.maps = true;
        QVERIFY(search::parse_settings(search::settings_json(r))->maps);
        r.maps = false;
        QVERIFY(!search::parse_settings(search::settings_json(r))->maps);
        QVERIFY(!search::parse_settings(R"({"devices": 4, "nodes": 0, "objectives": ["time"]})")->maps);

        const QString path = dir_.filePath(QStringLiteral("maps.tapestry-session"));
        {
            OptimizeWindow ow;
            QVERIFY(ow.openSession(path));
            QVERIFY(!ow.opt->mapsBox()->isChecked());
            ow.settings(4, 80, 0, 0);
            ow.opt->mapsBox()->setChecked(true);
            QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
            // A mapped plan opens with the figures the chart shows.
            ParetoChart *chart = ow.opt->chart();
            chart->redrawNow();
            QString mapped;
            for (const ParetoPoint &p : chart->points())
                if (p.key.section(QStringLiteral(" | "), 0, 0).contains(QLatin1Char('@')) && mapped.isEmpty())
                    mapped = p.key;  // a map in the ops' part ("0=2@1 …"; a pipeline's cuts follow its rule)
            QVERIFY2(!mapped.isEmpty(), "no candidate has a device map");
            QVERIFY(chart->point(mapped)->description.contains(QStringLiteral(" from device ")));
            QSignalSpy opened(ow.opt, &OptimizeController::pointOpened);
            QVERIFY(ow.opt->openPoint(mapped));
            QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
            QCOMPARE(opened.front().at(1).toString(), QString());
            QCOMPARE(ow.w.plans()->result()->prediction.makespan, chart->point(mapped)->figures.makespan);
            QVERIFY2(ow.w.plans()->result()->plan.source.options.find(" from device ") != std::string::npos,
                     ow.w.plans()->result()->plan.source.options.c_str());
        }
        auto s = store::Session::open(path.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        const store::ProjectId project = (*s)->projects()->front().id;
        const auto runs = (*s)->search_runs(project);
        QVERIFY(runs && runs->size() == 1);
        auto settings = search::parse_settings(runs->front().settings_json);
        QVERIFY(settings && settings->maps);
        const auto run = (*s)->load_search_run(runs->front().id);
        QVERIFY(run.has_value());
        int mapped = 0;
        for (const store::SearchCandidateRecord &c : run->candidates)
            if (!c.at.empty()) {
                ++mapped;
                QVERIFY(QString::fromStdString(c.key).contains(QLatin1Char('@')));
                QCOMPARE(c.at.size(), c.dim.size());
            }
        QVERIFY(mapped > 0);
    }

    // Pipeline cuts are off by default and kept with a run's settings; a run with them
    // has pipelines cut at chosen ops, which the session keeps with their cuts and
    // whose plans open from the chart with the figures shown.
    void pipelineCutsAreASettingOfTheRun() {
        RunSettings r;
        r.devices = 4;
        r.objectives = {search::Objective::time};
        r.cuts = true;
        QVERIFY(search::parse_settings(search::settings_json(r))->cuts);
        QVERIFY(!search::parse_settings(R"({"devices": 4, "nodes": 0, "objectives": ["time"]})")->cuts);

        const QString path = dir_.filePath(QStringLiteral("cuts.tapestry-session"));
        {
            OptimizeWindow ow;
            QVERIFY(ow.openSession(path));
            QVERIFY(!ow.opt->cutsBox()->isChecked());
            ow.settings(4, 300, 0, 0);
            ow.opt->mapsBox()->setChecked(false);  // an earlier test's run may have left it on
            ow.opt->cutsBox()->setChecked(true);
            QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
            ParetoChart *chart = ow.opt->chart();
            chart->redrawNow();
            QString cut;
            for (const ParetoPoint &p : chart->points())
                if (!p.candidate.cuts.empty() && cut.isEmpty()) cut = p.key;
            QVERIFY2(!cut.isEmpty(), "no candidate cuts its pipeline");
            QVERIFY(cut.contains(QRegularExpression(QStringLiteral("\\| pipeline:\\d+@\\d"))));
            QVERIFY(chart->point(cut)->description.contains(QStringLiteral(" cut at ")));
            QSignalSpy opened(ow.opt, &OptimizeController::pointOpened);
            QVERIFY(ow.opt->openPoint(cut));
            QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
            QCOMPARE(opened.front().at(1).toString(), QString());
            QCOMPARE(ow.w.plans()->result()->prediction.makespan, chart->point(cut)->figures.makespan);
        }
        auto s = store::Session::open(path.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        const auto runs = (*s)->search_runs((*s)->projects()->front().id);
        QVERIFY(runs && runs->size() == 1);
        auto settings = search::parse_settings(runs->front().settings_json);
        QVERIFY(settings && settings->cuts && !settings->maps);
        const auto run = (*s)->load_search_run(runs->front().id);
        QVERIFY(run.has_value());
        const auto with_cuts = std::count_if(run->candidates.begin(), run->candidates.end(),
                                             [](const store::SearchCandidateRecord &c) { return !c.cuts.empty(); });
        QVERIFY(with_cuts > 0);
        for (const store::SearchCandidateRecord &c : run->candidates)
            if (!c.cuts.empty()) QCOMPARE(static_cast<int>(c.cuts.size()), c.stages - 1);
    }

    // "Start from substituted graphs": candidates of the expanded attention graph
    // stream onto the chart with their description, one opens in the Plan dock with
    // the substitution stage first and the chart's figures, and the session keeps
    // the setting and each candidate's substitution.
    // Re-planning after an edit: a run searched, an op given another name (its id
    // stays), then a search from the shown run's front — every front plan carried
    // to the edited graph by op id and evaluated in the first generation (the
    // engine's tests cover ops gone and new).
    void warmStartReplansAfterAnEdit() {
        const QString path = dir_.filePath(QStringLiteral("warm.tapestry-session"));
        OptimizeWindow ow;
        QVERIFY(ow.openSession(path));
        ow.settings(4, 150, 0, 0);
        ow.opt->mapsBox()->setChecked(false);
        ow.opt->cutsBox()->setChecked(false);
        ow.opt->substituteBox()->setChecked(false);
        QCheckBox *warm = ow.opt->warmStartBox();
        QVERIFY(!warm->isEnabled());  // no run shown yet
        QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
        const int front = ow.opt->chart()->frontCount();
        QVERIFY(front > 0);
        QSet<QString> front_plans;
        for (const ParetoPoint *p : ow.opt->chart()->frontPoints()) front_plans.insert(p->description);
        QVERIFY(warm->isEnabled());
        QVERIFY2(warm->text().contains(QStringLiteral("#1")), qPrintable(warm->text()));
        QLabel *changed = ow.opt->optimizeDock()->findChild<QLabel *>(QStringLiteral("optimizeGraphChanged"));
        QVERIFY(changed && !changed->isVisible());
        QVERIFY(ow.w.editing()
                    ->applyEdit(QStringLiteral("Rename"), [](edit::Editor &e) { return e.rename("gelu1", "activation"); })
                    .isEmpty());
        QVERIFY(warm->isEnabled());  // an edit keeps the run shown, and says the graph changed
        QVERIFY(changed->isVisible());
        QVERIFY2(changed->text().contains(QStringLiteral("The graph changed since run #1")) &&
                     changed->text().contains(QStringLiteral("Run #1's front")),
                 qPrintable(changed->text()));
        warm->setChecked(true);
        QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
        const QString message = ow.w.statusBar()->currentMessage();
        const QRegularExpression said(QStringLiteral("started from run #1's front: (\\d+) of its (\\d+) plans carried over"));
        const QRegularExpressionMatch m = said.match(message);
        QVERIFY2(m.hasMatch(), qPrintable(message));
        QCOMPARE(m.captured(2).toInt(), front);
        QCOMPARE(m.captured(1).toInt(), front);
        int first_generation_warm = 0;
        for (const ParetoPoint &p : ow.opt->chart()->points()) {
            if (p.mutator != QStringLiteral("warm start")) continue;
            QCOMPARE(p.generation, 0);
            QVERIFY2(front_plans.contains(p.description), qPrintable(p.description));
            ++first_generation_warm;
        }
        QVERIFY(first_generation_warm > 0 && first_generation_warm <= front);  // one may equal a seed
        QVERIFY2(warm->text().contains(QStringLiteral("#2")), qPrintable(warm->text()));  // the new run is shown
        QVERIFY(!changed->isVisible());  // of the graph as it is now
        // The session keeps where it started: the run list's tooltip says so.
        QSignalSpy listed(ow.opt, &OptimizeController::runsListed);
        QComboBox *runs = ow.opt->optimizeDock()->findChild<QComboBox *>(QStringLiteral("optimizeRuns"));
        QVERIFY(runs);
        if (runs->findData(2LL) < 0) QVERIFY(listed.wait(kTimeoutMs));
        const QString tip = runs->itemData(runs->findData(2LL), Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("started from run #1's front")), qPrintable(tip));
        warm->setChecked(false);
    }

    void substitutionIsASettingOfTheRun() {
        RunSettings r;
        r.devices = 4;
        r.objectives = {search::Objective::time};
        r.substitute = true;
        QVERIFY(search::parse_settings(search::settings_json(r))->substitute);
        QVERIFY(!search::parse_settings(R"({"devices": 4, "nodes": 0, "objectives": ["time"]})")->substitute);

        const QString path = dir_.filePath(QStringLiteral("substitute.tapestry-session"));
        {
            OptimizeWindow ow;
            QVERIFY(ow.openSession(path));
            QVERIFY(openAndWait(ow.w, examplePath(QStringLiteral("attention"))));
            QVERIFY(!ow.opt->substituteBox()->isChecked());
            ow.settings(4, 300, 0, 0);
            ow.opt->mapsBox()->setChecked(false);  // an earlier test's run may have left them on
            ow.opt->cutsBox()->setChecked(false);
            ow.opt->substituteBox()->setChecked(true);
            QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
            ParetoChart *chart = ow.opt->chart();
            chart->redrawNow();
            QString expanded;
            for (const ParetoPoint &p : chart->points())
                if (p.candidate.substitution == "expand" && expanded.isEmpty()) expanded = p.key;
            QVERIFY2(!expanded.isEmpty(), "no candidate starts from the expanded graph");
            QVERIFY(expanded.endsWith(QStringLiteral(" | substitute:expand")));
            QVERIFY(chart->point(expanded)->description.endsWith(QStringLiteral("· substituted (expand)")));
            QSignalSpy opened(ow.opt, &OptimizeController::pointOpened);
            QVERIFY(ow.opt->openPoint(expanded));
            QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
            QCOMPARE(opened.front().at(1).toString(), QString());
            const auto result = ow.w.plans()->result();
            QVERIFY(result);
            QCOMPARE(QString::fromStdString(result->stages.front().pass), QStringLiteral("substitute"));
            QCOMPARE(result->prediction.makespan, chart->point(expanded)->figures.makespan);
            ow.opt->substituteBox()->setChecked(false);  // the next test's runs start without it
        }
        auto s = store::Session::open(path.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        const auto projects = (*s)->projects();
        QVERIFY(projects && !projects->empty());
        std::optional<store::SearchRunRecord> found;
        for (const auto &project : *projects)
            if (auto runs = (*s)->search_runs(project.id); runs && !runs->empty()) found = runs->front();
        QVERIFY(found.has_value());
        auto settings = search::parse_settings(found->settings_json);
        QVERIFY(settings && settings->substitute);
        const auto run = (*s)->load_search_run(found->id);
        QVERIFY(run.has_value());
        QVERIFY(std::any_of(run->candidates.begin(), run->candidates.end(),
                            [](const store::SearchCandidateRecord &c) { return c.substitution == "expand"; }));
    }

    // ---- the chart alone ------------------------------------------------------------

    void chartThinsZoomsAndHits() {
        ParetoChart chart;
        chart.resize(900, 600);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        fillSynthetic(chart, 6000, 12);
        QCOMPARE(chart.pointCount(), 6000);
        QCOMPARE(chart.frontPointsDrawn(), 12);
        // Thousands off the front: thinned to a grid, never more than the cap.
        QVERIFY2(chart.offFrontDrawn() <= ParetoChart::kMaxOffFrontDrawn,
                 qPrintable(QString::number(chart.offFrontDrawn())));
        QVERIFY(chart.offFrontDrawn() > 100);
        const int thinned = chart.offFrontDrawn();
        // The staircase of 12 front points, each better in memory: 12 corners and 11 steps.
        QCOMPARE(chart.frontLine()->count(), 23);
        // Colour by devices: 8 values over 5 bins, every front point in one.
        int binned = 0;
        for (QScatterSeries *s : chart.frontSeries()) binned += static_cast<int>(s->count());
        QCOMPARE(binned, 12);

        // Hit tests: a front point is found where it is drawn; tooltips label predictions.
        const QPoint at = chart.viewPosition(QStringLiteral("k3"));
        QCOMPARE(chart.keyAt(at), QStringLiteral("k3"));
        QVERIFY(chart.toolTipFor(QStringLiteral("k3")).contains(QStringLiteral("plan 3 · shard")));
        QVERIFY(chart.toolTipFor(QStringLiteral("k3")).contains(QStringLiteral("on the front")));
        QVERIFY(chart.toolTipFor(QStringLiteral("k3000")).contains(QStringLiteral("dominated")));
        QTest::mouseClick(chart.chartView()->viewport(), Qt::LeftButton, Qt::ControlModifier, at);
        QCOMPARE(chart.selection(), QStringList{QStringLiteral("k3")});

        // Zoom into the lower left quarter: more of the points there are drawn.
        const QRectF plot = chart.chart()->plotArea();
        chart.zoomTo(QRectF(plot.left(), plot.center().y(), plot.width() / 4, plot.height() / 2));
        chart.redrawNow();
        QVERIFY(chart.isZoomed());
        QCoreApplication::processEvents();
        chart.redrawNow();
        QVERIFY(chart.offFrontDrawn() <= ParetoChart::kMaxOffFrontDrawn);
        // A double click resets.
        QTest::mouseDClick(chart.chartView()->viewport(), Qt::LeftButton, Qt::NoModifier,
                           chart.chartView()->rect().center());
        QVERIFY(!chart.isZoomed());
        QCOMPARE(chart.offFrontDrawn(), thinned);

        // Other axes: communication is 0 for every point, the axis still has a range.
        chart.setAxes(search::Objective::devices, search::Objective::time, std::nullopt);
        chart.redrawNow();
        QCOMPARE(chart.frontSeries().front()->count(), 12);
    }

    // ---- the docs' screenshot -------------------------------------------------------

    void screenshotOfTheDock() {
        const QString shots = screenshotDir();
        if (shots.isEmpty()) QSKIP("TAPESTRY_SCREENSHOT_DIR is not set");
        QTemporaryDir dir;
        OptimizeWindow ow;
        QVERIFY(ow.openSession(dir.filePath(QStringLiteral("shot.tapestry-session"))));
        QVERIFY(openAndWait(ow.w, examplePath(QStringLiteral("gpt2_block"))));
        ow.w.resize(1920, 1080);
        ow.settings(8, 400, 0, 0);
        QVERIFY2(ow.search(), qPrintable(ow.opt->lastError()));
        ParetoChart *chart = ow.opt->chart();
        QTRY_COMPARE_WITH_TIMEOUT(chart->baselines().size(), size_t{4}, kTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(ow.opt->runBox()->count() > 0, kTimeoutMs);
        for (const char *name : {"paletteDock", "minimapDock"})
            if (auto *dock = ow.w.findChild<QDockWidget *>(QString::fromLatin1(name))) dock->close();
        ow.w.resizeDocks({ow.opt->optimizeDock()}, {600}, Qt::Vertical);
        ow.w.resizeDocks({ow.w.plans()->planDock(), ow.opt->optimizeDock()}, {1090, 830},
                         Qt::Horizontal);  // each its width
        QTest::qWait(100);
        const std::vector<const ParetoPoint *> front = chart->frontPoints();
        QVERIFY(!front.empty());
        QCOMPARE(ow.clickPoint(front[front.size() / 2]->key), QString());
        // Zoomed to the front and the baselines, as a rubber band drawn around them does.
        QRectF around;
        for (const ParetoPoint *p : front) around |= QRectF(chart->viewPosition(p->key), QSizeF(1, 1));
        const QPointF in_chart =
            chart->chart()->mapFromScene(chart->chartView()->mapToScene(around.topLeft().toPoint()));
        around.moveTopLeft(in_chart);
        chart->zoomTo(around.adjusted(-around.width() * 0.15, -around.height() * 0.15, around.width() * 0.15,
                                      around.height() * 0.15));
        QTest::qWait(200);
        ow.w.view()->fitToGraph();
        QTest::qWait(200);
        QVERIFY(ow.w.grab().save(QDir(shots).filePath(QStringLiteral("studio-optimize.png"))));
    }
};

QTEST_MAIN(TestOptimizeDock)
#include "test_optimize_dock.moc"
