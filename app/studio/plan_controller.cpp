#include "plan_controller.h"

#include <QAction>
#include <QComboBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "canvas_controller.h"
#include "common/checked_size.h"
#include "dock.h"
#include "launch/records.h"
#include "plan/plan_file.h"
#include "session_controller.h"
#include "store/session.h"
#include "views/file_kind.h"
#include "views/flow_layout.h"
#include "views/graph_diff.h"
#include "views/graph_scene.h"
#include "views/memory_chart.h"
#include "views/plan_gantt.h"
#include "views/plan_worker.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

constexpr int kUserRole = Qt::UserRole;      // the target's name
constexpr int kUserFlag = Qt::UserRole + 1;  // true for a user copy
constexpr int kDockHeight = 400;             // the room a plan needs below the canvas
// The probe's threads: `tapestry targets measure`'s default, so that a session's
// measurement means the same whichever of the two took it.
constexpr int kHostThreads = 2;
const QString kHost = QStringLiteral("host");

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// What a session keeps of targets: its user copies and the host as measured.
struct SessionTargets {
    std::vector<cost::Target> user;
    std::optional<cost::Target> host;
    QString host_when;
    QString error;  // the store's, or the first stored target that does not parse
};

SessionTargets readTargets(const store::Session &session) {
    SessionTargets out;
    auto records = session.targets();
    if (!records) {
        out.error = qs(records.error().message);
        return out;
    }
    for (const store::TargetRecord &r : *records) {
        auto parsed = cost::parse_target(r.target_json, "session target " + r.name);
        if (!parsed) {
            if (out.error.isEmpty()) out.error = qs(parsed.error());
            continue;
        }
        cost::Target t = std::move(parsed).value();
        t.origin = "session";
        if (r.origin == "measured" && t.name == "host") {
            // Measured before targets kept their core count: measured again on first use.
            if (!t.device.cores.present) continue;
            out.host = std::move(t);
            out.host_when = localTimeText(r.updated_at);
        } else if (r.origin == "user") {
            out.user.push_back(std::move(t));
        }
    }
    return out;
}

QString flopsText(double flops) {
    return QStringLiteral("%1 GFLOP/s").arg(flops / 1e9, 0, 'f', 1);
}

}  // namespace

PlanController::PlanController(GraphDocument *doc, CanvasController *canvas, SessionController *session,
                               QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), canvas_(canvas), session_(session), status_(status), window_(window) {
    worker_ = new views::PlanWorker(this);
    createActions();
    createDock(window);
    connect(worker_, &views::PlanWorker::finished, this, &PlanController::onPlanFinished);
    connect(worker_, &views::PlanWorker::measureProgress, this, &PlanController::onMeasureProgress);
    connect(worker_, &views::PlanWorker::hostMeasured, this, &PlanController::onHostMeasured);
    // A session opened with no project shown yet is looked at when the dock is.
    connect(dock_, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible) loadSessionTargets();
    });
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) { onDocumentChanged(what); });
    connect(gantt_, &views::PlanGantt::barClicked, this, [this](const QString &op) { onBarClicked(op); });
    updateActions();
}

PlanController::~PlanController() = default;

void PlanController::addLaunchAction(QAction *action) {
    launch_button_->setDefaultAction(action);
    launch_button_->show();
}

// ---- the dock --------------------------------------------------------------------

void PlanController::createActions() {
    plan_action_ = new QAction(tr("&Plan"), this);
    plan_action_->setObjectName(QStringLiteral("actionPlan"));
    plan_action_->setShortcut(QKeySequence(tr("Ctrl+Alt+P")));
    plan_action_->setStatusTip(tr("Plan the graph the canvas shows on the Plan dock's target, off the GUI thread"));
    connect(plan_action_, &QAction::triggered, this, [this] {
        dock_->show();
        dock_->raise();
        startPlan();
    });
    cancel_action_ = new QAction(tr("Cancel"), this);
    cancel_action_->setObjectName(QStringLiteral("actionCancelPlan"));
    cancel_action_->setStatusTip(tr("Stop planning, or measuring the host"));
    connect(cancel_action_, &QAction::triggered, this, &PlanController::cancelPlan);
    export_action_ = new QAction(tr("Export Plan…"), this);
    export_action_->setObjectName(QStringLiteral("actionExportPlan"));
    export_action_->setStatusTip(tr("Write the plan and its prediction as a tapestry-plan JSON file"));
    connect(export_action_, &QAction::triggered, this, &PlanController::exportPlanDialog);
    open_action_ = new QAction(tr("Open Plan…"), this);
    open_action_->setObjectName(QStringLiteral("actionOpenPlan"));
    open_action_->setStatusTip(
        tr("Show a plan file (Export Plan…, tapestry plan -o, tapestry optimize --export-plan) in the Plan dock, "
           "ready to launch"));
    connect(open_action_, &QAction::triggered, this, &PlanController::openPlanDialog);
    copy_target_action_ = new QAction(tr("Copy Target…"), this);
    copy_target_action_->setObjectName(QStringLiteral("actionCopyTarget"));
    copy_target_action_->setStatusTip(tr("Edit a copy of the selected target as JSON; it is kept as a user target"));
    connect(copy_target_action_, &QAction::triggered, this, [this] { openTargetEditor(); });
    measure_host_action_ = new QAction(tr("Measure Host Again"), this);
    measure_host_action_->setObjectName(QStringLiteral("actionMeasureHost"));
    measure_host_action_->setStatusTip(
        tr("Measure this machine's CPU (a oneDNN GEMM and a memory-bandwidth probe, about a second) and keep "
           "the figures in the session as the host target"));
    connect(measure_host_action_, &QAction::triggered, this, [this] {
        dock_->show();
        dock_->raise();
        measureHost(false);
    });
}

