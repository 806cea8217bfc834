#include "stages_controller.h"

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QStatusBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "canvas_controller.h"
#include "dock.h"
#include "session_controller.h"
#include "views/graph_scene.h"
#include "views/pipeline_worker.h"
#include "views/session_versions.h"
#include "views/shard_map.h"
#include "views/stage_compare.h"
#include "views/stage_timeline.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

struct RestoredStages {
    std::vector<Stage> stages;
    QString passes, specs;
    bool numeric = false;
    QString error;
};

// The last pipeline kept in a session project: the newest editor version with
// stages recorded on it. Runs on a worker thread.
RestoredStages readStages(store::Session &session, qint64 project) {
    RestoredStages out;
    auto versions = session.versions(project);
    if (!versions) return out;
    for (auto v = versions->rbegin(); v != versions->rend(); ++v) {
        auto records = session.stages(v->id);
        if (!records || records->empty()) continue;
        for (const store::StageRecord &r : *records) {
            auto g = session.load_version(r.graph_version_id);
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
}

// Writes a pipeline's stages on the version they ran on (saving that graph first
// when the latest version is not it). Runs on a worker thread.
QPair<qint64, QString> writeStages(store::Session &session, qint64 project, const QString &name, const QString &file,
                                   const std::vector<Stage> &stages, const std::string &options_json) {
    const views::VersionHolding held = views::versionHolding(session, project, name, file, stages.front().graph);
    if (!held.error.isEmpty()) return qMakePair(held.project, held.error);
    project = held.project;
    const store::VersionId version = held.version;
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
        auto added = session.add_stage(record, s.graph);
        if (!added) return qMakePair(project, qs(added.error().message));
    }
    return qMakePair(project, QString());
}

}  // namespace

StagesController::StagesController(GraphDocument *doc, CanvasController *canvas, SessionController *session,
                                   QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), canvas_(canvas), session_(session), status_(status), window_(window) {
    pipeline_ = new views::PipelineWorker(this);
    createDocks(window);
    createActions();

    connect(timeline_, &views::StageTimeline::compareRequested, this,
            [this](int left, int right) { compareStages(left, right); });
    connect(timeline_, &views::StageTimeline::runRequested, this, [this] { startPipeline(); });
    connect(timeline_, &views::StageTimeline::cancelRequested, this, &StagesController::cancelPipeline);
    connect(timeline_, &views::StageTimeline::currentStageChanged, this, [this](int k) {
        if (!syncing_) showStage(k);
    });
    connect(timeline_, &views::StageTimeline::applyRequested, this, [this](int k) { applyStage(k); });
    connect(pipeline_, &views::PipelineWorker::progress, this,
            [this](quint64 job, int done, int total, const QString &phase) {
                if (job != pipeline_->currentJob()) return;
                timeline_->setProgress(done, total, phase);
                status_->showMessage(tr("Pipeline: %1…").arg(phase));
            });
    connect(pipeline_, &views::PipelineWorker::finished, this, &StagesController::onPipelineFinished);
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) { onDocumentChanged(what); });
    // The shard map shows the tensor selected on the canvas, in the graph it shows.
    views::GraphScene *scene = canvas_->scene();
    connect(scene, &views::GraphScene::nodeSelected, this, [this, scene](const QString &id) {
        if (id.isEmpty() || !scene->graph().find_tensor(TensorId(id.toStdString()))) return;
        shard_map_->setGraph(scene->graph());
        shard_map_->setTensor(id);
    });
    updateActions();
}

StagesController::~StagesController() = default;

void StagesController::createDocks(QWidget *window) {
    timeline_ = new views::StageTimeline(window);
    stages_dock_ = makeDock(tr("Stages"), "stagesDock", timeline_, window, DockContent::scrolls);
    stages_dock_->toggleViewAction()->setShortcut(QKeySequence(tr("Ctrl+Shift+T")));
    shard_map_ = new views::ShardMapWidget(window);
    shard_map_dock_ = makeDock(tr("Shard Map"), "shardMapDock", shard_map_, window, DockContent::scrolls);
}

