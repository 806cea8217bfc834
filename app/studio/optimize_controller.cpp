#include "optimize_controller.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "common/checked_size.h"
#include "dock.h"
#include "plan_controller.h"
#include "search/front_file.h"
#include "session_controller.h"
#include "views/graph_diff.h"
#include "views/pareto_chart.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

constexpr int kNameRole = Qt::UserRole;      // the target's name
constexpr int kUserFlag = Qt::UserRole + 1;  // true for a user copy
constexpr int kDockHeight = 440;             // the room the chart needs below the canvas
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// The front's rows as the front files take them (search/front_file.h: the same
// files `tapestry optimize --export-front` writes).
std::vector<search::FrontRow> frontRows(const std::vector<const views::ParetoPoint *> &front) {
    std::vector<search::FrontRow> rows;
    for (const views::ParetoPoint *p : front) rows.push_back({p->description.toStdString(), p->key.toStdString(), p->figures});
    return rows;
}

}  // namespace

OptimizeController::OptimizeController(GraphDocument *doc, SessionController *session, PlanController *plans,
                                       QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), session_(session), plans_(plans), status_(status), window_(window) {
    worker_ = new views::OptimizeWorker(this);
    createActions();
    createDock(window);
    connect(worker_, &views::OptimizeWorker::updated, this, &OptimizeController::onUpdated);
    connect(worker_, &views::OptimizeWorker::finished, this, &OptimizeController::onFinished);
    connect(worker_, &views::OptimizeWorker::plansReady, this, &OptimizeController::onPlansReady);
    connect(worker_, &views::OptimizeWorker::runsListed, this, &OptimizeController::onRunsListed);
    connect(worker_, &views::OptimizeWorker::runLoaded, this, &OptimizeController::onRunLoaded);
    connect(worker_, &views::OptimizeWorker::baselinesReady, this, [this](const views::BaselinesOutcome &o) {
        if (o.job == baselines_job_) chart_->setBaselines(o.baselines);
    });
    connect(chart_, &views::ParetoChart::pointClicked, this, [this](const QString &key, bool added) {
        if (!added) openPoint(key);
    });
    connect(chart_, &views::ParetoChart::selectionChanged, this, &OptimizeController::updateActions);
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) { onDocumentChanged(what); });
    connect(session_, &SessionController::saved, this, &OptimizeController::onSessionSaved);
    // The user targets and the measured host are the Plan dock's: listed here too.
    connect(plans_, &PlanController::targetsLoaded, this, &OptimizeController::fillTargets);
    connect(plans_, &PlanController::targetStored, this, &OptimizeController::fillTargets);
    connect(plans_, &PlanController::hostMeasured, this, &OptimizeController::fillTargets);
    updateActions();
}

OptimizeController::~OptimizeController() = default;

// ---- the dock --------------------------------------------------------------------

void OptimizeController::createActions() {
    start_action_ = new QAction(tr("&Optimize"), this);
    start_action_->setObjectName(QStringLiteral("actionOptimize"));
    start_action_->setShortcut(QKeySequence(tr("Ctrl+Alt+O")));
    start_action_->setStatusTip(
        tr("Search the Pareto front of plans of the graph on the Optimize dock's target, off the GUI thread"));
    connect(start_action_, &QAction::triggered, this, [this] {
        dock_->show();
        dock_->raise();
        startSearch();
    });
    stop_action_ = new QAction(tr("Stop Optimizing"), this);
    stop_action_->setObjectName(QStringLiteral("actionStopOptimize"));
    stop_action_->setStatusTip(tr("Stop the search; the front found so far stays, and is kept in the session"));
    connect(stop_action_, &QAction::triggered, this, &OptimizeController::stopSearch);
    compare_action_ = new QAction(tr("Compare"), this);
    compare_action_->setObjectName(QStringLiteral("actionComparePlans"));
    compare_action_->setStatusTip(
        tr("Compare the two selected points' plans side by side (Ctrl+click selects a "
           "second point)"));
    connect(compare_action_, &QAction::triggered, this, &OptimizeController::compareSelected);
}

void OptimizeController::createDock(QWidget *window) {
    // The settings in a column on the left, the chart on the right: the dock sits
    // beside the Plan dock, so that a point's plan shows while the chart stays.
    auto *panel = new QWidget(window);
    panel->setObjectName(QStringLiteral("optimizePanel"));
    auto *row = new QHBoxLayout(panel);
    row->setContentsMargins(6, 4, 6, 4);
    row->setSpacing(10);
    row->addWidget(createSettings(panel), 0, Qt::AlignTop);
    auto *column = new QVBoxLayout;
    column->setSpacing(4);
    column->addWidget(createRunBar(panel));
    chart_ = new views::ParetoChart(panel);
    chart_->setMinimumHeight(240);
    column->addWidget(chart_, 1);
    row->addLayout(column, 1);
    dock_ = makeDock(tr("Optimize"), "optimizeDock", panel, window, DockContent::scrolls);
    // However it is opened (Run ▸ Optimize, View ▸ Optimize, a re-plan), once laid
    // out it gets the width its settings and chart need.
    connect(dock_, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible) QTimer::singleShot(0, this, [this] { widenToContent(dock_, window_); });
    });
    restoreSettings();
}