void PlanController::createDock(QWidget *window) {
    auto *panel = new QWidget(window);
    panel->setObjectName(QStringLiteral("planPanel"));
    auto *column = new QVBoxLayout(panel);
    column->setContentsMargins(6, 4, 6, 4);
    column->setSpacing(4);
    column->addWidget(createSettingsRow(panel));
    column->addWidget(createSummaryRow(panel));
    // The last settings, once both rows stand (filling the targets updates the buttons).
    QSettings settings;
    fillTargets(settings.value(QStringLiteral("plan/target"), QStringLiteral("h100-sxm")).toString());
    devices_box_->setValue(settings.value(QStringLiteral("plan/devices"), 8).toInt());

    table_ = new QTableWidget(0, 5, panel);
    table_->setObjectName(QStringLiteral("planDeviceTable"));
    table_->setHorizontalHeaderLabels({tr("Device"), tr("Busy"), tr("Comm."), tr("Sent"), tr("Peak memory")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setAlternatingRowColors(true);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setToolTip(
        tr("Per device, predicted: the compute stream's busy share of the makespan, the communication "
           "stream's time and the bytes sent, the peak memory and its share of the device's capacity"));
    gantt_ = new views::PlanGantt(panel);
    memory_ = new views::MemoryChart(panel);
    // The table beside the two charts; above them when the dock is narrower than
    // the three need to read whole (beside the Optimize dock: half the window).
    charts_ = new QSplitter(Qt::Horizontal, panel);
    charts_->setObjectName(QStringLiteral("planCharts"));
    charts_->addWidget(gantt_);
    charts_->addWidget(memory_);
    charts_->setStretchFactor(0, 3);
    charts_->setStretchFactor(1, 2);
    charts_->setSizes({700, 460});
    splitter_ = new QSplitter(Qt::Horizontal, panel);
    splitter_->setObjectName(QStringLiteral("planSplitter"));
    splitter_->addWidget(table_);
    splitter_->addWidget(charts_);
    splitter_->setStretchFactor(0, 0);
    splitter_->setStretchFactor(1, 1);
    splitter_->setSizes({340, 1160});
    column->addWidget(splitter_, 1);
    arrange_panes_ = stackWhenNarrow(
        splitter_, panel, [this] { return tableWidth() + kChartsWidth; },
        [this](Qt::Orientation) { fitToOrientation(); });
    // Scrolling, so that the charts' minimum height never makes the bottom docks taller.
    dock_ = makeDock(tr("Plan"), "planDock", panel, window, DockContent::scrolls);
    dock_->toggleViewAction()->setShortcut(QKeySequence(tr("Ctrl+Shift+L")));
}

QWidget *PlanController::createSettingsRow(QWidget *parent) {
    auto *row_widget = new QWidget(parent);
    target_box_ = new QComboBox(row_widget);
    target_box_->setObjectName(QStringLiteral("planTarget"));
    target_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    connect(target_box_, &QComboBox::currentIndexChanged, this, &PlanController::updateActions);
    auto *copy = new QToolButton(row_widget);
    copy->setDefaultAction(copy_target_action_);
    measure_button_ = new QToolButton(row_widget);
    measure_button_->setObjectName(QStringLiteral("planMeasureHost"));
    measure_button_->setDefaultAction(measure_host_action_);
    devices_box_ = new QSpinBox(row_widget);
    devices_box_->setObjectName(QStringLiteral("planDevices"));
    devices_box_->setRange(1, 4096);
    nodes_box_ = new QSpinBox(row_widget);
    nodes_box_->setObjectName(QStringLiteral("planNodes"));
    nodes_box_->setRange(0, 4096);
    nodes_box_->setSpecialValueText(tr("auto"));
    nodes_box_->setToolTip(tr("Nodes the devices are spread over (auto: as the target's clusters suggest)"));
    placement_box_ = new QComboBox(row_widget);
    placement_box_->setObjectName(QStringLiteral("planPlacement"));
    placement_box_->addItems({QStringLiteral("shard"), QStringLiteral("round-robin"), QStringLiteral("pipeline")});
    placement_box_->setToolTip(
        tr("shard: shard k on device k; round-robin: every piece the next device; "
           "pipeline: contiguous stages of about equal FLOPs"));
    baseline_box_ = new QComboBox(row_widget);
    baseline_box_->setObjectName(QStringLiteral("planBaseline"));
    baseline_box_->addItems(
        {tr("none"), QStringLiteral("dp"), QStringLiteral("tp"), QStringLiteral("pp"), QStringLiteral("dp×tp")});
    baseline_box_->setToolTip(tr("A hand baseline (data, tensor or pipeline parallel) replaces the placement"));
    connect(baseline_box_, &QComboBox::currentIndexChanged, this,
            [this](int index) { placement_box_->setEnabled(index == 0); });
    order_box_ = new QComboBox(row_widget);
    order_box_->setObjectName(QStringLiteral("planOrder"));
    order_box_->addItems({tr("auto"), QStringLiteral("dependency"), QStringLiteral("ready")});
    order_box_->setToolTip(
        tr("How the plan orders its steps — auto: by readiness for a pipeline (its micro-batches overlap), "
           "op by op otherwise; dependency: op by op; ready: by when each step can start"));
    plan_button_ = new QPushButton(tr("Plan"), row_widget);
    plan_button_->setObjectName(QStringLiteral("planButton"));
    plan_button_->setDefault(true);
    plan_button_->setToolTip(plan_action_->statusTip() +
                             QStringLiteral(" (%1)").arg(plan_action_->shortcut().toString(QKeySequence::NativeText)));
    connect(plan_button_, &QPushButton::clicked, plan_action_, &QAction::trigger);
    cancel_button_ = new QPushButton(tr("Cancel"), row_widget);
    cancel_button_->setObjectName(QStringLiteral("planCancel"));
    connect(cancel_button_, &QPushButton::clicked, cancel_action_, &QAction::trigger);
    busy_ = new QProgressBar(row_widget);
    busy_->setObjectName(QStringLiteral("planBusy"));
    busy_->setRange(0, 0);  // make_plan reports no progress: busy, not a fraction
    busy_->setTextVisible(false);
    busy_->setFixedWidth(80);
    busy_->setMaximumHeight(12);
    busy_->hide();
    progress_label_ = new QLabel(row_widget);
    progress_label_->setObjectName(QStringLiteral("planProgressLabel"));
    progress_label_->hide();
    // Launch, Open and Export end the row; a dock narrower than the row (beside the
    // Optimize dock, say) wraps it onto more lines instead of clipping its end.
    launch_button_ = new QToolButton(row_widget);
    launch_button_->setObjectName(QStringLiteral("planLaunch"));
    launch_button_->setToolButtonStyle(Qt::ToolButtonTextOnly);
    launch_button_->hide();  // until the Launch dock gives it its action
    open_button_ = new QPushButton(tr("Open Plan…"), row_widget);
    open_button_->setObjectName(QStringLiteral("planOpen"));
    connect(open_button_, &QPushButton::clicked, open_action_, &QAction::trigger);
    export_button_ = new QPushButton(tr("Export Plan…"), row_widget);
    export_button_->setObjectName(QStringLiteral("planExport"));
    connect(export_button_, &QPushButton::clicked, export_action_, &QAction::trigger);
    auto *row = new views::FlowLayout(row_widget, 12, 4);
    row->setContentsMargins(0, 0, 0, 0);
    const auto group = [&](std::initializer_list<QWidget *> widgets) {
        auto *box = new QWidget(row_widget);
        auto *line = new QHBoxLayout(box);
        line->setContentsMargins(0, 0, 0, 0);
        line->setSpacing(4);
        for (QWidget *widget : widgets) line->addWidget(widget);  // reparents it to the box
        row->addWidget(box);
    };
    group({formLabel(tr("&Target"), target_box_, row_widget), target_box_, copy, measure_button_});
    group({formLabel(tr("&Devices"), devices_box_, row_widget), devices_box_,
           formLabel(tr("&Nodes"), nodes_box_, row_widget), nodes_box_});
    group({formLabel(tr("P&lacement"), placement_box_, row_widget), placement_box_});
    group({formLabel(tr("&Baseline"), baseline_box_, row_widget), baseline_box_});
    group({formLabel(tr("Step &order"), order_box_, row_widget), order_box_});
    group({plan_button_, cancel_button_, busy_, progress_label_});
    group({launch_button_, open_button_, export_button_});
    return row_widget;
}

QWidget *PlanController::createSummaryRow(QWidget *parent) {
    auto *row_widget = new QWidget(parent);
    auto *row = new QHBoxLayout(row_widget);
    row->setContentsMargins(0, 0, 0, 0);
    prediction_badge_ = new QLabel(tr("PREDICTION"), row_widget);
    prediction_badge_->setObjectName(QStringLiteral("planPredictionBadge"));
    prediction_badge_->setToolTip(tr("Every figure here is the cost model's prediction, not a measurement"));
    styleBadge(prediction_badge_, QStringLiteral("#e0e7ff"), QStringLiteral("#3730a3"));
    summary_ = new QLabel(row_widget);
    summary_->setObjectName(QStringLiteral("planSummary"));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_->setText(tr("Pick a target and the devices, then Plan (%1).")
                          .arg(plan_action_->shortcut().toString(QKeySequence::NativeText)));
    certificate_ = new QLabel(row_widget);
    certificate_->setObjectName(QStringLiteral("planCertificate"));
    certificate_->hide();
    // The certificate under the summary, both wrapping: at half the window the
    // certificate's checks would not fit beside it.
    certificate_->setWordWrap(true);
    auto *texts = new QVBoxLayout;
    texts->setContentsMargins(0, 0, 0, 0);
    texts->setSpacing(2);
    texts->addWidget(summary_);
    texts->addWidget(certificate_);
    row->addWidget(prediction_badge_, 0, Qt::AlignTop);
    row->addLayout(texts, 1);
    prediction_badge_->hide();
    return row_widget;
}

void PlanController::updateActions() {
    const bool busy = worker_->isRunning();
    plan_action_->setEnabled(!busy && doc_->isOpen());
    plan_button_->setEnabled(plan_action_->isEnabled());
    cancel_action_->setEnabled(busy);
    cancel_button_->setEnabled(busy);
    export_action_->setEnabled(result_ != nullptr);
    export_button_->setEnabled(result_ != nullptr);
    open_action_->setEnabled(!busy);
    open_button_->setEnabled(!busy);
    busy_->setVisible(busy);
    progress_label_->setVisible(worker_->isMeasuring());
    measure_host_action_->setEnabled(!busy);
    measure_host_action_->setText(host_ ? tr("Measure Host Again") : tr("Measure Host"));
    // The button belongs to the host: shown while it is the target picked.
    measure_button_->setVisible(!target_box_->currentData(kUserFlag).toBool() &&
                                target_box_->currentData(kUserRole).toString() == kHost);
}

// ---- targets ---------------------------------------------------------------------

void PlanController::fillTargets(const QString &select) {
    const QSignalBlocker block(target_box_);
    target_box_->clear();
    for (const std::string &name : cost::builtin_target_names()) {
        const bool measured = qs(name) == kHost && host_;
        target_box_->addItem(measured ? tr("host (measured %1)").arg(host_when_) : qs(name));
        const int i = target_box_->count() - 1;
        target_box_->setItemData(i, qs(name), kUserRole);
        target_box_->setItemData(i, false, kUserFlag);
        if (measured) {
            // How it was measured ("oneDNN avx2, 2 threads: …"), when the stored target says.
            const auto how = host_->sources.find("measured");
            const std::string note = how != host_->sources.end() ? "\n" + how->second.note : std::string();
            target_box_->setItemData(i, qs(host_->title + note), Qt::ToolTipRole);
        } else if (auto t = cost::builtin_target(name))
            target_box_->setItemData(i, qs(t->title), Qt::ToolTipRole);
    }
    for (const cost::Target &t : user_targets_) {
        target_box_->addItem(tr("%1 (user)").arg(qs(t.name)));
        const int i = target_box_->count() - 1;
        target_box_->setItemData(i, qs(t.name), kUserRole);
        target_box_->setItemData(i, true, kUserFlag);
        target_box_->setItemData(i, qs(t.title), Qt::ToolTipRole);
    }
    if (!selectTarget(select)) target_box_->setCurrentIndex(0);
    updateActions();
}

QString PlanController::selectionName() const {
    return target_box_->currentData(kUserFlag).toBool() ? target_box_->currentText()
                                                        : target_box_->currentData(kUserRole).toString();
}

bool PlanController::selectTarget(const QString &name) {
    for (int i = 0; i < target_box_->count(); ++i)
        if (target_box_->itemText(i) == name) {
            target_box_->setCurrentIndex(i);
            return true;
        }
    // A bare name: the built-in first, then a user copy.
    for (bool user : {false, true})
        for (int i = 0; i < target_box_->count(); ++i)
            if (target_box_->itemData(i, kUserRole).toString() == name &&
                target_box_->itemData(i, kUserFlag).toBool() == user) {
                target_box_->setCurrentIndex(i);
                return true;
            }
    return false;
}

Expected<cost::Target, std::string> PlanController::selectedTarget() const {
    const int i = target_box_->currentIndex();
    if (i < 0) return unexpected(std::string("no target is selected"));
    const std::string name = target_box_->itemData(i, kUserRole).toString().toStdString();
    if (!target_box_->itemData(i, kUserFlag).toBool()) {
        if (qs(name) == kHost && host_) return *host_;
        return cost::builtin_target(name);
    }
    for (const cost::Target &t : user_targets_)
        if (t.name == name) return t;
    return unexpected("no user target '" + name + "'");
}

bool PlanController::selectedNeedsMeasuring() const {
    // Only the built-in host has a probe; a user's copy of it plans with the figures it has.
    return !host_ && !target_box_->currentData(kUserFlag).toBool() &&
           target_box_->currentData(kUserRole).toString() == kHost;
}

QDialog *PlanController::openTargetEditor() {
    auto target = selectedTarget();
    if (!target) {
        status_->showMessage(tr("Cannot copy the target: %1").arg(qs(target.error())), 10000);
        return nullptr;
    }
    cost::Target copy = *target;
    const bool user = target_box_->currentData(kUserFlag).toBool();
    if (!user) {
        copy.name += "-copy";
        copy.title += " (copy)";
    }
    if (editor_) editor_->deleteLater();
    editor_ = new QDialog(window_);
    editor_->setObjectName(QStringLiteral("targetEditor"));
    editor_->setWindowTitle((user ? tr("Edit Target — %1") : tr("Copy Target — %1")).arg(target_box_->currentText()));
    editor_->setAttribute(Qt::WA_DeleteOnClose);
    editor_->resize(640, 720);
    auto *column = new QVBoxLayout(editor_);
    auto *hint = new QLabel(tr("The copy's JSON (docs/targets.md). Give it a name of its own; every figure names "
                               "its source. Saved, it appears in the Plan dock as \"<name> (user)\"."),
                            editor_);
    hint->setWordWrap(true);
    column->addWidget(hint);
    auto *text = new QPlainTextEdit(editor_);
    text->setObjectName(QStringLiteral("targetJson"));
    text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    text->setLineWrapMode(QPlainTextEdit::NoWrap);
    text->setPlainText(qs(cost::target_json(copy)));
    column->addWidget(text, 1);
    auto *error = new QLabel(editor_);
    error->setObjectName(QStringLiteral("targetError"));
    error->setWordWrap(true);
    error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    error->hide();
    column->addWidget(error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, editor_);
    column->addWidget(buttons);
    if (user) {
        QPushButton *remove = buttons->addButton(tr("Delete Target"), QDialogButtonBox::DestructiveRole);
        remove->setObjectName(QStringLiteral("targetDelete"));
        remove->setToolTip(tr("Remove this user target from the list and from the session"));
        connect(remove, &QPushButton::clicked, editor_, [this, name = qs(target->name)] {
            deleteUserTarget(name);
            editor_->reject();
        });
    }
    connect(buttons, &QDialogButtonBox::rejected, editor_, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, editor_, [this, text, error] {
        const QString why = saveUserTarget(text->toPlainText());
        error->setText(why);
        error->setVisible(!why.isEmpty());
        if (why.isEmpty()) editor_->accept();
    });
    editor_->show();
    return editor_;
}

QString PlanController::saveUserTarget(const QString &json) {
    auto parsed = cost::parse_target(json.toStdString(), "target");
    if (!parsed) return qs(parsed.error());
    return keepUserTarget(std::move(parsed).value());
}

bool PlanController::openTargetFile(const QString &path) {
    if (path.isEmpty()) return false;
    dock_->show();
    dock_->raise();
    auto *watcher = new QFutureWatcher<Expected<cost::Target, std::string>>(this);
    connect(watcher, &QFutureWatcher<Expected<cost::Target, std::string>>::finished, this, [this, watcher, path] {
        auto read = watcher->result();
        watcher->deleteLater();
        QString error;
        if (!read) {
            error = qs(read.error());
        } else if (auto builtin = cost::builtin_target(read->name); builtin && builtin->name == read->name) {
            // A built-in target's own file selects it; one of that name that differs needs a name of its own.
            if (cost::target_json(*builtin) == cost::target_json(*read)) {
                selectTarget(qs(read->name));
                status_->showMessage(tr("%1 is the built-in target %2: selected")
                                         .arg(QFileInfo(path).fileName(), qs(read->name)),
                                     6000);
            } else {
                error = tr("%1: name: '%2' is a built-in target's name, and the file's figures differ from it; "
                           "give it a name of its own")
                            .arg(QDir::toNativeSeparators(path), qs(read->name));
            }
        } else {
            error = keepUserTarget(std::move(read).value());
        }
        if (!error.isEmpty()) {
            status_->showMessage(tr("Target not added: %1").arg(error), 15000);
            auto *box = new QMessageBox(QMessageBox::Warning, tr("Target Not Added"),
                                        tr("%1 could not be added as a target.").arg(QFileInfo(path).fileName()),
                                        QMessageBox::Ok, window_);
            box->setObjectName(QStringLiteral("targetFileErrorBox"));
            box->setInformativeText(error);
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();
        }
        emit targetFileOpened(path, error);
    });
    // Off the GUI thread: a file (at most 4 MiB) read and parsed.
    watcher->setFuture(QtConcurrent::run([path] { return cost::load_target(path.toStdString()); }));
    return true;
}

QString PlanController::keepUserTarget(cost::Target t) {
    const auto &builtins = cost::builtin_target_names();
    if (std::find(builtins.begin(), builtins.end(), t.name) != builtins.end())
        return tr("target: name: '%1' is a built-in target's name; give the copy a name of its own").arg(qs(t.name));
    t.origin = "session";
    auto same = std::find_if(user_targets_.begin(), user_targets_.end(),
                             [&t](const cost::Target &u) { return u.name == t.name; });
    if (same != user_targets_.end())
        *same = t;
    else
        user_targets_.push_back(t);
    fillTargets(tr("%1 (user)").arg(qs(t.name)));
    const QString name = qs(t.name);
    if (session_->session()) {
        window_only_.remove(name);
        writeTarget(name, [stored = t.name, text = cost::target_json(t)](store::Session &session) {
            return session.save_target(stored, "user", text);
        });
        status_->showMessage(
            tr("Target %1 kept as a user target in %2").arg(name, QFileInfo(session_->path()).fileName()), 6000);
    } else {
        window_only_.insert(name);
        status_->showMessage(tr("Target %1 kept as a user target in this window (no session is open)").arg(name), 6000);
    }
    return {};
}

QString PlanController::deleteUserTarget(const QString &name) {
    auto it = std::find_if(user_targets_.begin(), user_targets_.end(),
                           [&name](const cost::Target &u) { return qs(u.name) == name; });
    if (it == user_targets_.end()) return tr("no user target '%1'").arg(name);
    user_targets_.erase(it);
    const bool in_session = !window_only_.remove(name) && session_->session();
    fillTargets(selectionName());
    if (in_session) {
        writeTarget(name, [name = name.toStdString()](store::Session &session) { return session.delete_target(name); });
        status_->showMessage(tr("Target %1 deleted from %2").arg(name, QFileInfo(session_->path()).fileName()), 6000);
    } else {
        status_->showMessage(tr("Target %1 deleted").arg(name), 6000);
    }
    return {};
}

// ---- targets kept in the session ---------------------------------------------------

void PlanController::loadSessionTargets() {
    std::shared_ptr<store::Session> session = session_->sharedSession();
    if (!session || session == targets_of_.lock()) return;
    targets_of_ = session;
    auto *watcher = new QFutureWatcher<SessionTargets>(this);
    connect(watcher, &QFutureWatcher<SessionTargets>::finished, this,
            [this, watcher, of = std::weak_ptr<store::Session>(session)] {
                const SessionTargets read = watcher->result();
                watcher->deleteLater();
                if (of.lock() != session_->sharedSession()) return;  // another session opened meanwhile
                showSessionTargets(read.user, read.host, read.host_when);
                if (!read.error.isEmpty())
                    status_->showMessage(tr("Targets of the session not all read: %1").arg(read.error), 15000);
                emit targetsLoaded(read.error);
            });
    // Off the GUI thread, as the stages are read: a read waits for a save's transaction.
    watcher->setFuture(QtConcurrent::run([session] { return readTargets(*session); }));
}

void PlanController::showSessionTargets(const std::vector<cost::Target> &user, const std::optional<cost::Target> &host,
                                        const QString &host_when) {
    // The session's copies replace those of the session before; the copies made
    // with no session open stay (they are in no session).
    std::vector<cost::Target> listed = user;
    for (const cost::Target &t : user_targets_) {
        const bool shadowed =
            std::any_of(user.begin(), user.end(), [&t](const cost::Target &u) { return u.name == t.name; });
        if (window_only_.contains(qs(t.name)) && !shadowed) listed.push_back(t);
    }
    for (const cost::Target &u : user) window_only_.remove(qs(u.name));
    user_targets_ = std::move(listed);
    host_ = host;
    host_when_ = host_when;
    fillTargets(selectionName());
}

void PlanController::writeTarget(const QString &name, std::function<store::Status(store::Session &)> write) {
    std::shared_ptr<store::Session> session = session_->sharedSession();
    if (!session) return;
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, name] {
        const QString error = watcher->result();
        watcher->deleteLater();
        if (!error.isEmpty())
            status_->showMessage(tr("Target %1: the session was not changed: %2").arg(name, error), 15000);
        emit targetStored(name, error);
    });
    // Off the GUI thread, as the session's other writes.
    watcher->setFuture(QtConcurrent::run([session, write = std::move(write)] {
        const store::Status done = write(*session);
        return done ? QString() : qs(done.error().message);
    }));
}

