// The Stages half of the main window (issue 5, DESIGN.md §5, §9): the Stages dock,
// the pass pipeline run off the GUI thread with Cancel, stepping through stages on
// the canvas with diff colouring, applying a stage as one undo step, collapse /
// expand of sharded operations, and the stages kept in the session.
//
// Decisions: the canvas shows the selected stage; it is editable only while that
// stage's graph is the document's graph (stage 0 right after a run, or the stage
// last applied), read-only otherwise — "Apply Stage" makes a stage editable. Any
// edit of the document brings the canvas back to the document. Apply is refused
// when the document was edited after the run (the stages no longer start from it).
#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QUndoCommand>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "graph/delta.h"
#include "main_window.h"
#include "views/graph_document.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/minimap.h"
#include "views/pipeline_worker.h"
#include "views/shard_map.h"
#include "views/stage_compare.h"
#include "views/stage_timeline.h"

namespace tapestry::studio {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// Applying a stage: one recorded delta, document graph → stage graph.
class ApplyStageCommand : public QUndoCommand {
public:
    ApplyStageCommand(views::GraphDocument *doc, const QString &text, GraphDelta delta)
        : QUndoCommand(text), doc_(doc), delta_(std::move(delta)) {}
    void redo() override { doc_->applyDelta(delta_, true, {}); }
    void undo() override { doc_->applyDelta(delta_, false, {}); }

private:
    views::GraphDocument *doc_;
    GraphDelta delta_;
};

// The delta that turns `from` into `to`, recorded by the engine's rewriter.
GraphDelta deltaBetween(const Graph &from, const Graph &to) {
    Graph g = from;
    RecordingRewriter rw(g);
    for (const OpPtr &op : from.operations())
        if (!to.find_op(op->id)) rw.remove_op(op->id);
    for (const TensorPtr &t : from.tensors())
        if (!to.find_tensor(t->id)) rw.remove_tensor(t->id);
    for (const TensorPtr &t : to.tensors()) rw.put_tensor(t);
    for (const OpPtr &op : to.operations()) rw.put_op(op);
    return rw.take();
}

// A stage's failed checks as issues on its nodes, so the canvas rings them.
std::vector<Issue> certificateIssues(const Certificate &c) {
    std::vector<Issue> out;
    for (const CertificateCheck &check : c.checks) {
        if (check.pass) continue;
        for (size_t i = 0; i < check.findings.size(); ++i) {
            Issue issue;
            issue.severity = Severity::error;
            issue.code = check.name;
            issue.message = check.findings[i];
            if (i < check.nodes.size()) issue.node = check.nodes[i];
            out.push_back(std::move(issue));
        }
    }
    return out;
}

struct RestoredStages {
    std::vector<Stage> stages;
    QString passes, specs;
    bool numeric = false;
    QString error;
};

}  // namespace

// ---- construction --------------------------------------------------------------