void StagesController::createActions() {
    auto make = [this](const QString &text, const char *name, const QString &tip) {
        auto *a = new QAction(text, this);
        a->setObjectName(QString::fromLatin1(name));
        a->setStatusTip(tip);
        return a;
    };
    next_stage_action_ =
        make(tr("&Next Stage"), "actionNextStage", tr("Show the next stage of the pipeline on the canvas"));
    next_stage_action_->setShortcut(QKeySequence(tr("Alt+Right")));
    connect(next_stage_action_, &QAction::triggered, this, [this] { stepStage(1); });
    previous_stage_action_ =
        make(tr("&Previous Stage"), "actionPreviousStage", tr("Show the previous stage of the pipeline on the canvas"));
    previous_stage_action_->setShortcut(QKeySequence(tr("Alt+Left")));
    connect(previous_stage_action_, &QAction::triggered, this, [this] { stepStage(-1); });
    apply_stage_action_ =
        make(tr("&Apply Stage"), "actionApplyStage", tr("Make the stage shown the document's graph (one undo step)"));
    connect(apply_stage_action_, &QAction::triggered, this, [this] {
        if (doc_->shownStage() >= 0) applyStage(doc_->shownStage());
    });
    toggle_shards_action_ = make(tr("E&xpand / Collapse Shards"), "actionToggleShards",
                                 tr("Draw the selected sharded operations as their shards, or as one node"));
    toggle_shards_action_->setShortcut(QKeySequence(Qt::Key_X));
    connect(toggle_shards_action_, &QAction::triggered, this, [this] {
        views::GraphScene *scene = canvas_->scene();
        for (const QString &id : scene->selectedNodeIds()) scene->setShardsExpanded(id, !scene->shardsExpanded(id));
    });
    expand_all_action_ = make(tr("Expand &All Shards"), "actionExpandAllShards", {});
    expand_all_action_->setShortcut(QKeySequence(tr("Shift+X")));
    expand_all_action_->setCheckable(true);
    connect(expand_all_action_, &QAction::toggled, this,
            [this](bool on) { canvas_->scene()->setAllShardsExpanded(on); });
    run_pipeline_action_ = make(tr("Run &Pipeline"), "actionRunPipeline",
                                tr("Run the Stages dock's passes on the graph, off the GUI thread"));
    connect(run_pipeline_action_, &QAction::triggered, this, [this] {
        stages_dock_->show();
        stages_dock_->raise();
        startPipeline();
    });
}

void StagesController::updateActions() {
    const int n = static_cast<int>(doc_->stages().size());
    const int shown = doc_->shownStage();
    next_stage_action_->setEnabled(n > 0 && shown + 1 < n);
    previous_stage_action_->setEnabled(n > 0 && shown > 0);
    apply_stage_action_->setEnabled(shown >= 0 && !pipeline_->isRunning());
}

void StagesController::onDocumentChanged(GraphDocument::Changes what) {
    if (what & GraphDocument::Replaced) {
        if (pipeline_->isRunning()) pipeline_->cancel();
        timeline_->clearStages();
        restored_for_ = -1;
    }
    if (what & (GraphDocument::Structure | GraphDocument::Params)) timeline_->setGraph(doc_->graph());
    if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages)) {
        timeline_->setAppliedStage(doc_->heldStage());
        if (doc_->shownStage() >= 0) {
            syncing_ = true;
            timeline_->setCurrentStage(doc_->shownStage());
            syncing_ = false;
        }
        shard_map_->setGraph(doc_->shownGraph());
        updateActions();
    }
}

// ---- running -------------------------------------------------------------------

bool StagesController::isPipelineRunning() const {
    return pipeline_->isRunning();
}