// ---- planning --------------------------------------------------------------------

bool PlanController::isPlanning() const {
    return worker_->isRunning() && (!worker_->isMeasuring() || plan_after_measuring_);
}

bool PlanController::startPlan() {
    if (worker_->isRunning() || !doc_->isOpen() || doc_->shownGraph().node_count() == 0) return false;
    if (selectedNeedsMeasuring()) return measureHost(true);
    auto target = selectedTarget();
    if (!target) {
        showError(qs(target.error()));
        return false;
    }
    views::PlanJob job;
    job.graph = doc_->shownGraph();
    job.request.target = *target;
    job.request.devices = devices_box_->value();
    job.request.nodes = nodes_box_->value();
    job.request.placement = placement_box_->currentText().toStdString();
    if (baseline_box_->currentIndex() > 0) {
        auto baseline = plan::parse_baseline(baseline_box_->currentText().toStdString());
        if (!baseline) {
            showError(qs(baseline.error()));
            return false;
        }
        job.request.baseline = *baseline;
    }
    if (order_box_->currentIndex() > 0) job.request.order = plan::parse_step_order(order_box_->currentText().toStdString());
    // What the session has measured of this target calibrates the prediction; the
    // worker reads it (a large session's rows and plans are not read on the GUI thread).
    job.session = session_->sharedSession();
    const int shown = doc_->shownStage();
    job.request.source.project =
        doc_->source().path.isEmpty() ? doc_->source().name.toStdString() : doc_->source().path.toStdString();
    if (shown >= 0) {
        const Stage &stage = doc_->stages()[static_cast<size_t>(shown)];
        job.request.source.stage = shown;
        job.request.source.pass = stage.pass;
        job.request.source.options = stage.options;
        job.request.source.certificate = stage.certificate.badge();
    }
    const Graph graph = job.graph;
    if (worker_->start(std::move(job)) == 0) return false;
    // What the result will be of; the plan shown keeps its own until this one arrives.
    pending_ = Planned{graph, selectionName(), target->device.memory_bytes.value,
                       PlanSettings{selectionName(), devices_box_->value(), nodes_box_->value(),
                                    placement_box_->currentText(), baseline_box_->currentText(),
                                    order_box_->currentText(), graph}};
    QSettings settings;
    settings.setValue(QStringLiteral("plan/target"), pending_.target);
    settings.setValue(QStringLiteral("plan/devices"), devices_box_->value());
    const QString what = shown >= 0 ? tr("stage %1 of %2").arg(shown).arg(doc_->source().name) : doc_->source().name;
    status_->showMessage(tr("Planning %1 on %2 × %3…").arg(what).arg(devices_box_->value()).arg(pending_.target));
    busy_->setRange(0, 0);  // make_plan reports no progress: busy, not a fraction
    updateActions();
    return true;
}

