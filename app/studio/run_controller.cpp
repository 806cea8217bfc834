#include "run_controller.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QToolButton>
#include <QtConcurrent/QtConcurrentRun>

#include "dock.h"
#include "io/tensor_values.h"
#include "views/outputs_panel.h"
#include "views/run_panel.h"

namespace tapestry::studio {

using views::GraphDocument;

RunController::RunController(GraphDocument *doc, QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), status_(status), window_(window) {
    worker_ = new views::RunWorker(this);
    run_panel_ = new views::RunPanel(window);
    run_dock_ = makeDock(tr("Run"), "runDock", run_panel_, window, DockContent::scrolls);
    outputs_ = new views::OutputsPanel(window);
    outputs_dock_ = makeDock(tr("Outputs"), "outputsDock", outputs_, window, DockContent::scrolls);

    progress_ = new QProgressBar(window);
    progress_->setObjectName(QStringLiteral("runStatusProgress"));
    progress_->setFixedWidth(150);
    progress_->setMaximumHeight(14);
    progress_->setTextVisible(false);
    progress_->hide();
    createActions(window);
    cancel_button_ = new QToolButton(window);
    cancel_button_->setObjectName(QStringLiteral("runStatusCancel"));
    cancel_button_->setDefaultAction(cancel_action_);
    cancel_button_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    cancel_button_->setAutoRaise(true);
    cancel_button_->hide();
    status_->addPermanentWidget(progress_);
    status_->addPermanentWidget(cancel_button_);

    connect(worker_, &views::RunWorker::progress, this, &RunController::onProgress);
    connect(worker_, &views::RunWorker::finished, this, &RunController::onFinished);
    connect(outputs_, &views::OutputsPanel::saveRequested, this, &RunController::saveOutputsDialog);
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) { onDocumentChanged(what); });
    updateActions();
}

RunController::~RunController() {
    worker_->cancel();
}

void RunController::createActions(QWidget *window) {
    run_action_ = new QAction(views::runActionIcon(QStringLiteral("run")), tr("&Run"), this);
    run_action_->setShortcut(QKeySequence(tr("Ctrl+R")));
    run_action_->setObjectName(QStringLiteral("actionRun"));
    run_action_->setStatusTip(tr("Run the graph on the CPU with the Run panel's inputs"));
    connect(run_action_, &QAction::triggered, this, [this] { start(views::RunMode::run); });
    verify_action_ = new QAction(views::runActionIcon(QStringLiteral("verify")), tr("&Verify"), this);
    verify_action_->setShortcut(QKeySequence(tr("Ctrl+Shift+R")));
    verify_action_->setObjectName(QStringLiteral("actionVerify"));
    verify_action_->setStatusTip(tr("Compare the sharded run with the unsharded run and the double-precision oracle"));
    connect(verify_action_, &QAction::triggered, this, [this] { start(views::RunMode::verify); });
    cancel_action_ = new QAction(views::runActionIcon(QStringLiteral("stop")), tr("&Cancel"), this);
    cancel_action_->setShortcut(QKeySequence(Qt::Key_Escape));
    cancel_action_->setObjectName(QStringLiteral("actionCancelRun"));
    cancel_action_->setStatusTip(tr("Stop the run at its next step"));
    connect(cancel_action_, &QAction::triggered, this, &RunController::cancel);
    use_shards_action_ = new QAction(tr("Use &Shards"), this);
    use_shards_action_->setCheckable(true);
    use_shards_action_->setChecked(run_panel_->useShards());
    connect(use_shards_action_, &QAction::toggled, run_panel_, &views::RunPanel::setUseShards);
    connect(run_panel_, &views::RunPanel::useShardsChanged, use_shards_action_, &QAction::setChecked);
    random_inputs_action_ = new QAction(tr("Random &Inputs"), this);
    connect(random_inputs_action_, &QAction::triggered, run_panel_, &views::RunPanel::setRandomInputs);
    inputs_folder_action_ = new QAction(tr("Inputs from &Folder…"), this);
    connect(inputs_folder_action_, &QAction::triggered, this, [this, window] {
        const QString dir =
            QFileDialog::getExistingDirectory(window, tr("Folder of .npy Inputs"), run_panel_->inputsDir());
        if (!dir.isEmpty()) run_panel_->setInputsDir(dir);
    });
    save_outputs_action_ = new QAction(views::runActionIcon(QStringLiteral("save")), tr("Save &Outputs…"), this);
    save_outputs_action_->setObjectName(QStringLiteral("actionSaveOutputs"));
    connect(save_outputs_action_, &QAction::triggered, this, &RunController::saveOutputsDialog);
    run_panel_->setActions(run_action_, verify_action_, cancel_action_);
}