QWidget *OptimizeController::createSettings(QWidget *parent) {
    auto *box = new QWidget(parent);
    box->setObjectName(QStringLiteral("optimizeSettings"));
    auto *form = new QFormLayout(box);
    form->setContentsMargins(0, 0, 0, 0);
    form->setVerticalSpacing(3);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    box->setMaximumWidth(300);
    target_box_ = new QComboBox(box);
    target_box_->setObjectName(QStringLiteral("optimizeTarget"));
    target_box_->setToolTip(tr("A built-in target, a user copy or the measured host (both made in the Plan dock)"));
    devices_box_ = new QSpinBox(box);
    devices_box_->setObjectName(QStringLiteral("optimizeDevices"));
    devices_box_->setRange(1, 4096);
    devices_box_->setToolTip(tr("The device budget: plans may use fewer"));
    nodes_box_ = new QSpinBox(box);
    nodes_box_->setObjectName(QStringLiteral("optimizeNodes"));
    nodes_box_->setRange(0, 4096);
    nodes_box_->setSpecialValueText(tr("auto"));
    nodes_box_->setToolTip(tr("Nodes the devices are spread over (auto: as the target's clusters suggest)"));
    auto *cluster = new QHBoxLayout;
    cluster->setSpacing(6);
    cluster->addWidget(devices_box_, 1);
    cluster->addWidget(formLabel(tr("No&des"), nodes_box_, box));
    cluster->addWidget(nodes_box_, 1);
    auto *objectives = new QGridLayout;
    objectives->setHorizontalSpacing(8);
    objectives->setVerticalSpacing(0);
    for (search::Objective o : search::all_objectives()) {
        auto *check = new QCheckBox(QString::fromLatin1(search::objective_name(o)), box);
        check->setToolTip(tr("Minimise the plans' %1").arg(views::objectiveTitle(o)));
        check->setObjectName(
            QStringLiteral("optimizeObjective_%1").arg(QString::fromLatin1(search::objective_name(o))));
        connect(check, &QCheckBox::toggled, this, &OptimizeController::updateActions);
        const int k = static_cast<int>(objective_boxes_.size());
        objective_boxes_.push_back(check);
        objectives->addWidget(check, k / 2, k % 2);
    }
    memory_cap_box_ = new QDoubleSpinBox(box);
    memory_cap_box_->setObjectName(QStringLiteral("optimizeMemoryCap"));
    memory_cap_box_->setRange(0, 1 << 20);
    memory_cap_box_->setDecimals(2);
    memory_cap_box_->setSuffix(tr(" GiB"));
    memory_cap_box_->setSpecialValueText(tr("target's"));
    memory_cap_box_->setToolTip(tr("Peak memory allowed per device (target's: the device's memory)"));
    max_time_box_ = new QDoubleSpinBox(box);
    max_time_box_->setObjectName(QStringLiteral("optimizeMaxTime"));
    max_time_box_->setRange(0, 1e9);
    max_time_box_->setDecimals(3);
    max_time_box_->setSuffix(tr(" ms"));
    max_time_box_->setSpecialValueText(tr("none"));
    max_time_box_->setToolTip(tr("Step time allowed (none: no limit)"));
    budget_box_ = new QDoubleSpinBox(box);
    budget_box_->setObjectName(QStringLiteral("optimizeBudget"));
    budget_box_->setRange(0, 24 * 3600);
    budget_box_->setDecimals(1);
    budget_box_->setSuffix(tr(" s"));
    budget_box_->setSpecialValueText(tr("none"));
    budget_box_->setToolTip(tr("Time the search may take (none: until another limit or Stop)"));
    evaluations_box_ = new QSpinBox(box);
    evaluations_box_->setObjectName(QStringLiteral("optimizeEvaluations"));
    evaluations_box_->setRange(0, std::numeric_limits<int>::max());
    evaluations_box_->setSpecialValueText(tr("no limit"));
    evaluations_box_->setToolTip(tr("Plans to evaluate at most (repeats are not counted)"));
    seed_box_ = new QSpinBox(box);
    seed_box_->setObjectName(QStringLiteral("optimizeSeed"));
    seed_box_->setRange(0, std::numeric_limits<int>::max());
    seed_box_->setToolTip(tr("The same seed gives the same front under an evaluation budget"));
    stall_box_ = new QSpinBox(box);
    stall_box_->setObjectName(QStringLiteral("optimizeStall"));
    stall_box_->setRange(0, 1 << 20);
    stall_box_->setSpecialValueText(tr("never"));
    stall_box_->setSuffix(tr(" generations"));
    stall_box_->setToolTip(tr("Stop when the front has not moved for this many generations"));
    fusion_box_ = new QCheckBox(tr("Fuse elementwise chains"), box);
    fusion_box_->setObjectName(QStringLiteral("optimizeFusion"));
    fusion_box_->setToolTip(tr("Let each candidate fuse producers with the elementwise ops and normalizations "
                               "that read them one-to-one (per operation on or off, as the fuse pass)"));
    maps_box_ = new QCheckBox(tr("Place ops by device maps"), box);
    maps_box_->setObjectName(QStringLiteral("optimizeMaps"));
    maps_box_->setToolTip(tr("Let each candidate place an operation's pieces from a device of its own instead of by "
                             "the placement rule (place's explicit maps): a wider space, searched more thinly in "
                             "the same budget"));
    cuts_box_ = new QCheckBox(tr("Cut pipelines at chosen ops"), box);
    cuts_box_->setObjectName(QStringLiteral("optimizeCuts"));
    cuts_box_->setToolTip(tr("Let each pipeline candidate cut its stages at operations of its own choosing instead "
                             "of by FLOPs: a wider space, searched more thinly in the same budget"));
    substitute_box_ = new QCheckBox(tr("Start from substituted graphs"), box);
    substitute_box_->setObjectName(QStringLiteral("optimizeSubstitute"));
    substitute_box_->setToolTip(tr("Let each candidate start from the graph the substitution pass makes — attention "
                                   "and layer norm made of shardable ops (expand), or fused kinds (fuse) — each "
                                   "stage certified: a wider space, searched more thinly in the same budget"));
    warm_box_ = new QCheckBox(tr("The shown run's front"), box);
    warm_box_->setObjectName(QStringLiteral("optimizeWarmStart"));
    warm_box_->setToolTip(tr("Re-plan after an edit: the front of the run the chart shows, carried to the graph as "
                             "it is now by operation id, joins the first population (an op keeps its split where "
                             "the graph still offers it; a new op starts whole)"));
    start_button_ = new QPushButton(tr("Start"), box);
    start_button_->setObjectName(QStringLiteral("optimizeStart"));
    start_button_->setToolTip(
        start_action_->statusTip() +
        QStringLiteral(" (%1)").arg(start_action_->shortcut().toString(QKeySequence::NativeText)));
    connect(start_button_, &QPushButton::clicked, start_action_, &QAction::trigger);
    stop_button_ = new QPushButton(tr("Stop"), box);
    stop_button_->setObjectName(QStringLiteral("optimizeStop"));
    connect(stop_button_, &QPushButton::clicked, stop_action_, &QAction::trigger);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(start_button_);
    buttons->addWidget(stop_button_);

    form->addRow(formLabel(tr("&Target"), target_box_, box), target_box_);
    form->addRow(formLabel(tr("De&vices"), devices_box_, box), cluster);
    form->addRow(new QLabel(tr("Minimise"), box), objectives);
    form->addRow(formLabel(tr("Memory &cap"), memory_cap_box_, box), memory_cap_box_);
    form->addRow(formLabel(tr("Max step &time"), max_time_box_, box), max_time_box_);
    form->addRow(formLabel(tr("&Budget"), budget_box_, box), budget_box_);
    form->addRow(formLabel(tr("&Evaluations"), evaluations_box_, box), evaluations_box_);
    form->addRow(formLabel(tr("S&eed"), seed_box_, box), seed_box_);
    form->addRow(formLabel(tr("Sta&ll"), stall_box_, box), stall_box_);
    form->addRow(new QLabel(tr("Fusion"), box), fusion_box_);
    form->addRow(new QLabel(tr("Placement"), box), maps_box_);
    form->addRow(new QLabel(QString(), box), cuts_box_);
    form->addRow(new QLabel(tr("Graph"), box), substitute_box_);
    form->addRow(new QLabel(tr("Start from"), box), warm_box_);
    form->addRow(buttons);
    return box;
}