bool PlanController::replanWithDevices(const PlanSettings &settings, int devices) {
    if (worker_->isRunning() || devices < 1) return false;
    dock_->show();
    dock_->raise();
    if (!views::sameGraph(doc_->shownGraph(), settings.graph)) {
        showError(tr("the canvas shows another graph than the plan was made of: show it again, or plan this one"));
        return false;
    }
    if (!selectTarget(settings.target)) {
        showError(tr("the target %1 is no longer in the list").arg(settings.target));
        return false;
    }
    devices_box_->setValue(devices);
    nodes_box_->setValue(settings.nodes);
    placement_box_->setCurrentText(settings.placement);
    baseline_box_->setCurrentText(settings.baseline);
    order_box_->setCurrentText(settings.order);
    return startPlan();
}

// ---- measuring the host ------------------------------------------------------------

bool PlanController::isMeasuring() const {
    return worker_->isMeasuring();
}

bool PlanController::measureHost(bool then_plan) {
    if (worker_->measureHost(kHostThreads) == 0) return false;
    plan_after_measuring_ = then_plan;
    busy_->setRange(0, 100);
    busy_->setValue(0);
    progress_label_->setText(tr("Measuring the host…"));
    status_->showMessage(then_plan ? tr("Measuring the host CPU on first use — a oneDNN GEMM and a memory-bandwidth "
                                        "probe, about a second; then planning…")
                                   : tr("Measuring the host CPU again — a oneDNN GEMM and a memory-bandwidth probe, "
                                        "about a second…"));
    updateActions();
    return true;
}