void RunController::onDocumentChanged(GraphDocument::Changes what) {
    if (what & GraphDocument::Replaced) {
        // Outputs belong to the graph they came from.
        last_outcome_ = views::RunOutcome();
        outputs_->clear();
        if (!worker_->isRunning()) run_panel_->reset();
    } else if (what & (GraphDocument::Structure | GraphDocument::Params))
        outputs_->markStale();  // what ran was another graph
    if (what & (GraphDocument::Replaced | GraphDocument::Structure)) updateActions();
}

// ---- running -------------------------------------------------------------------

bool RunController::isRunning() const {
    return worker_->isRunning();
}

bool RunController::askOutsideData(const QStringList &paths) {
    QMessageBox box(QMessageBox::Warning, tr("Values outside the project's folder"),
                    tr("This project reads tensor values from outside its folder:\n\n%1\n\n"
                       "A project file from someone else could read any file this way. Read them?")
                        .arg(paths.join(QLatin1Char('\n'))),
                    QMessageBox::Yes | QMessageBox::No, run_panel_->window());
    box.setDefaultButton(QMessageBox::No);
    box.setObjectName(QStringLiteral("outsideDataQuestion"));
    return box.exec() == QMessageBox::Yes;
}

bool RunController::start(views::RunMode mode) {
    if (worker_->isRunning() || !doc_->isOpen() || doc_->graph().node_count() == 0) return false;
    const views::DocumentSource &source = doc_->source();
    views::RunRequest request;
    request.mode = mode;
    request.graph = doc_->graph();
    request.source_name = source.name;
    if (!source.imported && !source.path.isEmpty()) request.project_dir = QFileInfo(source.path).absolutePath();
    if (!request.project_dir.isEmpty()) {
        QStringList outside;
        for (const std::string &p : data_paths_outside(request.graph, request.project_dir.toStdString()))
            outside << QString::fromStdString(p);
        if (!outside.isEmpty() && outside_allowed_for_ != source.path) {
            if (!(ask_outside_ ? ask_outside_(outside) : askOutsideData(outside))) {
                status_->showMessage(tr("Not run: %1 reads tensor values outside its folder (%2)")
                                         .arg(source.name, outside.join(QStringLiteral(", "))));
                return false;
            }
            outside_allowed_for_ = source.path;
        }
        request.allow_outside_data = !outside.isEmpty();
    }
    run_panel_->fillRequest(request);
    if (worker_->start(std::move(request)) == 0) return false;
    ran_revision_ = doc_->revision();
    run_panel_->runStarted(mode, source.name);
    progress_->setRange(0, 0);
    progress_->show();
    cancel_button_->show();
    outputs_dock_->show();
    status_->showMessage(mode == views::RunMode::verify ? tr("Verifying %1…").arg(source.name)
                                                        : tr("Running %1…").arg(source.name));
    updateActions();
    return true;
}

void RunController::cancel() {
    if (!worker_->isRunning()) return;
    worker_->cancel();
    cancel_action_->setEnabled(false);  // once is enough; the job stops at its next polling point
    run_panel_->runCancelling();
    progress_->setRange(0, 0);
    status_->showMessage(tr("Cancelling…"));
}