bool StagesController::startPipeline() {
    if (pipeline_->isRunning() || !doc_->isOpen() || doc_->graph().node_count() == 0) return false;
    timeline_->setGraph(doc_->graph());
    const QString error = timeline_->validate();
    if (!error.isEmpty()) {
        status_->showMessage(tr("Pipeline not run: %1").arg(error), 10000);
        return false;
    }
    views::PipelineRequest request;
    request.graph = doc_->graph();
    views::PipelineWorker::parsePasses(timeline_->passesText(), &request.passes);
    request.shard_specs = timeline_->specsText().simplified();
    request.numeric = timeline_->numeric();
    request.seed = 1;
    request.threads = 2;
    if (pipeline_->start(std::move(request)) == 0) return false;
    timeline_->setRunning(true);
    timeline_->showMessage(QString());
    status_->showMessage(tr("Running the pipeline on %1…").arg(doc_->source().name));
    updateActions();
    return true;
}

void StagesController::cancelPipeline() {
    if (!pipeline_->isRunning()) return;
    pipeline_->cancel();  // reports `cancelled` at once; the worker stops at its next polling point
}

void StagesController::onPipelineFinished(quint64, const views::PipelineOutcome &outcome) {
    timeline_->setRunning(false);
    QString refusal;
    if (outcome.cancelled) {
        timeline_->showMessage(tr("Pipeline cancelled; the stages listed are the last run's."));
        status_->showMessage(tr("Pipeline cancelled"), 8000);
    } else if (!outcome.ok) {
        refusal = tr("Pipeline failed: %1").arg(outcome.error);
        status_->showMessage(refusal, 15000);
    } else if (!views::sameGraph(outcome.stages.front().graph, doc_->graph())) {
        // The document was edited while the pipeline ran: its stages start elsewhere.
        refusal = tr("The graph changed while the pipeline ran; run it again.");
    }
    if (outcome.cancelled || !outcome.ok || !refusal.isEmpty()) {
        if (!refusal.isEmpty()) timeline_->showMessage(refusal, true);
        updateActions();
        emit pipelineFinished(false);
        return;
    }
    int failed = 0;
    for (const Stage &s : outcome.stages) failed += s.certificate.certified() && !s.certificate.pass();
    const int n = static_cast<int>(outcome.stages.size());
    const QString result =
        tr("%1 in %2 ms; ").arg(countText(n, tr("stage"), tr("stages"))).arg(outcome.milliseconds, 0, 'f', 0) +
        (failed == 0 ? tr("every certificate passes")
                     : tr("%1 FAIL").arg(countText(failed, tr("certificate"), tr("certificates"))));
    timeline_->setStages(outcome.stages, result);
    doc_->setStages(outcome.stages, n - 1);
    announceStage(n - 1);
    stages_dock_->show();
    stages_dock_->raise();
    saveStages(outcome.stages, outcome.options);
    updateActions();
    emit pipelineFinished(true);
}

// ---- showing and applying stages ---------------------------------------------------

bool StagesController::showStage(int k) {
    if (!doc_->showStage(k)) return false;
    announceStage(k);
    return true;
}

void StagesController::announceStage(int k) {
    const Stage &stage = doc_->stages()[static_cast<size_t>(k)];
    QString line =
        tr("Stage %1/%2 — %3: %4").arg(k).arg(doc_->stages().size() - 1).arg(qs(stage.pass), qs(stage.summary));
    if (!doc_->showsDocument()) line += tr(" (read-only; Apply Stage to edit it)");
    status_->showMessage(line);
    emit stageShown(k);
}

void StagesController::stepStage(int delta) {
    const int n = static_cast<int>(doc_->stages().size());
    if (n == 0) return;
    const int shown = doc_->shownStage();
    const int from = shown < 0 ? (delta > 0 ? -1 : n) : shown;
    const int to = std::clamp(from + delta, 0, n - 1);
    if (to != shown) showStage(to);
}