QWidget *OptimizeController::createRunBar(QWidget *parent) {
    auto *bar = new QWidget(parent);
    auto *column = new QVBoxLayout(bar);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(3);
    prediction_badge_ = new QLabel(tr("PREDICTION"), bar);
    prediction_badge_->setToolTip(tr("Every figure here is the cost model's prediction, not a measurement"));
    styleBadge(prediction_badge_, QStringLiteral("#e0e7ff"), QStringLiteral("#3730a3"));
    progress_ = new QLabel(bar);
    progress_->setObjectName(QStringLiteral("optimizeProgress"));
    progress_->setWordWrap(true);
    progress_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_->setText(tr("Pick a target, the devices and the objectives, then Start (%1).")
                           .arg(start_action_->shortcut().toString(QKeySequence::NativeText)));
    run_box_ = new QComboBox(bar);
    run_box_->setObjectName(QStringLiteral("optimizeRuns"));
    run_box_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    run_box_->setMinimumContentsLength(10);  // a long run label elides; each item's tooltip has it whole
    run_box_->setToolTip(tr("The searches kept in the session for this project, newest first"));
    connect(run_box_, &QComboBox::activated, this, [this](int index) {
        const qint64 run = run_box_->itemData(index).toLongLong();
        if (run != 0 && run != shown_run_) showRun(run);
    });
    compare_button_ = new QPushButton(tr("Compare"), bar);
    compare_button_->setObjectName(QStringLiteral("optimizeCompare"));
    compare_button_->setToolTip(compare_action_->statusTip());
    connect(compare_button_, &QPushButton::clicked, compare_action_, &QAction::trigger);
    export_button_ = new QToolButton(bar);
    export_button_->setObjectName(QStringLiteral("optimizeExport"));
    export_button_->setText(tr("Export"));
    export_button_->setPopupMode(QToolButton::InstantPopup);
    auto *menu = new QMenu(export_button_);
    for (const QString &what : {tr("Front as CSV…"), tr("Front as JSON…"), tr("Chart as PNG…"), tr("Chart as SVG…")})
        connect(menu->addAction(what), &QAction::triggered, this, [this, what] { exportDialog(what); });
    export_button_->setMenu(menu);
    auto *top = new QHBoxLayout;
    top->addWidget(prediction_badge_, 0, Qt::AlignTop);
    top->addWidget(progress_, 1);
    auto *runs = new QHBoxLayout;
    runs->addWidget(formLabel(tr("&Run"), run_box_, bar));
    runs->addWidget(run_box_, 1);
    runs->addWidget(compare_button_);
    runs->addWidget(export_button_);
    // Said while the chart shows a search of the graph as it was before an edit.
    graph_changed_ = new QLabel(bar);
    graph_changed_->setObjectName(QStringLiteral("optimizeGraphChanged"));
    graph_changed_->setWordWrap(true);
    graph_changed_->setStyleSheet(QStringLiteral("QLabel { color: #92400e; }"));
    graph_changed_->hide();
    column->addLayout(top);
    column->addLayout(runs);
    column->addWidget(graph_changed_);
    return bar;
}

QCheckBox *OptimizeController::objectiveBox(search::Objective o) const {
    return objective_boxes_[static_cast<size_t>(o)];
}

std::vector<search::Objective> OptimizeController::chosenObjectives() const {
    std::vector<search::Objective> out;
    for (search::Objective o : search::all_objectives())
        if (objectiveBox(o)->isChecked()) out.push_back(o);
    return out;
}

void OptimizeController::restoreSettings() {
    QSettings settings;
    fillTargets();
    selectTarget(settings.value(QStringLiteral("optimize/target"), QStringLiteral("h100-sxm")).toString());
    devices_box_->setValue(settings.value(QStringLiteral("optimize/devices"), 8).toInt());
    nodes_box_->setValue(settings.value(QStringLiteral("optimize/nodes"), 0).toInt());
    const QStringList chosen =
        settings.value(QStringLiteral("optimize/objectives"), QStringList{"time", "memory", "devices"}).toStringList();
    for (search::Objective o : search::all_objectives())
        objectiveBox(o)->setChecked(chosen.contains(QString::fromLatin1(search::objective_name(o))));
    memory_cap_box_->setValue(settings.value(QStringLiteral("optimize/memoryCapGiB"), 0.0).toDouble());
    max_time_box_->setValue(settings.value(QStringLiteral("optimize/maxTimeMs"), 0.0).toDouble());
    budget_box_->setValue(settings.value(QStringLiteral("optimize/budgetSeconds"), 30.0).toDouble());
    evaluations_box_->setValue(settings.value(QStringLiteral("optimize/evaluations"), 0).toInt());
    seed_box_->setValue(settings.value(QStringLiteral("optimize/seed"), 1).toInt());
    stall_box_->setValue(settings.value(QStringLiteral("optimize/stall"), 12).toInt());
    fusion_box_->setChecked(settings.value(QStringLiteral("optimize/fusion"), true).toBool());
    maps_box_->setChecked(settings.value(QStringLiteral("optimize/maps"), false).toBool());
    cuts_box_->setChecked(settings.value(QStringLiteral("optimize/cuts"), false).toBool());
    substitute_box_->setChecked(settings.value(QStringLiteral("optimize/substitute"), false).toBool());
}

