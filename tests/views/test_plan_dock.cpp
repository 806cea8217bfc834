// The Plan dock driven through the real window (issue 15 item 9): the MLP planned
// on 4 × h100-sxm, with the dp baseline and with round-robin placement — the Gantt
// has a row per device whose lanes hold exactly that device's steps of each
// stream, the memory chart's peak is the summary's, the canvas colours the ops by
// device, a click on a bar selects its node, and the exported plan reads back; the
// host target refused with make_plan's message; a target copy refused with its
// JSON path, then kept as a user target and planned on; Cancel back to idle; and
// a Gantt of 10,000 bars painted and hit-tested quickly.
//
// With TAPESTRY_SCREENSHOT_DIR set it saves docs/screenshots/studio-plan.png.
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest/QtTest>
#include <algorithm>
#include <set>

#include "app/studio/main_window.h"
#include "app/studio/plan_controller.h"
#include "common/checked_size.h"
#include "edit/editor.h"
#include "plan/plan_file.h"
#include "studio_support.h"
#include "views/graph_scene.h"
#include "views/memory_chart.h"
#include "views/plan_gantt.h"

using namespace tapestry;
using namespace tapestry::views;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 120000;

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// A window showing the MLP example, the Plan dock raised.
struct PlanWindow {
    MainWindow w;
    PlanController *plans = nullptr;

    bool open() {
        w.resize(1600, 1000);
        w.show();
        if (!QTest::qWaitForWindowExposed(&w)) return false;
        if (!openAndWait(w, examplePath(QStringLiteral("mlp")))) return false;
        plans = w.plans();
        plans->planDock()->show();
        plans->planDock()->raise();
        return true;
    }

    // Sets the dock's fields and clicks Plan; the outcome (false if it never came).
    bool plan(const QString &target, int devices, const QString &placement, const QString &baseline) {
        if (!plans->selectTarget(target)) return false;
        plans->devicesBox()->setValue(devices);
        plans->nodesBox()->setValue(0);
        plans->placementBox()->setCurrentText(placement);
        plans->baselineBox()->setCurrentText(baseline);
        QSignalSpy finished(plans, &PlanController::planFinished);
        QTest::mouseClick(plans->planButton(), Qt::LeftButton);
        if (finished.count() == 0 && !finished.wait(kTimeoutMs)) return false;
        return finished.front().front().toBool();
    }
};

// The steps of a device's stream, as the plan lists them.
std::vector<int> stepsOf(const plan::Plan &p, int device, plan::Stream stream) {
    std::vector<int> out;
    for (int s : p.devices[static_cast<size_t>(device)].steps)
        if (p.steps[static_cast<size_t>(s)].stream == stream) out.push_back(s);
    std::sort(out.begin(), out.end());
    return out;
}

// The target JSON with the device's memory figure replaced by `value` (JSON text).
QString withMemory(const QString &json, const QRegularExpression &memory, const QString &value) {
    const QRegularExpressionMatch m = memory.match(json);
    QString out = json;
    if (m.hasMatch()) out.replace(m.capturedStart(), m.capturedLength(), m.captured(1) + value);
    return out;
}

std::vector<int> barsOf(const PlanGantt &g, int device, plan::Stream stream) {
    std::vector<int> out;
    for (int i = 0; i < g.barCount(device, stream); ++i) out.push_back(g.barStep(device, stream, i));
    std::sort(out.begin(), out.end());
    return out;
}

// A plan of `steps` steps spread over `devices` devices, each lane's steps back to
// back: what the Gantt draws, without compiling anything.
std::shared_ptr<const plan::PlanResult> syntheticPlan(int steps, int devices) {
    auto r = std::make_shared<plan::PlanResult>();
    r->plan.devices.resize(static_cast<size_t>(devices));
    for (int d = 0; d < devices; ++d) r->plan.devices[static_cast<size_t>(d)].name = "0:" + std::to_string(d);
    std::vector<double> clock(static_cast<size_t>(devices) * 2, 0.0);
    const plan::StepKind kinds[] = {plan::StepKind::kernel, plan::StepKind::copy, plan::StepKind::send_recv,
                                    plan::StepKind::collective};
    for (int i = 0; i < steps; ++i) {
        plan::Step s;
        s.kind = kinds[i % 4];
        s.stream = s.kind == plan::StepKind::kernel || s.kind == plan::StepKind::copy ? plan::Stream::compute
                                                                                      : plan::Stream::communication;
        s.device = (i / 4) % devices;
        s.op = "op" + std::to_string(i);
        s.predicted = 1e-6 * (1 + i % 7);
        s.bytes = 4096;
        double &at = clock[static_cast<size_t>(s.device * 2 + (s.stream == plan::Stream::compute ? 0 : 1))];
        r->prediction.steps.push_back({at, at + s.predicted});
        at += s.predicted;
        r->plan.devices[static_cast<size_t>(s.device)].steps.push_back(i);
        r->plan.steps.push_back(s);
    }
    r->prediction.makespan = *std::max_element(clock.begin(), clock.end());
    r->prediction.devices.resize(static_cast<size_t>(devices));
    return r;
}

}  // namespace