void MainWindow::createStages() {
    stages_ = new views::StageTimeline(this);
    stages_dock_ = new QDockWidget(tr("Stages"), this);
    stages_dock_->setObjectName(QStringLiteral("stagesDock"));
    stages_dock_->setWidget(stages_);
    addDockWidget(Qt::RightDockWidgetArea, stages_dock_);
    tabifyDockWidget(run_dock_, stages_dock_);
    run_dock_->raise();
    pipeline_ = new views::PipelineWorker(this);

    // The tensor shard map of the graph on the canvas, for the selected tensor.
    shard_map_ = new views::ShardMapWidget(this);
    shard_map_dock_ = new QDockWidget(tr("Shard Map"), this);
    shard_map_dock_->setObjectName(QStringLiteral("shardMapDock"));
    shard_map_dock_->setWidget(shard_map_);
    addDockWidget(Qt::RightDockWidgetArea, shard_map_dock_);
    tabifyDockWidget(stages_dock_, shard_map_dock_);
    run_dock_->raise();
    connect(scene_, &views::GraphScene::nodeSelected, this, [this](const QString &id) {
        if (id.isEmpty() || !scene_->graph().find_tensor(TensorId(id.toStdString()))) return;
        shard_map_->setGraph(scene_->graph());
        shard_map_->setTensor(id);
    });
    connect(stages_, &views::StageTimeline::compareRequested, this,
            [this](int left, int right) { compareStages(left, right); });

    connect(stages_, &views::StageTimeline::runRequested, this, [this] { startPipeline(); });
    connect(stages_, &views::StageTimeline::cancelRequested, this, &MainWindow::cancelPipeline);
    connect(stages_, &views::StageTimeline::currentStageChanged, this, [this](int k) {
        if (!syncing_stage_) showStage(k);
    });
    connect(stages_, &views::StageTimeline::applyRequested, this, [this](int k) { applyStage(k); });
    connect(pipeline_, &views::PipelineWorker::progress, this,
            [this](quint64 job, int done, int total, const QString &phase) {
                if (job != pipeline_->currentJob()) return;
                stages_->setProgress(done, total, phase);
                statusBar()->showMessage(tr("Pipeline: %1…").arg(phase));
            });
    connect(pipeline_, &views::PipelineWorker::finished, this, &MainWindow::onPipelineFinished);
    // Connected after the window's own handler: by then the scene shows the edit.
    connect(doc_, &views::GraphDocument::edited, this, [this] { afterDocumentEdit(); });
    connect(doc_, &views::GraphDocument::documentReset, this, [this] {
        if (pipeline_->isRunning()) pipeline_->cancel();
        stages_->clearStages();
        shown_stage_ = -1;
        canvas_on_stage_ = false;
        stages_restored_for_ = -1;
        stages_->setGraph(doc_->graph());
    });
    connect(this, &MainWindow::layoutReady, this, &MainWindow::restoreStages);

    // ---- actions
    stages_dock_->toggleViewAction()->setShortcut(QKeySequence(tr("Ctrl+Shift+T")));
    next_stage_action_ = new QAction(tr("&Next Stage"), this);
    next_stage_action_->setObjectName(QStringLiteral("actionNextStage"));
    next_stage_action_->setShortcut(QKeySequence(tr("Alt+Right")));
    next_stage_action_->setStatusTip(tr("Show the next stage of the pipeline on the canvas"));
    connect(next_stage_action_, &QAction::triggered, this, [this] { stepStage(1); });
    previous_stage_action_ = new QAction(tr("&Previous Stage"), this);
    previous_stage_action_->setObjectName(QStringLiteral("actionPreviousStage"));
    previous_stage_action_->setShortcut(QKeySequence(tr("Alt+Left")));
    previous_stage_action_->setStatusTip(tr("Show the previous stage of the pipeline on the canvas"));
    connect(previous_stage_action_, &QAction::triggered, this, [this] { stepStage(-1); });
    apply_stage_action_ = new QAction(tr("&Apply Stage"), this);
    apply_stage_action_->setObjectName(QStringLiteral("actionApplyStage"));
    apply_stage_action_->setStatusTip(tr("Make the stage shown the document's graph (one undo step)"));
    connect(apply_stage_action_, &QAction::triggered, this, [this] {
        if (shown_stage_ >= 0) applyStage(shown_stage_);
    });
    toggle_shards_action_ = new QAction(tr("E&xpand / Collapse Shards"), this);
    toggle_shards_action_->setObjectName(QStringLiteral("actionToggleShards"));
    toggle_shards_action_->setShortcut(QKeySequence(Qt::Key_X));
    toggle_shards_action_->setStatusTip(tr("Draw the selected sharded operations as their shards, or as one node"));
    connect(toggle_shards_action_, &QAction::triggered, this, [this] {
        for (const QString &id : scene_->selectedNodeIds()) scene_->setShardsExpanded(id, !scene_->shardsExpanded(id));
    });
    expand_all_action_ = new QAction(tr("Expand &All Shards"), this);
    expand_all_action_->setObjectName(QStringLiteral("actionExpandAllShards"));
    expand_all_action_->setShortcut(QKeySequence(tr("Shift+X")));
    expand_all_action_->setCheckable(true);
    connect(expand_all_action_, &QAction::toggled, this, [this](bool on) { scene_->setAllShardsExpanded(on); });
    run_pipeline_action_ = new QAction(tr("Run &Pipeline"), this);
    run_pipeline_action_->setObjectName(QStringLiteral("actionRunPipeline"));
    run_pipeline_action_->setStatusTip(tr("Run the Stages dock's passes on the graph, off the GUI thread"));
    connect(run_pipeline_action_, &QAction::triggered, this, [this] {
        stages_dock_->show();
        stages_dock_->raise();
        startPipeline();
    });

    for (QAction *a : menuBar()->actions()) {
        if (!a->menu()) continue;
        if (a->text() == tr("&View")) {
            QMenu *view = a->menu();
            view->addSeparator();
            view->addAction(stages_dock_->toggleViewAction());
            view->addAction(shard_map_dock_->toggleViewAction());
            view->addAction(previous_stage_action_);
            view->addAction(next_stage_action_);
            view->addAction(apply_stage_action_);
            view->addAction(toggle_shards_action_);
            view->addAction(expand_all_action_);
        } else if (a->text() == tr("&Run")) {
            a->menu()->addSeparator();
            a->menu()->addAction(run_pipeline_action_);
        }
    }
    updateStageActions();
}