// The settings of a run shown from the session, in the dock's fields: Start then
// searches again as that run did (with its seed, the same front under an
// evaluation budget). Not remembered as the user's settings until a search starts.
void OptimizeController::showSettings(const views::SearchRunOutcome &o) {
    const views::RunSettings &r = o.settings;
    selectTarget(qs(o.run.target));
    devices_box_->setValue(r.devices);
    nodes_box_->setValue(r.nodes);
    for (search::Objective ob : search::all_objectives())
        objectiveBox(ob)->setChecked(std::find(r.objectives.begin(), r.objectives.end(), ob) != r.objectives.end());
    memory_cap_box_->setValue(r.constraints.memory_cap / kGiB);
    max_time_box_->setValue(r.constraints.max_time * 1e3);
    budget_box_->setValue(r.options.budget_seconds);
    evaluations_box_->setValue(static_cast<int>(std::min<long>(r.options.max_evaluations, evaluations_box_->maximum())));
    seed_box_->setValue(static_cast<int>(std::min<std::uint64_t>(o.run.seed, static_cast<std::uint64_t>(seed_box_->maximum()))));
    stall_box_->setValue(r.options.stall_generations);
    fusion_box_->setChecked(r.fusion);
    maps_box_->setChecked(r.maps);
    cuts_box_->setChecked(r.cuts);
    substitute_box_->setChecked(r.substitute);
}

void OptimizeController::rememberSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("optimize/target"), target_box_->currentText());
    settings.setValue(QStringLiteral("optimize/devices"), devices_box_->value());
    settings.setValue(QStringLiteral("optimize/nodes"), nodes_box_->value());
    QStringList chosen;
    for (search::Objective o : chosenObjectives()) chosen << QString::fromLatin1(search::objective_name(o));
    settings.setValue(QStringLiteral("optimize/objectives"), chosen);
    settings.setValue(QStringLiteral("optimize/memoryCapGiB"), memory_cap_box_->value());
    settings.setValue(QStringLiteral("optimize/maxTimeMs"), max_time_box_->value());
    settings.setValue(QStringLiteral("optimize/budgetSeconds"), budget_box_->value());
    settings.setValue(QStringLiteral("optimize/evaluations"), evaluations_box_->value());
    settings.setValue(QStringLiteral("optimize/seed"), seed_box_->value());
    settings.setValue(QStringLiteral("optimize/stall"), stall_box_->value());
    settings.setValue(QStringLiteral("optimize/fusion"), fusion_box_->isChecked());
    settings.setValue(QStringLiteral("optimize/maps"), maps_box_->isChecked());
    settings.setValue(QStringLiteral("optimize/cuts"), cuts_box_->isChecked());
    settings.setValue(QStringLiteral("optimize/substitute"), substitute_box_->isChecked());
}

void OptimizeController::updateActions() {
    const bool busy = isSearching();
    start_action_->setEnabled(!busy && doc_->isOpen() && !chosenObjectives().empty());
    start_button_->setEnabled(start_action_->isEnabled());
    stop_action_->setEnabled(busy);
    stop_button_->setEnabled(busy);
    compare_action_->setEnabled(chart_->selection().size() == 2 && setup_.has_value());
    compare_button_->setEnabled(compare_action_->isEnabled());
    export_button_->setEnabled(chart_->frontCount() > 0);
    run_box_->setEnabled(!busy && run_box_->count() > 0);
    // A run shown (one just finished, or read from the session) that is kept.
    warm_box_->setEnabled(!busy && shown_run_ != 0 && session_->session() != nullptr);
    warm_box_->setText(shown_run_ != 0 ? tr("Run #%1's front").arg(shown_run_) : tr("The shown run's front"));
    showWhetherTheGraphChanged();  // a search started or ended, a run shown
}

void OptimizeController::giveDockRoom() {
    showWithRoom(dock_, window_, kDockHeight, dock_sized_);
    widenToContent(dock_, window_);
}

void OptimizeController::fail(const QString &why) {
    last_error_ = why;
    progress_->setText(tr("<span style=\"color:#b91c1c\"><b>Not optimized:</b> %1</span>").arg(why.toHtmlEscaped()));
    status_->showMessage(tr("Optimize: %1").arg(why), 15000);
}

// ---- targets -----------------------------------------------------------------------

void OptimizeController::fillTargets() {
    const QString keep = target_box_->currentText();
    const QSignalBlocker block(target_box_);
    target_box_->clear();
    for (const std::string &name : cost::builtin_target_names()) {
        // The host has figures only once measured (the Plan dock measures it).
        if (name == "host" && !plans_->measuredHost()) continue;
        target_box_->addItem(name == "host" ? tr("host (measured)") : qs(name));
        target_box_->setItemData(target_box_->count() - 1, qs(name), kNameRole);
        target_box_->setItemData(target_box_->count() - 1, false, kUserFlag);
    }
    for (const cost::Target &t : plans_->userTargets()) {
        target_box_->addItem(tr("%1 (user)").arg(qs(t.name)));
        target_box_->setItemData(target_box_->count() - 1, qs(t.name), kNameRole);
        target_box_->setItemData(target_box_->count() - 1, true, kUserFlag);
        target_box_->setItemData(target_box_->count() - 1, qs(t.title), Qt::ToolTipRole);
    }
    if (!keep.isEmpty()) selectTarget(keep);
}

bool OptimizeController::selectTarget(const QString &name) {
    int found = target_box_->findText(name);
    for (int i = 0; found < 0 && i < target_box_->count(); ++i)
        if (target_box_->itemData(i, kNameRole).toString() == name) found = i;
    if (found < 0) return false;
    target_box_->setCurrentIndex(found);
    return true;
}

Expected<cost::Target, std::string> OptimizeController::targetNamed(const std::string &name, bool user) const {
    if (user) {
        for (const cost::Target &t : plans_->userTargets())
            if (t.name == name) return t;
        return unexpected("no user target '" + name + "'");
    }
    if (name == "host") {
        if (plans_->measuredHost()) return *plans_->measuredHost();
        return unexpected(std::string("the host is not measured yet: measure it in the Plan dock first"));
    }
    return cost::builtin_target(name);
}

// ---- the search ----------------------------------------------------------------------

bool OptimizeController::isSearching() const {
    return worker_->isRunning() || waiting_job_.has_value();
}