void PlanController::onMeasureProgress(quint64 job, double fraction, const QString &what) {
    if (job != worker_->currentJob() || !worker_->isMeasuring()) return;
    busy_->setValue(static_cast<int>(fraction * 100 + 0.5));
    progress_label_->setText(tr("Measuring the host: %1").arg(what));
    status_->showMessage(tr("Measuring the host CPU: %1…").arg(what));
}

void PlanController::onHostMeasured(quint64, const views::HostOutcome &outcome) {
    const bool then_plan = std::exchange(plan_after_measuring_, false);
    updateActions();
    if (!outcome.ok) {
        if (outcome.cancelled) {
            status_->showMessage(tr("Host measurement cancelled"), 8000);
        } else {
            showError(outcome.error);
            status_->showMessage(tr("Host not measured: %1").arg(outcome.error), 15000);
        }
        emit hostMeasured(false);
        if (then_plan) emit planFinished(false);
        return;
    }
    host_ = outcome.target;
    host_when_ = QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    fillTargets(selectionName());
    const cost::Device &d = host_->device;
    const QString figures = tr("%1 f32, %2/s memory bandwidth, %3 of memory")
                                .arg(flopsText(host_->peak_flops(DType::f32)))
                                .arg(qs(byte_text(static_cast<std::int64_t>(d.memory_bandwidth.value))))
                                .arg(qs(byte_text(static_cast<std::int64_t>(d.memory_bytes.value))));
    QString kept = tr("not kept: no session is open");
    if (session_->session()) {
        const std::string json = cost::target_json(*host_);
        writeTarget(kHost, [json](store::Session &session) { return session.save_target("host", "measured", json); });
        kept = tr("kept in %1").arg(QFileInfo(session_->path()).fileName());
    }
    status_->showMessage(
        tr("Measured the host CPU in %1 s: %2; %3").arg(outcome.milliseconds / 1000, 0, 'f', 1).arg(figures, kept),
        10000);
    emit hostMeasured(true);
    if (then_plan && !startPlan()) emit planFinished(false);
}