void MainWindow::updateStageActions() {
    const int n = stages_->stageCount();
    next_stage_action_->setEnabled(n > 0 && shown_stage_ + 1 < n);
    previous_stage_action_->setEnabled(n > 0 && shown_stage_ > 0);
    apply_stage_action_->setEnabled(shown_stage_ >= 0 && !pipeline_->isRunning());
}

// ---- running -------------------------------------------------------------------

bool MainWindow::isPipelineRunning() const {
    return pipeline_->isRunning();
}

bool MainWindow::startPipeline() {
    if (pipeline_->isRunning() || !project_.opened || doc_->graph().node_count() == 0) return false;
    stages_->setGraph(doc_->graph());
    const QString error = stages_->validate();
    if (!error.isEmpty()) {
        statusBar()->showMessage(tr("Pipeline not run: %1").arg(error), 10000);
        return false;
    }
    views::PipelineRequest request;
    request.graph = doc_->graph();
    views::PipelineWorker::parsePasses(stages_->passesText(), &request.passes);
    request.shard_specs = stages_->specsText().simplified();
    request.numeric = stages_->numeric();
    request.seed = 1;
    request.threads = 2;
    if (pipeline_->start(std::move(request)) == 0) return false;
    stages_->setRunning(true);
    stages_->showMessage(QString());
    statusBar()->showMessage(tr("Running the pipeline on %1…").arg(display_name_));
    updateStageActions();
    return true;
}

void MainWindow::cancelPipeline() {
    if (!pipeline_->isRunning()) return;
    pipeline_->cancel();  // reports `cancelled` at once; the worker stops at its next polling point
}

void MainWindow::onPipelineFinished(quint64, const views::PipelineOutcome &outcome) {
    stages_->setRunning(false);
    if (outcome.cancelled) {
        stages_->showMessage(tr("Pipeline cancelled; the stages listed are the last run's."));
        statusBar()->showMessage(tr("Pipeline cancelled"), 8000);
        updateStageActions();
        emit pipelineFinished(false);
        return;
    }
    if (!outcome.ok) {
        stages_->showMessage(tr("Pipeline failed: %1").arg(outcome.error), true);
        statusBar()->showMessage(tr("Pipeline failed: %1").arg(outcome.error), 15000);
        updateStageActions();
        emit pipelineFinished(false);
        return;
    }
    if (!views::sameGraph(outcome.stages.front().graph, doc_->graph())) {
        // The document was edited while the pipeline ran: its stages start elsewhere.
        stages_->showMessage(tr("The graph changed while the pipeline ran; run it again."), true);
        updateStageActions();
        emit pipelineFinished(false);
        return;
    }
    int failed = 0;
    for (const Stage &s : outcome.stages) failed += s.certificate.certified() && !s.certificate.pass();
    const int n = static_cast<int>(outcome.stages.size());
    const QString result =
        tr("%n stage(s) in %1 ms; ", nullptr, n).arg(outcome.milliseconds, 0, 'f', 0) +
        (failed == 0 ? tr("every certificate passes") : tr("%n certificate(s) FAIL", nullptr, failed));
    stages_->setStages(outcome.stages, result);
    stages_->setAppliedStage(0);
    shown_stage_ = -1;
    showStage(n - 1);
    stages_dock_->show();
    stages_dock_->raise();
    saveStages(outcome.stages, outcome.options);
    updateStageActions();
    emit pipelineFinished(true);
}

// ---- showing stages ------------------------------------------------------------