bool OptimizeController::startSearch() {
    if (isSearching() || !doc_->isOpen() || doc_->graph().node_count() == 0) return false;
    const std::vector<search::Objective> objectives = chosenObjectives();
    if (objectives.empty()) {
        fail(tr("pick at least one objective"));
        return false;
    }
    auto target = targetNamed(target_box_->currentData(kNameRole).toString().toStdString(),
                              target_box_->currentData(kUserFlag).toBool());
    if (!target) {
        fail(qs(target.error()));
        return false;
    }
    views::SearchJob job;
    job.setup = views::SearchSetup{doc_->graph(),
                                   *target,
                                   devices_box_->value(),
                                   nodes_box_->value(),
                                   objectives,
                                   search::Constraints{memory_cap_box_->value() * kGiB, max_time_box_->value() / 1e3}};
    job.options.budget_seconds = budget_box_->value();
    job.options.max_evaluations = evaluations_box_->value();
    job.options.seed = static_cast<std::uint64_t>(seed_box_->value());
    job.options.stall_generations = stall_box_->value();
    job.setup.fusion = fusion_box_->isChecked();
    job.setup.maps = maps_box_->isChecked();
    job.setup.cuts = cuts_box_->isChecked();
    job.setup.substitute = substitute_box_->isChecked();
    job.session = session_->sharedSession();
    if (warm_box_->isChecked() && warm_box_->isEnabled() && job.session) job.warm_run = shown_run_;
    job.setup.calibration = job.session;  // its launches on the target calibrate the figures
    job.project_name = doc_->source().name;
    job.project_file = doc_->source().path;
    last_error_.clear();
    rememberSettings();
    target_label_ = target_box_->currentText();
    if (job.session && session_->projectId() == 0) {
        // The run hangs off the document's project: a document not in the session
        // yet (a file just opened) is saved first, a moment, then the search starts.
        waiting_job_ = std::move(job);
        session_->save(true);
        progress_->setText(tr("Saving the graph into the session before the search…"));
        updateActions();
        return true;
    }
    launch(std::move(job));
    return true;
}

void OptimizeController::onSessionSaved(const QString &error) {
    if (!waiting_job_) return;
    views::SearchJob job = std::move(*waiting_job_);
    waiting_job_.reset();
    job.project = session_->projectId();
    if (!error.isEmpty() || job.project == 0) job.session.reset();  // searched, not kept (the status bar says why)
    launch(std::move(job));
}

void OptimizeController::launch(views::SearchJob job) {
    job.project = job.session ? session_->projectId() : 0;
    setup_ = job.setup;
    setup_error_.clear();
    seed_ = job.options.seed;
    shown_run_ = 0;
    if (worker_->start(job) == 0) return;
    chart_->reset(job.setup.objectives);
    search::Constraints shown = job.setup.constraints;
    if (shown.memory_cap <= 0) shown.memory_cap = job.setup.target.device.memory_bytes.value;
    chart_->setConstraints(shown);
    baselines_job_ = worker_->makeBaselines(job.setup);
    const QString budget =
        job.options.budget_seconds > 0 ? tr("budget %1 s").arg(job.options.budget_seconds) : tr("no time budget");
    status_->showMessage(tr("Optimizing %1 on %2 × %3 (%4)%5…")
                             .arg(doc_->source().name)
                             .arg(job.setup.devices)
                             .arg(target_label_, budget,
                                  session_->session() && !job.session ? tr(", not kept in the session") : QString()));
    progress_->setText(job.warm_run != 0 ? tr("Starting the search from run #%1's front…").arg(job.warm_run)
                                         : tr("Starting the search…"));
    giveDockRoom();
    updateActions();
}

void OptimizeController::stopSearch() {
    if (waiting_job_) {
        waiting_job_.reset();
        progress_->setText(tr("Search cancelled before it started."));
        updateActions();
        emit searchFinished(false);
        return;
    }
    if (!worker_->isRunning()) return;
    worker_->stop();
    status_->showMessage(tr("Stopping the search…"));
}

void OptimizeController::showProgress(long evaluations, long invalid, int generation, double seconds) {
    QString text = tr("generation %1 · %2 plans (%3/s)")
                       .arg(generation)
                       .arg(evaluations)
                       .arg(seconds > 0 ? evaluations / seconds : 0.0, 0, 'f', 0);
    if (invalid > 0) text += tr(", %1 without a plan").arg(invalid);
    text += tr(" · front %1").arg(chart_->frontCount());
    const std::vector<const views::ParetoPoint *> front = chart_->frontPoints();
    for (search::Objective o : setup_ ? setup_->objectives : chosenObjectives()) {
        double best = std::numeric_limits<double>::infinity();
        for (const views::ParetoPoint *p : front) best = std::min(best, search::figure_of(p->figures, o));
        if (std::isfinite(best)) text += tr(" · best %1 %2").arg(views::objectiveTitle(o), views::figureText(o, best));
    }
    progress_->setText(text);
}

void OptimizeController::onUpdated(const views::SearchUpdate &update) {
    if (update.job != worker_->currentSearch() || update.job == abandoned_job_ || shown_run_ != 0) return;
    chart_->addPoints(update.fresh);
    if (update.front_moved) chart_->setFront(update.front);
    showProgress(update.evaluations, update.invalid, update.generation, update.seconds);
    updateActions();
}