void PlanController::cancelPlan() {
    if (worker_->isRunning()) worker_->cancel();  // reports `cancelled` at once
}

void PlanController::onPlanFinished(quint64, const views::PlanOutcome &outcome) {
    updateActions();
    if (outcome.cancelled) {
        status_->showMessage(tr("Planning cancelled"), 8000);
        emit planFinished(false);
        return;
    }
    if (!outcome.ok) {
        showError(outcome.error);
        status_->showMessage(tr("Plan failed: %1").arg(outcome.error), 15000);
        emit planFinished(false);
        return;
    }
    result_ = outcome.result;
    opened_.clear();
    planned_ = pending_.graph;
    planned_target_ = pending_.target;
    capacity_ = pending_.capacity;
    shown_settings_ = pending_.settings;
    last_error_.clear();
    showResult();
    updateActions();
    emit resultChanged();
    status_->showMessage(tr("Planned %1 on %2 × %3 in %4 ms: makespan %5 (prediction); plan certificate %6")
                             .arg(doc_->source().name)
                             .arg(result_->plan.devices.size())
                             .arg(planned_target_)
                             .arg(outcome.milliseconds, 0, 'f', 0)
                             .arg(qs(plan::seconds_text(result_->prediction.makespan)))
                             .arg(result_->certificate.pass() ? tr("PASS") : tr("FAIL")),
                         10000);
    giveDockRoom();
    emit planFinished(true);
}

void PlanController::showPlan(std::shared_ptr<const plan::PlanResult> result, const Graph &planned,
                              const QString &target, double capacity, const QString &openedFrom) {
    if (!result) return;
    if (isPlanning()) cancelPlan();
    result_ = std::move(result);
    opened_ = openedFrom;
    planned_ = planned;
    planned_target_ = target;
    capacity_ = capacity;
    shown_settings_.reset();  // the search's choices, not the dock's widgets
    last_error_.clear();
    showResult();
    updateActions();
    giveDockRoom();
    emit resultChanged();
}

void PlanController::showError(const QString &error) {
    last_error_ = error;
    summary_->setText(tr("<span style=\"color:#b91c1c\"><b>Not planned:</b> %1</span>").arg(error.toHtmlEscaped()));
    summary_->setTextFormat(Qt::RichText);
}

// ---- the result ------------------------------------------------------------------

void PlanController::showResult() {
    const plan::PlanResult &r = *result_;
    prediction_badge_->show();
    showSummary();
    summary_->setToolTip(tr("Planned on %1: %2 stage(s) added (%3)")
                             .arg(planned_target_)
                             .arg(r.stages.size())
                             .arg(r.stages.empty() ? QString() : qs(r.stages.back().summary)));
    const bool pass = r.certificate.pass();
    certificate_->setText((pass ? QStringLiteral("✓ ") : QStringLiteral("✗ ")) + tr("plan certificate ") +
                          qs(r.certificate.badge()));
    certificate_->setToolTip(qs(r.certificate.text()));
    styleBadge(certificate_, pass ? QStringLiteral("#dcfce7") : QStringLiteral("#fee2e2"),
               pass ? QStringLiteral("#166534") : QStringLiteral("#991b1b"));
    certificate_->show();
    fillDeviceTable();
    fitDeviceTable();
    gantt_->setPlan(result_);
    memory_->setPlan(result_, capacity_);
    colourCanvas();
}

void PlanController::showSummary() {
    // The figures stay readable after an edit, marked as those of another graph.
    QString text = qs(plan::plan_summary(*result_, capacity_));
    if (!opened_.isEmpty())
        text += tr(" — read from %1").arg(QFileInfo(opened_).fileName());
    else if (!views::sameGraph(doc_->shownGraph(), planned_))
        text += tr(" — planned for another graph than the canvas shows: plan again");
    text += QLatin1Char('\n') + qs(plan::calibration_summary(*result_));
    if (const std::string cores = plan::cores_summary(result_->plan); !cores.empty())
        text += QLatin1Char('\n') + qs(cores);
    summary_->setTextFormat(Qt::PlainText);
    summary_->setText(text);
}