void RunController::onProgress(quint64 job, int done, int total, const QString &phase) {
    // After Cancel the job's last reports are of no interest: it says "Cancelling…".
    if (job != worker_->currentJob() || run_panel_->state() != views::RunPanel::State::running) return;
    run_panel_->setProgress(done, total, phase);
    if (total <= 0) {
        progress_->setRange(0, 0);
        if (!phase.isEmpty()) status_->showMessage(tr("%1: %2…").arg(doc_->source().name, phase));
    } else {
        progress_->setRange(0, total);
        progress_->setValue(done);
    }
}

void RunController::onFinished(quint64, const views::RunOutcome &outcome) {
    last_outcome_ = outcome;
    progress_->hide();
    cancel_button_->hide();
    run_panel_->runFinished(outcome);
    if (outcome.cancelled) {
        status_->showMessage(
            outcome.mode == views::RunMode::verify ? tr("Verification cancelled") : tr("Run cancelled"), 8000);
    } else if (!outcome.ok) {
        const QString line = outcome.error.section(QLatin1Char('\n'), 0, 0);
        status_->showMessage(tr("Run failed: %1").arg(line));
        outputs_->showError(tr("Run failed: %1").arg(line));
        emit runFailed(outcome.error);
    } else {
        emit runSucceeded();
        showSuccess(outcome);
        // Edited while it ran: the results are of the graph as it was.
        if (ran_revision_ != doc_->revision()) outputs_->markStale();
    }
    updateActions();
    emit runFinished(outcome.ok);
}

void RunController::showSuccess(const views::RunOutcome &outcome) {
    outputs_->showOutcome(outcome);
    outputs_dock_->show();
    outputs_dock_->raise();
    emit outputsShown();
    if (outcome.mode == views::RunMode::verify)
        status_->showMessage(
            outcome.report.pass()
                ? tr("Verification passed: %1 comparisons agree").arg(outcome.report.comparisons.size())
                : tr("Verification FAILED — see the Outputs dock"),
            10000);
    else
        status_->showMessage(
            tr("Ran %1 in %2 ms (%3)").arg(outcome.source_name).arg(outcome.run_ms, 0, 'f', 1).arg(outcome.inputs_text),
            10000);
}

void RunController::updateActions() {
    const bool running = worker_->isRunning();
    const bool has_graph = doc_->isOpen() && doc_->graph().node_count() > 0;
    run_action_->setEnabled(has_graph && !running);
    verify_action_->setEnabled(has_graph && !running);
    cancel_action_->setEnabled(running);
    save_outputs_action_->setEnabled(!running && last_outcome_.ok && !last_outcome_.output_values.empty());
}

// ---- saving outputs ----------------------------------------------------------------

void RunController::saveOutputsDialog() {
    if (last_outcome_.output_values.empty()) return;
    const QString start =
        QSettings().value(QStringLiteral("run/outputsDir"), QFileInfo(doc_->source().path).absolutePath()).toString();
    const QString dir = QFileDialog::getExistingDirectory(window_, tr("Save Outputs to Folder"), start);
    if (dir.isEmpty()) return;
    QSettings().setValue(QStringLiteral("run/outputsDir"), dir);
    saveOutputs(dir);
}

void RunController::saveOutputs(const QString &dir) {
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, dir] {
        watcher->deleteLater();
        const QString error = watcher->result();
        if (error.isEmpty())
            status_->showMessage(
                tr("Saved %1 outputs to %2").arg(last_outcome_.output_values.size()).arg(QDir::toNativeSeparators(dir)),
                6000);
        else
            status_->showMessage(tr("Could not save the outputs: %1").arg(error));
        emit outputsSaved(dir, error);
    });
    watcher->setFuture(QtConcurrent::run([graph = doc_->graph(), values = last_outcome_.output_values, dir] {
        try {
            return QString::fromStdString(write_outputs_dir(graph, values, std::filesystem::path(dir.toStdString())));
        } catch (const std::exception &e) {
            return QStringLiteral("internal error: %1").arg(QString::fromUtf8(e.what()));
        }
    }));
}

}  // namespace tapestry::studio