void OptimizeController::onFinished(const views::SearchOutcome &outcome) {
    if (outcome.job == abandoned_job_) {
        // Of a document no longer shown: kept in the session (if one is open), not drawn.
        if (replan_pending_) {
            replan_pending_ = false;
            emit replanOpened(QString(), tr("the graph changed while it searched"));
        }
        updateActions();
        status_->showMessage(
            tr("The search of the previous graph stopped (%1 plans evaluated)").arg(outcome.evaluations), 8000);
        listRuns();
        emit searchFinished(outcome.ok);
        return;
    }
    if (outcome.project != 0) session_->adoptProject(outcome.project);
    if (outcome.run != 0) shown_run_ = outcome.run;
    updateActions();
    if (!outcome.ok) {
        fail(outcome.error);
        emit searchFinished(false);
        listRuns();
        if (replan_pending_) {
            replan_pending_ = false;
            emit replanOpened(QString(), outcome.error);
        }
        return;
    }
    chart_->setFront(outcome.front);
    showProgress(outcome.evaluations, outcome.invalid, outcome.generations, outcome.seconds);
    QString message = tr("Optimized %1: %2 plans in %3 s (%4/s), %5 generations, stopped: %6; front %7 (predictions)")
                          .arg(doc_->source().name)
                          .arg(outcome.evaluations)
                          .arg(outcome.seconds, 0, 'f', outcome.seconds < 10 ? 2 : 1)
                          .arg(outcome.seconds > 0 ? outcome.evaluations / outcome.seconds : 0.0, 0, 'f', 0)
                          .arg(outcome.generations)
                          .arg(outcome.stopped)
                          .arg(chart_->frontCount());
    // Infeasible points stay on the front only while none is feasible: say so, as
    // the CLI does, rather than leave the red points to speak for themselves.
    const auto front_points = chart_->frontPoints();
    if (!front_points.empty() && std::all_of(front_points.begin(), front_points.end(), [](const views::ParetoPoint *p) {
            return p && p->figures.violation > 0;
        }))
        message += tr("; no plan found keeps the constraints (every point of the front is over one)");
    if (!outcome.warm_start.isEmpty()) message += QStringLiteral("; ") + outcome.warm_start;
    if (!outcome.store_error.isEmpty())
        message += tr("; not kept in the session: %1").arg(outcome.store_error);
    else if (outcome.run != 0)
        message += tr("; kept in %1 as run #%2").arg(QFileInfo(session_->path()).fileName()).arg(outcome.run);
    status_->showMessage(message, 15000);
    listRuns();
    emit searchFinished(true);
    if (replan_pending_) {
        replan_pending_ = false;
        // The fastest plan on the front that meets every constraint.
        const views::ParetoPoint *best = nullptr;
        for (const views::ParetoPoint *p : chart_->frontPoints())
            if (p && p->figures.violation == 0 && (!best || p->figures.makespan < best->figures.makespan)) best = p;
        if (!best) {
            const QString why = tr("the search found no plan on %1 devices that meets the constraints").arg(devices_box_->value());
            status_->showMessage(tr("Re-plan: %1").arg(why), 15000);
            emit replanOpened(QString(), why);
        } else if (openPoint(best->key)) {
            emit replanOpened(best->key, QString());
        } else {
            emit replanOpened(QString(), setup_error_);
        }
    }
}

// ---- re-planning after a lost device --------------------------------------------------

bool OptimizeController::replanOn(const QString &target, int devices) {
    if (isSearching()) {
        last_error_ = tr("a search is running: stop it first");
        return false;
    }
    if (!selectTarget(target)) {
        last_error_ = tr("the Optimize dock does not list the target '%1'").arg(target);
        return false;
    }
    devices_box_->setValue(devices);
    nodes_box_->setValue(0);  // auto: as the target's clusters suggest
    // The run the chart shows (a kept one: the search the launched plan most
    // likely came from) seeds the survivors' search: its plans on as many devices
    // as are left carry over as they were, the others as far as the devices allow
    // (search::carry_over). The dock shows the setting checked, the status says
    // where the search started.
    if (warm_box_->isEnabled()) warm_box_->setChecked(true);
    replan_pending_ = true;
    last_error_ = tr("the search could not start");
    if (!startSearch()) {
        replan_pending_ = false;
        return false;
    }
    dock_->show();
    dock_->raise();
    return true;
}

// ---- plans of points, comparison ------------------------------------------------------

bool OptimizeController::openPoint(const QString &key) {
    const views::ParetoPoint *p = chart_->point(key);
    if (!p) return false;
    if (!setup_) {
        status_->showMessage(tr("Cannot make the plan of %1: %2").arg(p->brief(), setup_error_), 15000);
        emit pointOpened(key, setup_error_);
        return false;
    }
    chart_->selectPoint(key);
    open_key_ = key;
    open_job_ = worker_->makePlans(*setup_, {p->candidate});
    status_->showMessage(tr("Making the plan of %1…").arg(p->brief()));
    return true;
}

bool OptimizeController::compareSelected() {
    const QStringList keys = chart_->selection();
    if (keys.size() != 2 || !setup_) return false;
    compare_keys_ = keys;
    compare_job_ = worker_->makePlans(*setup_, {chart_->point(keys[0])->candidate, chart_->point(keys[1])->candidate});
    status_->showMessage(tr("Making the two plans to compare…"));
    return true;
}

void OptimizeController::onPlansReady(const views::PlansOutcome &outcome) {
    if (outcome.job == compare_job_) {
        if (!outcome.ok) {
            status_->showMessage(tr("Cannot compare: %1").arg(outcome.error), 15000);
            emit compared(outcome.error);
            return;
        }
        showComparison(outcome);
        status_->showMessage(tr("Compared A and B (predictions)"), 8000);
        emit compared(QString());
        return;
    }
    if (outcome.job != open_job_) return;  // a point clicked since
    const views::ParetoPoint *p = chart_->point(open_key_);
    if (!outcome.ok || !p) {
        const QString error = outcome.ok ? tr("the point is no longer shown") : outcome.error;
        status_->showMessage(tr("No plan for the point: %1").arg(error), 15000);
        emit pointOpened(open_key_, error);
        return;
    }
    const std::shared_ptr<const plan::PlanResult> &r = outcome.plans.front();
    plans_->showPlan(r, setup_->graph, target_label_, setup_->target.device.memory_bytes.value);
    status_->showMessage(tr("Plan of the point in the Plan dock (makespan %1, prediction; certificates PASS): %2")
                             .arg(qs(plan::seconds_text(r->prediction.makespan)), p->brief()),
                         10000);
    emit pointOpened(open_key_, QString());
}

QDialog *OptimizeController::compareDialog() const {
    return compare_;
}