void PlanController::fillDeviceTable() {
    const plan::Plan &p = result_->plan;
    const plan::Prediction &pred = result_->prediction;
    table_->setRowCount(static_cast<int>(p.devices.size()));
    auto cell = [this](int row, int column, const QString &text, Qt::Alignment align = Qt::AlignRight) {
        auto *item = new QTableWidgetItem(text);
        item->setTextAlignment(align | Qt::AlignVCenter);
        table_->setItem(row, column, item);
        return item;
    };
    for (int d = 0; d < static_cast<int>(p.devices.size()); ++d) {
        const plan::DeviceLoad &load = pred.devices[static_cast<size_t>(d)];
        const double busy = pred.makespan > 0 ? 100.0 * load.compute / pred.makespan : 0.0;
        QTableWidgetItem *name = cell(d, 0, qs(p.devices[static_cast<size_t>(d)].name), Qt::AlignLeft);
        name->setData(Qt::DecorationRole, views::deviceColour(d));
        cell(d, 1, QStringLiteral("%1 %").arg(busy, 0, 'f', 1));
        cell(d, 2, qs(plan::seconds_text(load.communication)));
        cell(d, 3, qs(byte_text(static_cast<std::int64_t>(load.comm_bytes))));
        const double share = capacity_ > 0 ? 100.0 * static_cast<double>(load.peak) / capacity_ : 0.0;
        // A capacity of 0 is one not known (a plan file of a target the dock does not know).
        QTableWidgetItem *peak =
            capacity_ > 0
                ? cell(d, 4, QStringLiteral("%1 · %2 %").arg(qs(byte_text(load.peak))).arg(share, 0, 'f', share < 1 ? 2 : 1))
                : cell(d, 4, qs(byte_text(load.peak)));
        peak->setToolTip(capacity_ > 0 ? tr("%1 of the device's %2")
                                             .arg(qs(byte_text(load.peak)), qs(byte_text(static_cast<std::int64_t>(capacity_))))
                                       : tr("%1 (the device's memory is not known here)").arg(qs(byte_text(load.peak))));
        if (share > 100) peak->setForeground(QColor(0xb9, 0x1c, 0x1c));
        if (d == pred.peak_device) {
            for (int c = 0; c < table_->columnCount(); ++c) {
                QFont f = table_->item(d, c)->font();
                f.setBold(true);
                table_->item(d, c)->setFont(f);
            }
            name->setToolTip(tr("The device with the highest peak memory"));
        }
    }
}

int PlanController::tableWidth() const {
    return table_->horizontalHeader()->length() + 2 * table_->frameWidth() + table_->verticalScrollBar()->sizeHint().width();
}

void PlanController::fitDeviceTable() {
    table_->resizeColumnsToContents();
    arrange_panes_();  // the table's width with this plan's figures may no longer fit beside the charts
    // Side by side, once, for the first plan (later the user's split stands);
    // stacked, for every plan: the rows it shows are this plan's devices.
    if (splitter_->orientation() == Qt::Horizontal && table_fitted_) return;
    table_fitted_ = true;
    fitToOrientation();
}

void PlanController::fitToOrientation() {
    if (splitter_->orientation() == Qt::Horizontal) {
        table_->setMinimumHeight(0);
        charts_->setMinimumHeight(0);
        // The table as wide as its columns (up to two fifths), the charts the rest.
        const QList<int> sizes = splitter_->sizes();
        int total = 0;
        for (int size : sizes) total += size;
        if (total > 0) {
            const int table = std::min(tableWidth(), total * 2 / 5);
            splitter_->setSizes({table, total - table});
        }
        return;
    }
    // Stacked: the table shows its rows (eight at most, then scrolls), the charts
    // keep room to read under it; the dock scrolls down to them.
    const int rows = std::min(table_->rowCount(), 8);
    const int height = table_->horizontalHeader()->height() + 2 * table_->frameWidth() +
                       rows * table_->verticalHeader()->defaultSectionSize() + 2;
    table_->setMinimumHeight(height);
    charts_->setMinimumHeight(kChartsHeight);
    splitter_->setSizes({height, std::max(kChartsHeight, splitter_->height() - height)});
}

void PlanController::colourCanvas() {
    views::GraphScene *scene = canvas_->scene();
    if (!result_ || !views::sameGraph(doc_->shownGraph(), planned_)) {
        scene->clearDeviceColours();
        return;
    }
    const plan::Plan &p = result_->plan;
    QHash<QString, int> device_of;
    for (int d = 0; d < static_cast<int>(p.devices.size()); ++d)
        device_of.insert(qs(p.devices[static_cast<size_t>(d)].name), d);
    const Graph &shown = doc_->shownGraph();
    QHash<QString, QList<QColor>> colours;
    QHash<QString, QList<QColor>> derived;  // canvas op → the devices of the ops a baseline made of it
    for (const OpPtr &op : p.graph.operations()) {
        const QString drawn_id = canvasOpFor(qs(op->id.value), shown);
        if (drawn_id.isEmpty()) continue;  // a move the placement inserted: not on the canvas
        const Operation *drawn = shown.find_op(OpId(drawn_id.toStdString()));
        QList<QColor> pieces;
        for (const Shard &s : op->shards) {
            const QColor c = views::deviceColour(device_of.value(qs(s.device), 0));
            pieces << c;
            // The canvas's shard of the same id and box is where this piece runs.
            for (const Shard &mine : drawn->shards)
                if (mine.id == s.id && mine.index == s.index) colours.insert(qs(s.id.value), {c});
        }
        if (drawn->id == op->id) {
            colours.insert(drawn_id, pieces);  // its pieces' devices, in shard order
            continue;
        }
        QList<QColor> &devices = derived[drawn_id];
        for (const QColor &c : pieces)
            if (!devices.contains(c)) devices << c;
    }
    for (auto it = derived.cbegin(); it != derived.cend(); ++it)
        if (!colours.contains(it.key())) colours.insert(it.key(), it.value());
    scene->setDeviceColours(colours);
}

QString PlanController::canvasOpFor(const QString &plan_op, const Graph &shown) {
    // A baseline names the ops it makes of one after it ("fc2" → "fc2.partial",
    // "fc2.reduce"); a move the placement inserted has no op of its own on the canvas.
    QString id = plan_op;
    while (!id.isEmpty()) {
        if (shown.find_op(OpId(id.toStdString()))) return id;
        const qsizetype dot = id.lastIndexOf(QLatin1Char('.'));
        if (dot <= 0) break;
        id.truncate(dot);
    }
    return {};
}

void PlanController::onBarClicked(const QString &op) {
    const QString drawn = canvasOpFor(op, canvas_->scene()->graph());
    if (!drawn.isEmpty() && canvas_->revealNode(drawn, false)) {
        status_->showMessage(drawn == op ? tr("Step of %1").arg(op) : tr("Step of %1 (part of %2)").arg(op, drawn),
                             5000);
        return;
    }
    // A move placement inserted, or a graph the canvas no longer shows.
    status_->showMessage(tr("%1 is not on the canvas (a transfer the plan inserted, or another graph)").arg(op), 8000);
}

void PlanController::onDocumentChanged(GraphDocument::Changes what) {
    if (what & GraphDocument::Replaced) {
        // A plan is of the document; a measurement asked for by itself is not.
        if (isPlanning()) cancelPlan();
        // Opening a session shows one of its projects (or starts it on one).
        loadSessionTargets();
        // A plan read from a file is of that file, not of the document: it stays.
        if (!opened_.isEmpty() && result_) {
            showSummary();
            colourCanvas();
            updateActions();
            return;
        }
        result_.reset();
        planned_ = Graph();
        shown_settings_.reset();
        last_error_.clear();
        summary_->setTextFormat(Qt::PlainText);
        summary_->setText(tr("Pick a target and the devices, then Plan (%1).")
                              .arg(plan_action_->shortcut().toString(QKeySequence::NativeText)));
        prediction_badge_->hide();
        certificate_->hide();
        table_->setRowCount(0);
        gantt_->clear();
        memory_->clear();
        emit resultChanged();
    }
    if (what & (GraphDocument::Replaced | GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages)) {
        colourCanvas();
        if (result_) showSummary();
    }
    updateActions();
}