QString StagesController::applyStage(int k) {
    const QString why = pipeline_->isRunning() ? tr("the pipeline is still running") : QString();
    const bool already = k == doc_->heldStage();
    const QString refused = why.isEmpty() ? doc_->applyStage(k) : why;
    if (!refused.isEmpty()) {
        status_->showMessage(tr("Stage not applied: %1").arg(refused), 10000);
        return refused;
    }
    const Stage &stage = doc_->stages()[static_cast<size_t>(k)];
    if (already)
        status_->showMessage(tr("Stage %1 is already the document's graph").arg(k), 5000);
    else
        status_->showMessage(tr("Applied stage %1 (%2): %3").arg(k).arg(qs(stage.pass), qs(stage.summary)), 8000);
    return {};
}

QDialog *StagesController::compareStages(int left, int right) {
    const std::vector<Stage> &stages = doc_->stages();
    const int n = static_cast<int>(stages.size());
    if (left < 0 || right < 0 || left >= n || right >= n) return nullptr;
    if (!compare_dialog_) {
        compare_dialog_ = new QDialog(window_);
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
            const std::vector<Stage> &all = doc_->stages();
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

void StagesController::saveStages(const std::vector<Stage> &stages, const QString &options) {
    if (!session_->session() || stages.empty()) return;
    std::shared_ptr<store::Session> session = session_->sharedSession();
    const qint64 known_project = session_->projectId();
    const QString name = doc_->source().name.isEmpty() ? tr("untitled") : doc_->source().name;
    const QString file = doc_->source().path;
    QJsonObject opts{{QStringLiteral("passes"), timeline_->passesText().simplified()},
                     {QStringLiteral("specs"), timeline_->specsText().simplified()},
                     {QStringLiteral("numeric"), timeline_->numeric()},
                     {QStringLiteral("run"), options}};
    const std::string options_json = QJsonDocument(opts).toJson(QJsonDocument::Compact).toStdString();
    auto *watcher = new QFutureWatcher<QPair<qint64, QString>>(this);
    connect(watcher, &QFutureWatcher<QPair<qint64, QString>>::finished, this, [this, watcher] {
        const auto [project, error] = watcher->result();
        watcher->deleteLater();
        if (error.isEmpty()) session_->adoptProject(project);
        if (!error.isEmpty()) status_->showMessage(tr("Stages not saved in the session: %1").arg(error), 15000);
        restored_for_ = session_->projectId();  // what the session holds is what the dock lists
        emit stagesSaved(error);
    });
    // Off the GUI thread, like the document's saves: the stage graphs are shared nodes.
    watcher->setFuture(QtConcurrent::run([session, known_project, name, file, stages, options_json] {
        return writeStages(*session, known_project, name, file, stages, options_json);
    }));
}

void StagesController::restoreStages() {
    const qint64 project = session_->projectId();
    if (!session_->session() || project == 0 || restored_for_ == project || !doc_->stages().empty() ||
        pipeline_->isRunning())
        return;
    restored_for_ = project;
    std::shared_ptr<store::Session> session = session_->sharedSession();
    auto *watcher = new QFutureWatcher<RestoredStages>(this);
    connect(watcher, &QFutureWatcher<RestoredStages>::finished, this, [this, watcher, project] {
        RestoredStages restored = watcher->result();
        watcher->deleteLater();
        if (project != session_->projectId() || restored.stages.empty() || !doc_->stages().empty()) return;
        bool holds = false;
        for (const Stage &s : restored.stages) holds |= views::sameGraph(s.graph, doc_->graph());
        if (!holds) return;  // the document moved on since that pipeline: its stages do not apply
        timeline_->setPasses(restored.passes.isEmpty() ? QStringLiteral("shard") : restored.passes);
        timeline_->setSpecs(restored.specs);
        timeline_->setNumeric(restored.numeric);
        timeline_->setStages(restored.stages, tr("The last pipeline, from the session"));
        doc_->setStages(std::move(restored.stages));  // shows the stage the document holds
        emit stagesRestored(static_cast<int>(doc_->stages().size()));
    });
    watcher->setFuture(QtConcurrent::run([session, project] { return readStages(*session, project); }));
}

}  // namespace tapestry::studio