void OptimizeController::showComparison(const views::PlansOutcome &outcome) {
    if (!compare_) {
        compare_ = new QDialog(window_);
        compare_->setObjectName(QStringLiteral("optimizeCompareDialog"));
        compare_->setAttribute(Qt::WA_DeleteOnClose);
        compare_->resize(760, 520);
        auto *column = new QVBoxLayout(compare_);
        auto *note = new QLabel(tr("Two plans of the front side by side; every figure is a prediction of the cost "
                                   "model. The better figure of each row is in bold."),
                                compare_);
        note->setWordWrap(true);
        column->addWidget(note);
        auto *table = new QTableWidget(compare_);
        table->setObjectName(QStringLiteral("optimizeCompareTable"));
        table->setEditTriggers(QAbstractItemView::NoEditTriggers);
        table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
        column->addWidget(table, 1);
        auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, compare_);
        connect(buttons, &QDialogButtonBox::rejected, compare_, &QDialog::close);
        column->addWidget(buttons);
    }
    compare_->setWindowTitle(tr("Compare Plans — %1").arg(doc_->source().name));
    auto *table = compare_->findChild<QTableWidget *>(QStringLiteral("optimizeCompareTable"));
    table->clear();
    table->setColumnCount(2);
    table->setHorizontalHeaderLabels({QStringLiteral("A"), QStringLiteral("B")});
    QStringList rows;
    // One row: the two values, the smaller in bold when `lower` (smaller is better).
    auto add = [&](const QString &name, double a, double b, const std::function<QString(double)> &text, bool lower) {
        const int r = static_cast<int>(rows.size());
        rows << name;
        table->setRowCount(r + 1);
        for (int c = 0; c < 2; ++c) {
            const double v = c == 0 ? a : b, other = c == 0 ? b : a;
            auto *item = new QTableWidgetItem(text(v));
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (lower && v < other) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
            table->setItem(r, c, item);
        }
    };
    auto text_row = [&](const QString &name, const QString &a, const QString &b) {
        const int r = static_cast<int>(rows.size());
        rows << name;
        table->setRowCount(r + 1);
        table->setItem(r, 0, new QTableWidgetItem(a));
        table->setItem(r, 1, new QTableWidgetItem(b));
    };
    const plan::PlanResult &a = *outcome.plans[0], &b = *outcome.plans[1];
    const views::ParetoPoint *pa = chart_->point(compare_keys_[0]), *pb = chart_->point(compare_keys_[1]);
    text_row(tr("plan"), pa ? pa->brief() : QString(), pb ? pb->brief() : QString());
    for (int col = 0; col < 2; ++col)  // the whole description on hover
        if (const views::ParetoPoint *p = col == 0 ? pa : pb) table->item(table->rowCount() - 1, col)->setToolTip(p->description);
    const auto time = [](double v) { return qs(plan::seconds_text(v)); };
    const auto bytes = [](double v) { return qs(byte_text(std::llround(v))); };
    const auto count = [](double v) { return QString::number(std::lround(v)); };
    add(tr("step time"), a.prediction.makespan, b.prediction.makespan, time, true);
    add(tr("peak memory (fullest device)"), static_cast<double>(a.prediction.peak),
        static_cast<double>(b.prediction.peak), bytes, true);
    add(tr("devices used"), pa ? pa->figures.devices : 0, pb ? pb->figures.devices : 0, count, true);
    add(tr("communication"), a.prediction.comm_bytes, b.prediction.comm_bytes, bytes, true);
    add(tr("communication time"), a.prediction.comm_seconds, b.prediction.comm_seconds, time, true);
    add(tr("steps"), static_cast<double>(a.plan.steps.size()), static_cast<double>(b.plan.steps.size()), count, false);
    text_row(tr("plan certificate"), qs(a.certificate.badge()), qs(b.certificate.badge()));
    // Per device: its peak, by name (a plan may use fewer devices than the other).
    std::vector<std::string> names;
    for (const plan::PlanResult *r : {&a, &b})
        for (const plan::Device &d : r->plan.devices)
            if (std::find(names.begin(), names.end(), d.name) == names.end()) names.push_back(d.name);
    auto peak_on = [](const plan::PlanResult &r, const std::string &name) {
        for (size_t d = 0; d < r.plan.devices.size(); ++d)
            if (r.plan.devices[d].name == name) return static_cast<double>(r.prediction.devices[d].peak);
        return -1.0;
    };
    for (const std::string &name : names)
        add(
            tr("peak memory on %1").arg(qs(name)), peak_on(a, name), peak_on(b, name),
            [bytes](double v) { return v < 0 ? QStringLiteral("—") : bytes(v); }, false);
    table->setVerticalHeaderLabels(rows);
    compare_->show();
    compare_->raise();
}

// ---- exports --------------------------------------------------------------------------

bool OptimizeController::exportFront(const QString &path) {
    const std::vector<const views::ParetoPoint *> front = chart_->frontPoints();
    if (front.empty() || path.isEmpty()) return false;
    const QByteArray text = path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)
                                ? QByteArray::fromStdString(search::front_csv(frontRows(front)))
                                : QByteArray::fromStdString(search::front_json(
                                      {doc_->source().name.toStdString(), setup_ ? setup_->target.name : std::string(),
                                       setup_ ? setup_->devices : 0, seed_},
                                      frontRows(front)));
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
        const QString error = watcher->result();
        watcher->deleteLater();
        if (error.isEmpty())
            status_->showMessage(tr("Exported the front to %1").arg(QDir::toNativeSeparators(path)), 8000);
        else
            status_->showMessage(tr("Front not exported: %1").arg(error), 15000);
        emit frontExported(path, error);
    });
    watcher->setFuture(QtConcurrent::run([path, text] {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit())
            return tr("could not write %1: %2").arg(path, file.errorString());
        return QString();
    }));
    return true;
}

QString OptimizeController::exportChart(const QString &path) {
    const QString error =
        path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive) ? chart_->saveSvg(path) : chart_->savePng(path);
    if (error.isEmpty())
        status_->showMessage(tr("Exported the chart to %1").arg(QDir::toNativeSeparators(path)), 8000);
    else
        status_->showMessage(tr("Chart not exported: %1").arg(error), 15000);
    return error;
}

void OptimizeController::exportDialog(const QString &what) {
    const bool csv = what.contains(QLatin1String("CSV")), json = what.contains(QLatin1String("JSON"));
    const bool svg = what.contains(QLatin1String("SVG"));
    const QString suffix = csv    ? QStringLiteral("csv")
                           : json ? QStringLiteral("json")
                           : svg  ? QStringLiteral("svg")
                                  : QStringLiteral("png");
    const QFileInfo source(doc_->source().path);
    const QString base = source.completeBaseName().remove(QLatin1String(".tapestry"));
    const QString dir = source.absolutePath().isEmpty() ? QDir::homePath() : source.absolutePath();
    const QString name = QStringLiteral("%1-front.%2").arg(base.isEmpty() ? QStringLiteral("search") : base, suffix);
    QString path = QFileDialog::getSaveFileName(window_, what.chopped(1), QDir(dir).filePath(name),
                                                QStringLiteral("*.%1").arg(suffix));
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1Char('.') + suffix, Qt::CaseInsensitive)) path += QLatin1Char('.') + suffix;
    if (csv || json)
        exportFront(path);
    else
        exportChart(path);
}

// ---- runs kept in the session -----------------------------------------------------------

void OptimizeController::listRuns() {
    if (!session_->session() || session_->projectId() == 0) {
        runs_.clear();
        fillRunBox();
        return;
    }
    runs_job_ = worker_->listRuns(session_->sharedSession(), session_->projectId());
}