void PlanController::giveDockRoom() {
    showWithRoom(dock_, window_, kDockHeight, dock_sized_);
}

// ---- export ----------------------------------------------------------------------

bool PlanController::exportPlan(const QString &path) {
    if (!result_ || path.isEmpty()) return false;
    std::shared_ptr<const plan::PlanResult> result = result_;
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
        const QString error = watcher->result();
        watcher->deleteLater();
        if (error.isEmpty())
            status_->showMessage(tr("Exported the plan to %1").arg(QDir::toNativeSeparators(path)), 8000);
        else
            status_->showMessage(tr("Plan not exported: %1").arg(error), 15000);
        emit planExported(path, error);
    });
    // Off the GUI thread: a plan of many devices is a large file.
    watcher->setFuture(QtConcurrent::run(
        [result, path] { return qs(plan::save_plan(result->plan, path.toStdString(), &result->prediction)); }));
    return true;
}

namespace {

// A plan file read, or why not and what the file is instead.
struct ReadPlan {
    Expected<plan::PlanResult, std::string> read = unexpected(std::string());
    views::FileKind kind = views::FileKind::unknown;
};

}  // namespace

bool PlanController::openPlan(const QString &path) {
    if (path.isEmpty() || worker_->isRunning()) return false;
    auto *watcher = new QFutureWatcher<ReadPlan>(this);
    connect(watcher, &QFutureWatcher<ReadPlan>::finished, this, [this, watcher, path] {
        ReadPlan answer = watcher->result();
        watcher->deleteLater();
        auto &read = answer.read;
        if (!read) {
            const QString error = qs(read.error());
            status_->showMessage(tr("Plan not opened: %1").arg(error), 15000);
            emit planOpened(path, error);
            offerToOpenAs(path, answer.kind);
            return;
        }
        auto result = std::make_shared<const plan::PlanResult>(std::move(read).value());
        // The target's device memory, where the dock knows the target by that name.
        const std::string name = result->plan.target;
        double capacity = 0;  // not known: the figures show no share of it
        if (qs(name) == kHost) {
            if (host_) capacity = host_->device.memory_bytes.value;
        } else if (auto builtin = cost::builtin_target(name); builtin && builtin->name == name) {
            capacity = builtin->device.memory_bytes.value;
        }
        for (const cost::Target &t : user_targets_)
            if (t.name == name) capacity = t.device.memory_bytes.value;
        showPlan(result, result->plan.graph, qs(name), capacity, path);
        status_->showMessage(tr("Opened the plan %1: %2 devices, %3 steps on %4, makespan %5 (prediction); plan "
                                "certificate %6")
                                 .arg(QDir::toNativeSeparators(path))
                                 .arg(result->plan.devices.size())
                                 .arg(result->plan.steps.size())
                                 .arg(qs(name))
                                 .arg(qs(plan::seconds_text(result->prediction.makespan)))
                                 .arg(result->certificate.pass() ? tr("PASS") : tr("FAIL")),
                             10000);
        emit planOpened(path, QString());
    });
    // Off the GUI thread: a plan of many devices is a large file, and certifying it
    // takes a while; a file that is no plan is looked at for what it is instead.
    watcher->setFuture(QtConcurrent::run([path] {
        ReadPlan answer;
        answer.read = plan::read_plan_result(path.toStdString());
        if (!answer.read) answer.kind = views::kindOfFile(path);
        return answer;
    }));
    return true;
}

void PlanController::offerToOpenAs(const QString &path, views::FileKind kind) {
    const QString name = QFileInfo(path).fileName();
    if (kind == views::FileKind::target) {
        // The dock's own kind of file: a target is added (or selected) at once.
        status_->showMessage(tr("%1 is a target file: adding it to the targets").arg(name), 6000);
        openTargetFile(path);
        return;
    }
    if (kind != views::FileKind::project && kind != views::FileKind::onnx && kind != views::FileKind::session) return;
    const QString what = kind == views::FileKind::session ? tr("Open it as the session") : tr("Open it on the canvas");
    auto *box = new QMessageBox(QMessageBox::Question, tr("Not a Plan"),
                                tr("%1 is %2, not a plan.").arg(name, views::fileKindText(kind)), QMessageBox::NoButton,
                                window_);
    box->setObjectName(QStringLiteral("notAPlanQuestion"));
    box->setInformativeText(kind == views::FileKind::session
                                ? tr("%1? Its projects' plans are in the Plan dock once a project is open.").arg(what)
                                : tr("%1? The Plan dock then plans it (Plan, %2).")
                                      .arg(what, plan_action_->shortcut().toString(QKeySequence::NativeText)));
    QPushButton *open = box->addButton(kind == views::FileKind::session ? tr("Open Session") : tr("Open"),
                                       QMessageBox::AcceptRole);
    open->setObjectName(QStringLiteral("openAsButton"));
    box->addButton(QMessageBox::Cancel);
    box->setDefaultButton(open);
    box->setAttribute(Qt::WA_DeleteOnClose);
    // Not modal in a nested loop: the question waits while the studio goes on.
    connect(box, &QMessageBox::finished, this, [this, box, open, path] {
        if (box->clickedButton() == open) emit openElsewhereRequested(path);
    });
    box->open();
}

void PlanController::openPlanDialog() {
    const QFileInfo source(doc_->source().path);
    const QString dir = source.absolutePath().isEmpty() ? QDir::homePath() : source.absolutePath();
    const QString path = QFileDialog::getOpenFileName(window_, tr("Open Plan"), dir,
                                                      tr("Tapestry plans (*.plan.json *.json);;All files (*)"));
    if (path.isEmpty()) return;
    dock_->show();
    dock_->raise();
    openPlan(path);
}

void PlanController::exportPlanDialog() {
    if (!result_) return;
    const QFileInfo source(doc_->source().path);
    const QString base = source.completeBaseName().remove(QLatin1String(".tapestry"));
    const QString name = QStringLiteral("%1-%2-%3.plan.json")
                             .arg(base.isEmpty() ? QStringLiteral("plan") : base, qs(result_->plan.target))
                             .arg(result_->plan.devices.size());
    const QString dir = source.absolutePath().isEmpty() ? QDir::homePath() : source.absolutePath();
    QString path = QFileDialog::getSaveFileName(window_, tr("Export Plan"), QDir(dir).filePath(name),
                                                tr("Tapestry plans (*.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) path += QLatin1String(".json");
    exportPlan(path);
}

}  // namespace tapestry::studio