void MainWindow::syncCanvas(const Graph &g, const std::vector<Issue> &issues) {
    // Only the nodes that differ from what the canvas draws are redrawn, where
    // they were (new ones beside a neighbour).
    const GraphDelta::Summary s = views::diffGraphs(scene_->graph(), g).summary();
    QStringList touched;
    for (const auto *list : {&s.added, &s.removed, &s.changed})
        for (const std::string &id : *list) touched << qs(id);
    scene_->applyEdit(g, issues, touched, {});
    minimap_->sceneChanged();
}

bool MainWindow::showStage(int k) {
    const std::vector<Stage> &stages = stages_->stages();
    if (k < 0 || k >= static_cast<int>(stages.size())) return false;
    const Stage &stage = stages[static_cast<size_t>(k)];
    const bool is_document = views::sameGraph(stage.graph, doc_->graph());
    syncCanvas(stage.graph, is_document ? doc_->issues() : certificateIssues(stage.certificate));
    scene_->setDiffMarks(k == 0 ? QHash<QString, views::DiffMark>()
                                : views::diffMarks(stages[static_cast<size_t>(k) - 1].graph, stage.graph));
    scene_->setEditable(is_document);
    shard_map_->setGraph(stage.graph);
    canvas_on_stage_ = !is_document;
    shown_stage_ = k;
    {
        syncing_stage_ = true;
        stages_->setCurrentStage(k);
        syncing_stage_ = false;
    }
    QString line = tr("Stage %1/%2 — %3: %4").arg(k).arg(stages.size() - 1).arg(qs(stage.pass), qs(stage.summary));
    if (!is_document) line += tr(" (read-only; Apply Stage to edit it)");
    statusBar()->showMessage(line);
    updateStageActions();
    emit stageShown(k);
    return true;
}

void MainWindow::stepStage(int delta) {
    const int n = stages_->stageCount();
    if (n == 0) return;
    const int from = shown_stage_ < 0 ? (delta > 0 ? -1 : n) : shown_stage_;
    const int to = std::clamp(from + delta, 0, n - 1);
    if (to != shown_stage_) showStage(to);
}

void MainWindow::afterDocumentEdit() {
    // Which stage the document now holds (after an apply, its undo or redo).
    int holds = -1;
    const std::vector<Stage> &stages = stages_->stages();
    for (size_t k = 0; k < stages.size() && holds < 0; ++k)
        if (views::sameGraph(stages[k].graph, doc_->graph())) holds = static_cast<int>(k);
    stages_->setAppliedStage(holds);
    stages_->setGraph(doc_->graph());
    shard_map_->setGraph(doc_->graph());
    if (canvas_on_stage_) syncCanvas(doc_->graph(), doc_->issues());
    canvas_on_stage_ = false;
    scene_->setEditable(true);
    if (holds >= 0) {
        // The canvas shows the stage the document holds, marked against its predecessor.
        shown_stage_ = holds;
        scene_->setDiffMarks(holds == 0 ? QHash<QString, views::DiffMark>()
                                        : views::diffMarks(stages[static_cast<size_t>(holds) - 1].graph,
                                                           stages[static_cast<size_t>(holds)].graph));
        syncing_stage_ = true;
        stages_->setCurrentStage(holds);
        syncing_stage_ = false;
    } else {
        shown_stage_ = -1;
        scene_->setDiffMarks({});
    }
    updateStageActions();
}

QString MainWindow::applyStage(int k) {
    const std::vector<Stage> &stages = stages_->stages();
    QString why;
    if (pipeline_->isRunning())
        why = tr("the pipeline is still running");
    else if (k < 0 || k >= static_cast<int>(stages.size()))
        why = tr("there is no stage %1").arg(k);
    if (why.isEmpty()) {
        bool holds_a_stage = false;
        for (const Stage &s : stages) holds_a_stage |= views::sameGraph(s.graph, doc_->graph());
        if (!holds_a_stage) why = tr("the graph was edited after the pipeline ran; run it again");
    }
    if (!why.isEmpty()) {
        statusBar()->showMessage(tr("Stage not applied: %1").arg(why), 10000);
        return why;
    }
    const Stage &stage = stages[static_cast<size_t>(k)];
    if (views::sameGraph(stage.graph, doc_->graph())) {
        statusBar()->showMessage(tr("Stage %1 is already the document's graph").arg(k), 5000);
        showStage(k);
        return {};
    }
    // The canvas goes back to the document first, so the edit redraws what changes.
    if (canvas_on_stage_) {
        syncCanvas(doc_->graph(), doc_->issues());
        canvas_on_stage_ = false;
    }
    GraphDelta delta = deltaBetween(doc_->graph(), stage.graph);
    doc_->undoStack()->push(
        new ApplyStageCommand(doc_, tr("Apply stage %1 (%2)").arg(k).arg(qs(stage.pass)), std::move(delta)));
    statusBar()->showMessage(tr("Applied stage %1 (%2): %3").arg(k).arg(qs(stage.pass), qs(stage.summary)), 8000);
    return {};
}