void OptimizeController::onRunsListed(const views::SearchRunsOutcome &outcome) {
    if (outcome.job != runs_job_) return;
    runs_ = outcome.runs;
    fillRunBox();
    if (!outcome.error.isEmpty())
        status_->showMessage(tr("Searches of the session not listed: %1").arg(outcome.error), 15000);
    emit runsListed(static_cast<int>(runs_.size()), outcome.error);
    // Reopened: the chart shows the newest run until a search starts.
    if (!runs_.empty() && shown_run_ == 0 && !isSearching() && chart_->pointCount() == 0) showRun(runs_.back().id);
}

void OptimizeController::fillRunBox() {
    const QSignalBlocker block(run_box_);
    run_box_->clear();
    for (auto r = runs_.rbegin(); r != runs_.rend(); ++r) {
        run_box_->addItem(tr("#%1 · %2 · front %3 of %4 · %5")
                              .arg(r->id)
                              .arg(localTimeText(r->started_at))
                              .arg(r->on_front)
                              .arg(r->candidates)
                              .arg(qs(r->status)),
                          static_cast<qlonglong>(r->id));
        QString tip = tr("Search run #%1 on %2, started %3, %4 plans kept, %5 on the front: %6")
                          .arg(r->id)
                          .arg(qs(r->target), localTimeText(r->started_at))
                          .arg(r->candidates)
                          .arg(r->on_front)
                          .arg(qs(r->status));
        if (auto kept = search::parse_settings(r->settings_json); kept && kept->warm_start_run > 0)
            tip += tr(" — started from run #%1's front").arg(kept->warm_start_run);
        if (r->status == "running")
            tip += tr(" — never finished: the studio stopped while it ran; what it had found is kept");
        run_box_->setItemData(run_box_->count() - 1, tip, Qt::ToolTipRole);
    }
    const int shown = run_box_->findData(static_cast<qlonglong>(shown_run_));
    run_box_->setCurrentIndex(shown >= 0 ? shown : (run_box_->count() > 0 ? 0 : -1));
    updateActions();
}

bool OptimizeController::showRun(store::SearchRunId run) {
    if (!session_->session() || isSearching()) return false;
    run_job_ = worker_->loadRun(session_->sharedSession(), run);
    status_->showMessage(tr("Reading search run #%1…").arg(run));
    return true;
}

void OptimizeController::onRunLoaded(const views::SearchRunOutcome &outcome) {
    if (outcome.job != run_job_ || isSearching()) return;
    if (!outcome.error.isEmpty()) {
        fail(outcome.error);
        emit runShown(outcome.run.id, outcome.error);
        return;
    }
    const views::SearchRunOutcome &o = outcome;
    shown_run_ = o.run.id;
    seed_ = o.run.seed;
    // Its target by name: a built-in one, a user copy, or the measured host.
    auto target = targetNamed(o.run.target, false);
    if (!target) target = targetNamed(o.run.target, true);
    setup_.reset();
    setup_error_.clear();
    search::Constraints shown = o.settings.constraints;
    if (target) {
        setup_ = views::SearchSetup{o.graph,
                                    *target,
                                    o.settings.devices,
                                    o.settings.nodes,
                                    o.settings.objectives,
                                    o.settings.constraints,
                                    o.settings.fusion,
                                    o.settings.maps,
                                    o.settings.cuts,
                                    o.settings.substitute,
                                    session_->sharedSession()};
        target_label_ = qs(target->name);
        if (shown.memory_cap <= 0) shown.memory_cap = target->device.memory_bytes.value;
    } else {
        setup_error_ = tr("the run's target '%1' is not known here (%2)").arg(qs(o.run.target), qs(target.error()));
    }
    showSettings(o);
    chart_->reset(o.settings.objectives);
    chart_->setConstraints(shown);
    chart_->addPoints(o.points);
    chart_->setFront(o.front);
    if (setup_) baselines_job_ = worker_->makeBaselines(*setup_);
    fillRunBox();
    progress_->setText(tr("Run #%1 of %2 on %3 × %4: %5 plans · front %6 · %7%8")
                           .arg(o.run.id)
                           .arg(localTimeText(o.run.started_at))
                           .arg(o.settings.devices)
                           .arg(qs(o.run.target))
                           .arg(o.points.size())
                           .arg(o.front.size())
                           .arg(qs(o.run.status))
                           .arg(o.settings.warm_start_run > 0
                                    ? tr(" · started from run #%1's front").arg(o.settings.warm_start_run)
                                    : QString()));
    status_->showMessage(tr("Search run #%1 from the session: %2 plans, front %3 (%4)")
                             .arg(o.run.id)
                             .arg(o.points.size())
                             .arg(o.front.size())
                             .arg(qs(o.run.status)),
                         8000);
    updateActions();
    emit runShown(o.run.id, QString());
}

void OptimizeController::showWhetherTheGraphChanged() {
    if (!graph_changed_) return;  // the dock is still being made
    const bool changed = setup_ && !isSearching() && doc_->isOpen() && !views::sameGraph(setup_->graph, doc_->graph());
    if (changed) {
        const QString run = shown_run_ != 0 ? tr("run #%1").arg(shown_run_) : tr("this search");
        graph_changed_->setText(
            shown_run_ != 0 && session_->session()
                ? tr("The graph changed since %1: its points and plans are of the graph as it was. Start again to "
                     "re-plan; Start from: %2 carries its front over.")
                      .arg(run, warm_box_->text())
                : tr("The graph changed since %1: its points and plans are of the graph as it was. Start again to "
                     "re-plan.")
                      .arg(run));
    }
    graph_changed_->setVisible(changed);
}

void OptimizeController::onDocumentChanged(GraphDocument::Changes what) {
    if (what & GraphDocument::Replaced) {
        // A search is of the document: another one shown stops it (it is still kept).
        waiting_job_.reset();
        if (worker_->isRunning()) {
            abandoned_job_ = worker_->currentSearch();
            worker_->stop();
        }
        setup_.reset();
        shown_run_ = 0;
        runs_.clear();
        chart_->reset(chosenObjectives());
        progress_->setText(tr("Pick a target, the devices and the objectives, then Start (%1).")
                               .arg(start_action_->shortcut().toString(QKeySequence::NativeText)));
        listRuns();
    }
    updateActions();  // and whether the graph changed since the chart's search
}

}  // namespace tapestry::studio