class TestPlanDock : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        QSettings().remove(QStringLiteral("window"));  // the default dock layout, not a saved one
        QSettings().remove(QStringLiteral("plan"));
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void planTheMlpOnFourDevices_data() {
        QTest::addColumn<QString>("placement");
        QTest::addColumn<QString>("baseline");
        QTest::newRow("dp baseline") << QStringLiteral("shard") << QStringLiteral("dp");
        QTest::newRow("round-robin placement") << QStringLiteral("round-robin") << QStringLiteral("none");
        QTest::newRow("tp baseline") << QStringLiteral("shard") << QStringLiteral("tp");  // all-reduces
    }

    void planTheMlpOnFourDevices() {
        QFETCH(QString, placement);
        QFETCH(QString, baseline);
        PlanWindow pw;
        QVERIFY(pw.open());
        PlanController *pc = pw.plans;
        QVERIFY2(pw.plan(QStringLiteral("h100-sxm"), 4, placement, baseline), qPrintable(pc->lastError()));
        QVERIFY(!pc->isPlanning());
        QVERIFY(
            pw.w.statusBar()->currentMessage().startsWith(QStringLiteral("Planned mlp.tapestry.json on 4 × "
                                                                         "h100-sxm")));
        const std::shared_ptr<const plan::PlanResult> r = pc->result();
        QVERIFY(r);
        const plan::Plan &p = r->plan;
        QCOMPARE(p.devices.size(), size_t{4});
        QVERIFY2(r->certificate.pass(), r->certificate.text().c_str());
        QVERIFY(pc->certificateLabel()->text().contains(QStringLiteral("PASS")));

        // The Gantt: a row per device; each lane exactly the device's steps of that stream.
        PlanGantt *g = pc->gantt();
        QCOMPARE(g->rowCount(), 4);
        int kernels = 0;
        for (int d = 0; d < 4; ++d) {
            for (plan::Stream stream : {plan::Stream::compute, plan::Stream::communication}) {
                const std::vector<int> expected = stepsOf(p, d, stream);
                QCOMPARE(g->barCount(d, stream), static_cast<int>(expected.size()));
                QCOMPARE(barsOf(*g, d, stream), expected);
            }
            QVERIFY2(g->barCount(d, plan::Stream::compute) > 0, "every device computes something");
            kernels += g->barCount(d, plan::Stream::compute);
        }
        QVERIFY(kernels >= 4);
        QVERIFY(g->visibleEnd() >= r->prediction.makespan);  // fitted: the whole makespan in view

        // The memory chart: the peak device's curve tops out at the summary's peak, marked there.
        MemoryChart *chart = pc->memoryChart();
        const std::int64_t peak = r->prediction.peak;
        const int peak_device = r->prediction.peak_device;
        QVERIFY(peak > 0);
        QCOMPARE(chart->devicesDrawn().size(), size_t{4});
        QCOMPARE(chart->drawnPeak(peak_device), peak);
        QCOMPARE(std::llround(chart->peakMarker().y()), static_cast<long long>(peak));
        QCOMPARE(chart->peakMarkerDevice(), peak_device);
        QCOMPARE(chart->capacityLine(), pc->capacity());
        QCOMPARE(pc->capacity(), 8e10);
        const QString summary = pc->summaryLabel()->text();
        QVERIFY2(summary.contains(QStringLiteral("(prediction)")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("peak %1 of").arg(qs(byte_text(peak)))), qPrintable(summary));
        QVERIFY2(summary.contains(qs(p.devices[static_cast<size_t>(peak_device)].name)), qPrintable(summary));
        chart->showDevice(peak_device);
        QCOMPARE(chart->devicesDrawn(), std::vector<int>{peak_device});
        QCOMPARE(chart->drawnPeak(peak_device), peak);
        chart->showDevice(MemoryChart::kAllDevices);
        // The table: a row per device, the peak device's peak as the summary says it.
        QCOMPARE(pc->deviceTable()->rowCount(), 4);
        QVERIFY(pc->deviceTable()->item(peak_device, 4)->text().startsWith(qs(byte_text(peak)) + " · "));

        // The canvas colours each op drawn by the devices of its pieces: four distinct colours.
        const QHash<QString, QList<QColor>> colours = pw.w.scene()->deviceColours();
        std::set<QRgb> used;
        for (const OpPtr &op : pw.w.document()->graph().operations()) {
            const QList<QColor> devices = colours.value(qs(op->id.value));
            QVERIFY2(!devices.isEmpty(), op->id.value.c_str());
            for (const QColor &c : devices) used.insert(c.rgb());
        }
        QCOMPARE(used.size(), size_t{4});

        // A click on a kernel bar (the widest whose op is drawn) selects its node on the canvas.
        int device = -1, index = -1;
        for (int d = 0; d < 4; ++d)
            for (int i = 0; i < g->barCount(d, plan::Stream::compute); ++i) {
                const plan::Step &s = p.steps[static_cast<size_t>(g->barStep(d, plan::Stream::compute, i))];
                if (s.kind != plan::StepKind::kernel || !pw.w.scene()->nodeItem(qs(s.op))) continue;
                if (device < 0 || g->barRect(d, plan::Stream::compute, i).width() >
                                      g->barRect(device, plan::Stream::compute, index).width()) {
                    device = d;
                    index = i;
                }
            }
        QVERIFY(device >= 0);
        const int step = g->barStep(device, plan::Stream::compute, index);
        const QString op = qs(p.steps[static_cast<size_t>(step)].op);
        const QRect bar = g->barRect(device, plan::Stream::compute, index);
        QVERIFY2(g->plotRect().contains(bar.center()), "the bar is in view");
        QVERIFY(bar.width() >= 3);
        pw.w.scene()->selectNodes({});
        QCOMPARE(g->stepAt(bar.center()), step);
        QTest::mouseClick(g->viewport(), Qt::LeftButton, Qt::NoModifier, bar.center());
        QCOMPARE(pw.w.scene()->selectedNodeId(), op);
        QCOMPARE(g->selectedStep(), step);
        const QString tip = g->stepToolTip(step);
        QVERIFY2(
            tip.contains(op) && tip.contains(QStringLiteral("kernel")) && tip.contains(QStringLiteral("predicted")),
            qPrintable(tip));
        if (baseline == QLatin1String("tp")) {
            // Tensor parallelism splits fc2 into fc2.partial, fc2.reduce and fc2.bias: a bar of
            // fc2.partial selects fc2, and fc2 carries the devices of its parts.
            const QList<QColor> fc2 = pw.w.scene()->deviceColours().value(QStringLiteral("fc2"));
            QCOMPARE(fc2.size(), 4);
            int partial = -1;
            for (int i = 0; i < g->barCount(1, plan::Stream::compute) && partial < 0; ++i)
                if (p.steps[static_cast<size_t>(g->barStep(1, plan::Stream::compute, i))].op == "fc2.partial")
                    partial = i;
            QVERIFY(partial >= 0);
            pw.w.scene()->selectNodes({});
            QTest::mouseClick(g->viewport(), Qt::LeftButton, Qt::NoModifier,
                              g->barRect(1, plan::Stream::compute, partial).center());
            QCOMPARE(pw.w.scene()->selectedNodeId(), QStringLiteral("fc2"));
            QCOMPARE(pw.w.statusBar()->currentMessage(), QStringLiteral("Step of fc2.partial (part of fc2)"));
        }

        const QString shots = screenshotDir();
        if (!shots.isEmpty() && baseline == QLatin1String("tp")) {
            // The canvas given the width: the left docks closed; the canvas at 100 % on the
            // first layers, whose operations carry their devices' colours.
            for (const char *name : {"paletteDock", "minimapDock"})
                if (auto *dock = pw.w.findChild<QDockWidget *>(QString::fromLatin1(name))) dock->close();
            pw.w.resizeDocks({pc->planDock()}, {470}, Qt::Vertical);
            QTest::qWait(100);
            pw.w.view()->resetZoom();
            pw.w.view()->centerOn(pw.w.scene()->nodeItem(QStringLiteral("fc2")));
            g->fit();
            QTest::qWait(100);
            QVERIFY(pw.w.grab().save(QDir(shots).filePath(QStringLiteral("studio-plan.png"))));
        }

        // Export Plan: a file plan::load_plan reads back, the same steps on the same devices.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("mlp.plan.json"));
        QSignalSpy exported(pc, &PlanController::planExported);
        QVERIFY(pc->exportPlan(path));
        QVERIFY(exported.count() > 0 || exported.wait(kTimeoutMs));
        QCOMPARE(exported.front().at(1).toString(), QString());
        QVERIFY(pw.w.statusBar()->currentMessage().startsWith(QStringLiteral("Exported the plan to")));
        auto back = plan::load_plan(path.toStdString());
        QVERIFY2(back, back ? "" : back.error().c_str());
        QCOMPARE(back->steps.size(), p.steps.size());
        QCOMPARE(back->devices.size(), p.devices.size());
        QCOMPARE(back->target, std::string("h100-sxm"));
        for (size_t s = 0; s < p.steps.size(); ++s) QCOMPARE(back->steps[s].device, p.steps[s].device);

        // An edit: the plan is of another graph now — the canvas loses its device colours and
        // the summary says so; undone, both come back.
        QCOMPARE(pw.w.document()->edit(QStringLiteral("Rename fc2"),
                                       [](edit::Editor &e) { return e.rename("fc2", "second linear"); }),
                 QString());
        QVERIFY(pw.w.scene()->deviceColours().isEmpty());
        QVERIFY(pc->summaryLabel()->text().endsWith(QStringLiteral("plan again")));
        pw.w.document()->undoStack()->undo();
        QVERIFY(!pw.w.scene()->deviceColours().isEmpty());
        QVERIFY(!pc->summaryLabel()->text().endsWith(QStringLiteral("plan again")));
    }

    void hostTargetShowsWhyItCannotPlan() {
        PlanWindow pw;
        QVERIFY(pw.open());
        PlanController *pc = pw.plans;
        QVERIFY(!pw.plan(QStringLiteral("host"), 2, QStringLiteral("shard"), QStringLiteral("none")));
        // make_plan's own words: the host target is measured before it plans.
        QVERIFY2(pc->lastError().startsWith(QStringLiteral("target 'host' lacks")), qPrintable(pc->lastError()));
        QVERIFY(pc->lastError().contains(QStringLiteral("measure")));
        QVERIFY(pc->summaryLabel()->text().contains(pc->lastError().toHtmlEscaped()));
        QVERIFY(pw.w.statusBar()->currentMessage().startsWith(QStringLiteral("Plan failed: target 'host' lacks")));
        QVERIFY(!pc->result());
        QVERIFY(!pc->exportButton()->isEnabled());
        QCOMPARE(pc->gantt()->rowCount(), 0);
        QVERIFY(pc->planButton()->isEnabled());
    }

    void targetCopyIsValidatedAndPlannable() {
        PlanWindow pw;
        QVERIFY(pw.open());
        PlanController *pc = pw.plans;
        QVERIFY(pc->selectTarget(QStringLiteral("h100-sxm")));
        QPointer<QDialog> editor = pc->openTargetEditor();
        QVERIFY(editor);
        auto *text = editor->findChild<QPlainTextEdit *>(QStringLiteral("targetJson"));
        auto *error = editor->findChild<QLabel *>(QStringLiteral("targetError"));
        auto *buttons = editor->findChild<QDialogButtonBox *>();
        QVERIFY(text && error && buttons);
        const QString json = text->toPlainText();
        QVERIFY(json.contains(QStringLiteral("\"h100-sxm-copy\"")));
        const QRegularExpression memory(QStringLiteral("(\"memory_bytes\":\\s*\\{[^}]*\"value\":\\s*)[-+0-9.eE]+"));
        QVERIFY(json.contains(memory));

        // A word where a number belongs: refused, the error names the JSON path; the dialog stays.
        const QString bad = withMemory(json, memory, QStringLiteral("\"lots\""));
        text->setPlainText(bad);
        QTest::mouseClick(buttons->button(QDialogButtonBox::Save), Qt::LeftButton);
        QVERIFY(editor->isVisible());
        QVERIFY(!error->isHidden());
        QVERIFY2(error->text().startsWith(QStringLiteral("target: device.memory_bytes.value:")),
                 qPrintable(error->text()));
        QVERIFY(pc->userTargets().empty());
        // A built-in's name: refused.
        QString taken = json;
        taken.replace(QStringLiteral("\"h100-sxm-copy\""), QStringLiteral("\"h100-sxm\""));
        QVERIFY(pc->saveUserTarget(taken).contains(QStringLiteral("built-in")));

        // Named and with 1 GiB of memory: kept, listed as a user target, selected.
        QString good = withMemory(json, memory, QStringLiteral("1073741824"));
        good.replace(QStringLiteral("\"h100-sxm-copy\""), QStringLiteral("\"small-h100\""));
        text->setPlainText(good);
        QTest::mouseClick(buttons->button(QDialogButtonBox::Save), Qt::LeftButton);
        QTRY_VERIFY(!editor || !editor->isVisible());
        QCOMPARE(pc->userTargets().size(), size_t{1});
        QCOMPARE(pc->userTargets().front().name, std::string("small-h100"));
        QCOMPARE(pc->targetBox()->currentText(), QStringLiteral("small-h100 (user)"));

        // Planned on: the plan names the copy; the capacity is the copy's.
        QVERIFY2(pw.plan(QStringLiteral("small-h100 (user)"), 2, QStringLiteral("round-robin"), QStringLiteral("none")),
                 qPrintable(pc->lastError()));
        QCOMPARE(pc->result()->plan.target, std::string("small-h100"));
        QCOMPARE(pc->capacity(), 1073741824.0);
        QVERIFY2(pc->summaryLabel()->text().contains(QStringLiteral("of 1.0 GiB")),
                 qPrintable(pc->summaryLabel()->text()));
    }

    void cancelReturnsToIdle() {
        PlanWindow pw;
        QVERIFY(pw.open());
        PlanController *pc = pw.plans;
        QVERIFY(pc->selectTarget(QStringLiteral("h100-sxm")));
        pc->devicesBox()->setValue(8);
        pc->baselineBox()->setCurrentText(QStringLiteral("dp"));
        QSignalSpy finished(pc, &PlanController::planFinished);
        QVERIFY(pc->startPlan());
        QVERIFY(pc->isPlanning());
        QVERIFY(!pc->planButton()->isEnabled());
        QVERIFY(pc->cancelButton()->isEnabled());
        QVERIFY(!pc->startPlan());  // one plan at a time
        QTest::mouseClick(pc->cancelButton(), Qt::LeftButton);
        QCOMPARE(finished.count(), 1);  // at once
        QCOMPARE(finished.front().front().toBool(), false);
        QVERIFY(!pc->isPlanning());
        QVERIFY(pc->planButton()->isEnabled());
        QCOMPARE(pw.w.statusBar()->currentMessage(), QStringLiteral("Planning cancelled"));
        QTest::qWait(500);  // the planner's late result is dropped
        QVERIFY(!pc->result());
        QCOMPARE(finished.count(), 1);
    }

    void ganttOfTenThousandBarsStaysResponsive() {
        const auto plan = syntheticPlan(10000, 4);
        PlanGantt g;
        g.resize(1200, 320);
        g.show();
        QVERIFY(QTest::qWaitForWindowExposed(&g));
        QElapsedTimer clock;
        clock.start();
        g.setPlan(plan);
        const QImage whole = g.viewport()->grab().toImage();
        const qint64 fitted_ms = clock.elapsed();
        QCOMPARE(g.rowCount(), 4);
        for (int d = 0; d < 4; ++d) {
            QCOMPARE(g.barCount(d, plan::Stream::compute), 1250);
            QCOMPARE(g.barCount(d, plan::Stream::communication), 1250);
        }
        // Zoomed in 200× about the middle: a few bars in view, each hit where it is drawn.
        clock.restart();
        g.zoomBy(200, g.viewport()->width() / 2.0);
        g.viewport()->grab();
        const qint64 zoomed_ms = clock.elapsed();
        QVERIFY(g.visibleEnd() - g.visibleStart() < plan->prediction.makespan / 100);
        int hits = 0;
        for (int i = 0; i < g.barCount(1, plan::Stream::compute); ++i) {
            const QRect r = g.barRect(1, plan::Stream::compute, i);
            if (r.width() < 4 || !g.plotRect().contains(r.center())) continue;
            QCOMPARE(g.stepAt(r.center()), g.barStep(1, plan::Stream::compute, i));
            ++hits;
        }
        QVERIFY(hits > 0);
        g.fit();
        QVERIFY(g.visibleEnd() >= plan->prediction.makespan);
        qInfo("10,000 bars: set + paint %lld ms fitted, %lld ms zoomed", fitted_ms, zoomed_ms);
        QVERIFY2(fitted_ms < 1000 && zoomed_ms < 500, "painting 10,000 bars stays interactive");
        QVERIFY(!whole.isNull());
    }
};

QTEST_MAIN(TestPlanDock)
#include "test_plan_dock.moc"