QDialog *MainWindow::compareStages(int left, int right) {
    const std::vector<Stage> &stages = stages_->stages();
    const int n = static_cast<int>(stages.size());
    if (left < 0 || right < 0 || left >= n || right >= n) return nullptr;
    if (!compare_dialog_) {
        compare_dialog_ = new QDialog(this);
        compare_dialog_->setObjectName(QStringLiteral("stageCompareDialog"));
        compare_dialog_->setWindowTitle(tr("Compare Stages"));
        compare_dialog_->resize(1300, 800);
        auto *column = new QVBoxLayout(compare_dialog_);
        auto *row = new QHBoxLayout;
        compare_left_ = new QComboBox(compare_dialog_);
        compare_left_->setObjectName(QStringLiteral("compareLeft"));
        compare_right_ = new QComboBox(compare_dialog_);
        compare_right_->setObjectName(QStringLiteral("compareRight"));
        row->addWidget(new QLabel(tr("Left:"), compare_dialog_));
        row->addWidget(compare_left_, 1);
        row->addWidget(new QLabel(tr("Right:"), compare_dialog_));
        row->addWidget(compare_right_, 1);
        column->addLayout(row);
        compare_view_ = new views::StageCompareView(compare_dialog_);
        column->addWidget(compare_view_, 1);
        auto chosen = [this] {
            const std::vector<Stage> &all = stages_->stages();
            const int a = compare_left_->currentIndex(), b = compare_right_->currentIndex();
            if (a < 0 || b < 0 || a >= static_cast<int>(all.size()) || b >= static_cast<int>(all.size())) return;
            compare_view_->setStages(all[static_cast<size_t>(a)], a, all[static_cast<size_t>(b)], b);
        };
        connect(compare_left_, &QComboBox::activated, compare_dialog_, chosen);
        connect(compare_right_, &QComboBox::activated, compare_dialog_, chosen);
    }
    for (QComboBox *box : {compare_left_, compare_right_}) {
        const QSignalBlocker block(box);
        box->clear();
        for (int k = 0; k < n; ++k)
            box->addItem(views::StageCompareView::stageTitle(stages[static_cast<size_t>(k)], k));
    }
    compare_left_->setCurrentIndex(left);
    compare_right_->setCurrentIndex(right);
    compare_view_->setStages(stages[static_cast<size_t>(left)], left, stages[static_cast<size_t>(right)], right);
    compare_dialog_->show();
    compare_dialog_->raise();
    return compare_dialog_;
}

// ---- the session ---------------------------------------------------------------

void MainWindow::saveStages(const std::vector<Stage> &stages, const QString &options) {
    if (!session_ || stages.empty()) return;
    std::shared_ptr<store::Session> session = session_;
    const qint64 known_project = project_id_;
    const QString name = display_name_.isEmpty() ? tr("untitled") : display_name_;
    QJsonObject opts{{QStringLiteral("passes"), stages_->passesText().simplified()},
                     {QStringLiteral("specs"), stages_->specsText().simplified()},
                     {QStringLiteral("numeric"), stages_->numeric()},
                     {QStringLiteral("run"), options}};
    const std::string options_json = QJsonDocument(opts).toJson(QJsonDocument::Compact).toStdString();
    auto *watcher = new QFutureWatcher<QPair<qint64, QString>>(this);
    connect(watcher, &QFutureWatcher<QPair<qint64, QString>>::finished, this, [this, watcher] {
        const auto [project, error] = watcher->result();
        watcher->deleteLater();
        if (error.isEmpty() && project_id_ == 0) project_id_ = project;
        if (!error.isEmpty()) statusBar()->showMessage(tr("Stages not saved in the session: %1").arg(error), 15000);
        stages_restored_for_ = project_id_;  // what the session holds is what the dock lists
        emit stagesSaved(error);
    });
    // Off the GUI thread, like saveToSession: the stage graphs are shared nodes.
    watcher->setFuture(QtConcurrent::run([session, known_project, name, stages, options_json] {
        qint64 project = known_project;
        const Graph &original = stages.front().graph;
        store::VersionId version = 0;
        if (project != 0) {
            auto info = session->project(project);
            auto latest = session->load_latest(project);
            if (info && latest && views::sameGraph(*latest, original)) version = info->latest_version_id;
        }
        if (version == 0) {
            // The graph the pipeline ran on is not saved yet: it becomes a version now.
            if (project == 0) {
                auto created = session->create_project(name.toStdString());
                if (!created) return qMakePair(qint64(0), qs(created.error().message));
                project = *created;
            }
            auto saved = session->save_version(project, original, "autosave");
            if (!saved) return qMakePair(project, qs(saved.error().message));
            version = saved->id;
        }
        for (size_t k = 0; k < stages.size(); ++k) {
            const Stage &s = stages[k];
            store::StageRecord record;
            record.version_id = version;
            record.ordinal = static_cast<int>(k);
            record.pass_name = s.pass;
            record.options_json = options_json;
            record.summary = s.summary;
            record.diff_json = views::diffToJson(k == 0 ? GraphDelta() : views::diffGraphs(s.input, s.graph));
            record.certificate_json = views::certificateToJson(s.certificate);
            auto added = session->add_stage(record, s.graph);
            if (!added) return qMakePair(project, qs(added.error().message));
        }
        return qMakePair(project, QString());
    }));
}

void MainWindow::restoreStages() {
    if (!session_ || project_id_ == 0 || stages_restored_for_ == project_id_ || stages_->stageCount() > 0 ||
        pipeline_->isRunning())
        return;
    stages_restored_for_ = project_id_;
    std::shared_ptr<store::Session> session = session_;
    const qint64 project = project_id_;
    auto *watcher = new QFutureWatcher<RestoredStages>(this);
    connect(watcher, &QFutureWatcher<RestoredStages>::finished, this, [this, watcher, project] {
        RestoredStages restored = watcher->result();
        watcher->deleteLater();
        if (project != project_id_ || restored.stages.empty() || stages_->stageCount() > 0) return;
        bool holds = false;
        for (const Stage &s : restored.stages) holds |= views::sameGraph(s.graph, doc_->graph());
        if (!holds) return;  // the document moved on since that pipeline: its stages do not apply
        stages_->setPasses(restored.passes.isEmpty() ? QStringLiteral("shard") : restored.passes);
        stages_->setSpecs(restored.specs);
        stages_->setNumeric(restored.numeric);
        stages_->setStages(restored.stages, tr("The last pipeline, from the session"));
        afterDocumentEdit();  // marks the stage the document holds and shows it
        emit stagesRestored(static_cast<int>(restored.stages.size()));
    });
    watcher->setFuture(QtConcurrent::run([session, project] {
        RestoredStages out;
        auto versions = session->versions(project);
        if (!versions) return out;
        // The newest editor version with stages recorded on it holds the last pipeline.
        for (auto v = versions->rbegin(); v != versions->rend(); ++v) {
            auto records = session->stages(v->id);
            if (!records || records->empty()) continue;
            for (const store::StageRecord &r : *records) {
                auto g = session->load_version(r.graph_version_id);
                if (!g) {
                    out.stages.clear();
                    out.error = qs(g.error().message);
                    return out;
                }
                Stage s;
                s.pass = r.pass_name;
                s.summary = r.summary;
                s.graph = *g;
                s.input = out.stages.empty() ? *g : out.stages.back().graph;
                s.diff = views::diffGraphs(s.input, s.graph);
                s.certificate = views::certificateFromJson(r.certificate_json);
                const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(r.options_json)).object();
                out.passes = o.value(QStringLiteral("passes")).toString();
                out.specs = o.value(QStringLiteral("specs")).toString();
                out.numeric = o.value(QStringLiteral("numeric")).toBool();
                s.options = r.ordinal == 0 ? std::string() : out.specs.toStdString();
                out.stages.push_back(std::move(s));
            }
            break;
        }
        return out;
    }));
}

}  // namespace tapestry::studio
