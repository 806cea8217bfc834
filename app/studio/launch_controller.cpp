#include "launch_controller.h"

#include <QAction>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFutureWatcher>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "common/checked_size.h"
#include "dock.h"
#include "launch/cpu_backend.h"
#include "launch/cuda_backend.h"
#include "optimize_controller.h"
#include "plan/simulate.h"
#include "session_controller.h"
#include "views/graph_document.h"
#include "views/launch_scatter.h"
#include "views/plan_gantt.h"

namespace tapestry::studio {

namespace {

constexpr int kDockHeight = 420;  // the room a launch needs below the canvas

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

QString secondsText(double s) {
    return qs(plan::seconds_text(s));
}

QString bytesText(std::int64_t bytes) {
    return qs(byte_text(bytes));
}

QString deviceName(const plan::Plan &p, int device) {
    return device >= 0 && static_cast<size_t>(device) < p.devices.size()
               ? qs(p.devices[static_cast<size_t>(device)].name)
               : QString::number(device);
}

QTableWidget *makeTable(const QStringList &headers, const char *name, QWidget *parent) {
    auto *table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    table->setObjectName(QString::fromLatin1(name));
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setAlternatingRowColors(true);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    return table;
}

QTableWidgetItem *setCell(QTableWidget *table, int row, int column, const QString &text,
                          Qt::Alignment align = Qt::AlignRight) {
    auto *item = new QTableWidgetItem(text);
    item->setTextAlignment(align | Qt::AlignVCenter);
    table->setItem(row, column, item);
    return item;
}

}  // namespace

LaunchController::LaunchController(views::GraphDocument *doc, SessionController *session, PlanController *plans,
                                   QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), session_(session), plans_(plans), status_(status), window_(window) {
    worker_ = new views::LaunchWorker(this);
    createActions();
    createDock(window);
    connect(worker_, &views::LaunchWorker::progress, this, &LaunchController::onProgress);
    connect(worker_, &views::LaunchWorker::finished, this, &LaunchController::onFinished);
    connect(worker_, &views::LaunchWorker::recorded, this, &LaunchController::onRecorded);
    connect(plans_, &PlanController::resultChanged, this, [this] {
        if (dialog_ && !isLaunching()) dialog_->reject();  // it was about another plan
        updateActions();
        lookUpHistory();
    });
    // Planning starts and ends: the re-plan button waits for the Plan dock.
    connect(plans_, &PlanController::planFinished, this, &LaunchController::updateReplanButton);
    QSettings settings;
    settings_.seed = settings.value(QStringLiteral("launch/seed"), 1).toULongLong();
    settings_.oracle = settings.value(QStringLiteral("launch/oracle"), false).toBool();
    settings_.wait_timeout_seconds = settings.value(QStringLiteral("launch/timeout"), 120.0).toDouble();
    settings_.transport = settings.value(QStringLiteral("launch/transport"), QStringLiteral("auto")).toString();
    settings_.tf32 = settings.value(QStringLiteral("launch/tf32"), false).toBool();
    updateActions();
}

LaunchController::~LaunchController() = default;

// ---- the dock --------------------------------------------------------------------

void LaunchController::createActions() {
    launch_action_ = new QAction(tr("&Launch Plan…"), this);
    launch_action_->setObjectName(QStringLiteral("actionLaunchPlan"));
    launch_action_->setShortcut(QKeySequence(tr("Ctrl+Alt+L")));
    launch_action_->setStatusTip(
        tr("Run the plan the Plan dock shows — its devices, buffers, steps and transfers — on a backend and "
           "measure it against the prediction"));
    connect(launch_action_, &QAction::triggered, this, [this] { openLaunchDialog(); });
}

void LaunchController::createDock(QWidget *window) {
    auto *panel = new QWidget(window);
    panel->setObjectName(QStringLiteral("launchPanel"));
    auto *column = new QVBoxLayout(panel);
    column->setContentsMargins(6, 4, 6, 4);
    column->setSpacing(4);
    column->addWidget(createHeader(panel));

    devices_ = makeTable({tr("Device"), tr("Peak (measured)"), tr("Peak (prediction)"), tr("Arena"),
                          tr("Busy (measured)"), tr("Sent (measured)")},
                         "launchDeviceTable", panel);
    devices_->setToolTip(
        tr("Per device: the peak memory as the launch measured it (resident buffers plus the most arena bytes "
           "in use at once) beside the plan's prediction, the arena allocated, the compute stream's busy time "
           "and the bytes it sent"));
    history_ = makeTable({tr("Launched"), tr("Backend"), tr("Status"), tr("Wall (measured)")}, "launchHistory", panel);
    history_->setToolTip(tr("The launches of the plan the Plan dock shows kept in the session, newest first"));
    auto *history_panel = new QWidget(panel);
    auto *history_column = new QVBoxLayout(history_panel);
    history_column->setContentsMargins(0, 0, 0, 0);
    history_column->setSpacing(2);
    history_caption_ = new QLabel(tr("Launch history: no plan shown"), history_panel);
    history_caption_->setObjectName(QStringLiteral("launchHistoryCaption"));
    history_caption_->setWordWrap(true);
    history_column->addWidget(history_caption_);
    history_column->addWidget(history_, 1);
    auto *tables = new QSplitter(Qt::Vertical, panel);
    tables->addWidget(devices_);
    tables->addWidget(history_panel);
    tables->setStretchFactor(0, 3);
    tables->setStretchFactor(1, 2);
    gantt_ = new views::PlanGantt(panel);
    gantt_->setObjectName(QStringLiteral("launchGantt"));
    scatter_ = new views::LaunchScatter(panel);
    splitter_ = new QSplitter(Qt::Horizontal, panel);
    splitter_->setObjectName(QStringLiteral("launchSplitter"));
    splitter_->addWidget(tables);
    splitter_->addWidget(gantt_);
    splitter_->addWidget(scatter_);
    splitter_->setStretchFactor(0, 0);
    splitter_->setStretchFactor(1, 3);
    splitter_->setStretchFactor(2, 2);
    splitter_->setSizes({460, 660, 420});
    column->addWidget(splitter_, 1);
    dock_ = makeDock(tr("Launch"), "launchDock", panel, window, DockContent::scrolls);
}

QWidget *LaunchController::createHeader(QWidget *parent) {
    auto *header = new QWidget(parent);
    auto *column = new QVBoxLayout(header);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    auto *row = new QHBoxLayout;
    measured_badge_ = new QLabel(tr("MEASURED"), header);
    measured_badge_->setObjectName(QStringLiteral("launchMeasuredBadge"));
    measured_badge_->setToolTip(
        tr("Times and peaks here were measured on this machine; the figures marked prediction are the cost "
           "model's"));
    styleBadge(measured_badge_, QStringLiteral("#fef3c7"), QStringLiteral("#92400e"));
    measured_badge_->hide();
    status_label_ = new QLabel(header);
    status_label_->setObjectName(QStringLiteral("launchStatusText"));
    status_label_->setWordWrap(true);
    status_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_label_->setText(tr("Plan the graph, then Launch Plan… (%1) to run the plan and measure it.")
                               .arg(launch_action_->shortcut().toString(QKeySequence::NativeText)));
    verdict_ = new QLabel(header);
    verdict_->setObjectName(QStringLiteral("launchVerdict"));
    verdict_->hide();
    replan_button_ = new QPushButton(header);
    replan_button_->setObjectName(QStringLiteral("launchReplan"));
    replan_button_->hide();
    connect(replan_button_, &QPushButton::clicked, this, &LaunchController::replanWithoutFailedDevice);
    row->addWidget(measured_badge_, 0, Qt::AlignTop);
    row->addWidget(status_label_, 1);
    row->addWidget(replan_button_, 0, Qt::AlignTop);
    row->addWidget(verdict_, 0, Qt::AlignTop);
    column->addLayout(row);
    equivalence_ = new QLabel(header);
    equivalence_->setObjectName(QStringLiteral("launchEquivalence"));
    equivalence_->setWordWrap(true);
    equivalence_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    equivalence_->hide();
    column->addWidget(equivalence_);
    return header;
}

void LaunchController::updateActions() {
    launch_action_->setEnabled(plans_->result() != nullptr && !isLaunching());
}

// ---- launching -------------------------------------------------------------------

views::LaunchDialog *LaunchController::openLaunchDialog() {
    const std::shared_ptr<const plan::PlanResult> shown = plans_->result();
    if (!shown) return nullptr;
    if (!dialog_) {
        dialog_ = new views::LaunchDialog(window_);
        dialog_->setAttribute(Qt::WA_DeleteOnClose);
        connect(dialog_, &views::LaunchDialog::launchRequested, this, [this] {
            if (dialog_) startLaunch(dialog_->settings());
        });
        connect(dialog_, &views::LaunchDialog::cancelRequested, this, &LaunchController::cancelLaunch);
        dialog_->setSettings(settings_);
    }
    const plan::Plan &p = shown->plan;
    dialog_->setPlan(tr("<b>%1</b> on %2 × %3 devices · %4 steps · predicted makespan %5 (prediction)")
                         .arg(doc_->source().name.toHtmlEscaped(), QString::number(p.devices.size()), qs(p.target))
                         .arg(p.steps.size())
                         .arg(secondsText(shown->prediction.makespan)),
                     static_cast<int>(p.devices.size()));
    showBackends();
    dialog_->setRunning(isLaunching());
    dialog_->show();
    dialog_->raise();
    dialog_->activateWindow();
    return dialog_;
}

// The backends this build has: the cpu backend (describing it is cheap: the cores,
// the instruction set and the memory available), and the GPUs the cuda backend
// finds. Starting the CUDA runtime takes a moment (seconds on some drivers), so it
// is asked once, off the GUI thread: until it answers, the cuda row says it is
// looking and offers no devices.
void LaunchController::showBackends() {
    if (!dialog_) return;
    const launch::CpuBackendOptions options;
    std::unique_ptr<launch::Backend> cpu = launch::make_cpu_backend(options);
    std::vector<views::LaunchBackendInfo> backends{{qs(cpu->name()), qs(cpu->describe()), cpu->max_devices()}};
    if (launch::cuda_backend_built()) {
        if (cuda_info_) {
            backends.push_back(*cuda_info_);
        } else {
            backends.push_back(views::LaunchBackendInfo{QStringLiteral("cuda"), tr("looking for GPUs…"), 0});
            probeCuda();
        }
    }
    dialog_->setBackends(backends);
}

void LaunchController::probeCuda() {
    if (cuda_probe_) return;  // one probe at a time; its answer is kept
    cuda_probe_ = new QFutureWatcher<views::LaunchBackendInfo>(this);
    connect(cuda_probe_, &QFutureWatcher<views::LaunchBackendInfo>::finished, this, [this] {
        cuda_info_ = cuda_probe_->result();
        cuda_probe_->deleteLater();
        cuda_probe_ = nullptr;
        showBackends();
        emit backendsProbed();
    });
    cuda_probe_->setFuture(QtConcurrent::run([] {
        auto made = launch::make_cuda_backend();
        if (!made) return views::LaunchBackendInfo{QStringLiteral("cuda"), qs(made.error()), 0};
        return views::LaunchBackendInfo{QStringLiteral("cuda"), qs((*made)->describe()), (*made)->max_devices()};
    }));
}

bool LaunchController::startLaunch(const views::LaunchSettings &settings) {
    const std::shared_ptr<const plan::PlanResult> shown = plans_->result();
    if (!shown || isLaunching()) return false;
    settings_ = settings;
    QSettings remembered;
    remembered.setValue(QStringLiteral("launch/seed"), static_cast<qulonglong>(settings.seed));
    remembered.setValue(QStringLiteral("launch/oracle"), settings.oracle);
    remembered.setValue(QStringLiteral("launch/timeout"), settings.wait_timeout_seconds);
    remembered.setValue(QStringLiteral("launch/transport"), settings.transport);
    remembered.setValue(QStringLiteral("launch/tf32"), settings.tf32);

    views::LaunchJob job;
    job.plan = shown;
    if (!settings.backend.isEmpty()) job.backend = settings.backend;
    job.inputs_dir = settings.inputs_dir;
    job.seed = settings.seed;
    job.oracle = settings.oracle;
    job.wait_timeout_seconds = settings.wait_timeout_seconds;
    job.fail_step = fail_step_;
    job.transport = settings.transport;
    job.tf32 = settings.tf32;
    job.session = session_->sharedSession();
    if (job.session) {
        job.plan_file = !plans_->openedFrom().isEmpty();
        job.project = session_->projectId();
        job.project_name = doc_->source().name;
        job.project_file = doc_->source().path;
        job.document = doc_->graph();
        if (saved_plan_.lock() == shown && saved_in_.lock() == job.session) job.plan_id = saved_plan_id_;
        job.target = uncalibratedTarget(shown->plan);
    }
    std::weak_ptr<store::Session> kept_in = job.session;
    if (worker_->start(std::move(job)) == 0) return false;
    pending_ = shown;
    pending_in_ = kept_in;
    pending_settings_ = plans_->shownSettings();
    if (dialog_) {
        dialog_->setRunning(true);
        dialog_->setProgress(0, 0, tr("starting"));
    }
    status_->showMessage(tr("Launching the plan on %1 devices (cpu)…").arg(shown->plan.devices.size()));
    updateActions();
    return true;
}

std::optional<cost::Target> LaunchController::uncalibratedTarget(const plan::Plan &plan) const {
    // The figures the plan was predicted with: the host as measured, a built-in, or a user copy.
    if (plan.target == "host" && plans_->measuredHost()) return *plans_->measuredHost();
    if (auto builtin = cost::builtin_target(plan.target)) return std::move(builtin).value();
    for (const cost::Target &t : plans_->userTargets())
        if (t.name == plan.target) return t;
    return std::nullopt;
}

void LaunchController::cancelLaunch() {
    if (worker_->isRunning()) worker_->cancel();  // reports `cancelled` at once
}

bool LaunchController::isLaunching() const {
    return worker_->isRunning();
}

void LaunchController::onProgress(quint64 job, int done, int total, const QString &phase) {
    if (job != worker_->currentJob() || !worker_->isRunning()) return;
    if (dialog_) dialog_->setProgress(done, total, phase);
    if (total > 0)
        status_->showMessage(tr("Launching: %1 of %2 steps done…").arg(done).arg(total));
    else
        status_->showMessage(tr("Launch: %1…").arg(phase));
}

void LaunchController::onFinished(quint64, const views::LaunchOutcome &outcome) {
    updateActions();
    if (dialog_) dialog_->setRunning(false);
    if (!outcome.launched) {
        // Nothing ran: refused before launch, or cancelled (at once, by the user).
        const QString status = outcome.cancelled ? QStringLiteral("cancelled") : QStringLiteral("refused");
        if (dialog_) {
            if (outcome.cancelled)
                dialog_->showMessage(tr("Launch cancelled."));
            else
                dialog_->showError(tr("Not launched: %1").arg(outcome.error));
        }
        if (outcome.cancelled) {
            outcome_ = outcome;
            launched_ = pending_;
            launched_settings_ = pending_settings_;
            // Its thread keeps the launch in the session on its way out: onRecorded.
            cancelled_job_ = outcome.job;
            cancelled_plan_ = pending_;
            cancelled_in_ = pending_in_;
            showOutcome();
        }
        status_->showMessage(outcome.cancelled ? tr("Launch cancelled") : tr("Not launched: %1").arg(outcome.error),
                             outcome.cancelled ? 8000 : 15000);
        pending_.reset();
        emit launchFinished(status);
        return;
    }
    outcome_ = outcome;
    launched_ = pending_;
    launched_settings_ = pending_settings_;
    pending_.reset();
    if (outcome.plan_id != 0) {
        saved_plan_ = launched_;
        saved_plan_id_ = outcome.plan_id;
        saved_in_ = pending_in_;
    }
    if (outcome.project != 0 && session_->projectId() == 0) session_->adoptProject(outcome.project);
    if (outcome.plan_id != 0 && launched_ == plans_->result()) setHistory(outcome.history, outcome.launch_id);
    showOutcome();
    if (dialog_) dialog_->accept();
    showWithRoom(dock_, window_, kDockHeight, dock_sized_);
    // Once the dock has its room (the layout settles on the next turn of the event loop).
    QTimer::singleShot(0, this, &LaunchController::fitTables);
    const launch::LaunchResult &r = outcome.result;
    QString line = r.ok() ? tr("Launched on %1: wall %2 (measured), predicted makespan %3 (prediction)")
                                .arg(qs(r.backend), secondsText(r.wall_seconds), secondsText(r.predicted_makespan))
                          : tr("Launch %1: %2").arg(qs(r.status), qs(r.fault.message));
    if (outcome.check) line += outcome.check->pass() ? tr("; outputs PASS") : tr("; outputs FAIL");
    if (!outcome.record_error.isEmpty()) line += tr("; not kept in the session: %1").arg(outcome.record_error);
    status_->showMessage(line, 15000);
    emit launchFinished(qs(r.status));
}

// ---- the result ------------------------------------------------------------------

void LaunchController::showOutcome() {
    measured_badge_->setVisible(outcome_.launched);
    showStatus();
    showEquivalence();
    if (launched_ && outcome_.launched) {
        gantt_->setPlan(launched_);
        gantt_->setMeasured(outcome_.result.steps);
        scatter_->setSteps(launched_->plan, outcome_.result.steps);
    } else {
        gantt_->clear();
        scatter_->clear();
    }
    fillDeviceTable();
    updateReplanButton();
}

void LaunchController::fitTables() {
    // Once: the tables as wide as the device table's columns (up to 45 %), the
    // Gantt and the scatter sharing the rest; later, the user's split stands.
    if (tables_fitted_ || devices_->rowCount() == 0) return;
    tables_fitted_ = true;
    devices_->resizeColumnsToContents();
    const int need = devices_->horizontalHeader()->length() + 2 * devices_->frameWidth() +
                     devices_->verticalScrollBar()->sizeHint().width();
    int total = 0;
    for (int size : splitter_->sizes()) total += size;
    if (total <= 0) return;
    const int tables = std::min(need, total * 9 / 20);
    const int rest = total - tables;
    splitter_->setSizes({tables, rest * 3 / 5, rest - rest * 3 / 5});
}

void LaunchController::showStatus() {
    const launch::LaunchResult &r = outcome_.result;
    if (!outcome_.launched) {
        status_label_->setTextFormat(Qt::PlainText);
        QString text = outcome_.cancelled ? tr("Launch cancelled before it ran to the end: nothing measured.")
                                          : outcome_.error;
        if (outcome_.launch_id != 0) text += tr(" Kept in the session as cancelled (launch %1).").arg(outcome_.launch_id);
        status_label_->setText(text);
        verdict_->hide();
        return;
    }
    QString text;
    const QString plan_text =
        launched_ ? tr("%1 × %2").arg(launched_->plan.devices.size()).arg(qs(launched_->plan.target)) : QString();
    if (r.ok()) {
        text = tr("<b>Ran</b> the plan for %1 on %2 · %3 steps · wall %4 <i>(measured)</i> against a makespan of %5 "
                  "<i>(prediction)</i> · %6 moved <i>(measured)</i>")
                   .arg(plan_text.toHtmlEscaped(), outcome_.backend_description.toHtmlEscaped())
                   .arg(r.steps.size())
                   .arg(secondsText(r.wall_seconds), secondsText(r.predicted_makespan),
                        bytesText(static_cast<std::int64_t>(r.moved_bytes)));
    } else if (r.status == "cancelled") {
        text = tr("<b>Cancelled</b> after %1 steps (measured up to then)").arg(r.steps.size());
    } else {
        const QString where =
            r.fault.step >= 0 && launched_ && static_cast<size_t>(r.fault.step) < launched_->plan.steps.size()
                ? tr("step %1 (%2)")
                      .arg(r.fault.step)
                      .arg(qs(launched_->plan.steps[static_cast<size_t>(r.fault.step)].op))
                : tr("before any step");
        const QString device = r.fault.device >= 0 && launched_ ? deviceName(launched_->plan, r.fault.device)
                                                                : tr("no device in particular");
        text = tr("<span style=\"color:#b91c1c\"><b>Failed</b> at %1 on device %2 (rank %3):</span> %4")
                   .arg(where.toHtmlEscaped(), device.toHtmlEscaped())
                   .arg(r.fault.rank)
                   .arg(qs(r.fault.message).toHtmlEscaped());
    }
    text += QStringLiteral("<br/><span style=\"color:gray\">%1</span>").arg(outcome_.inputs_text.toHtmlEscaped());
    if (outcome_.plan_id != 0)
        text += tr("<span style=\"color:gray\"> · kept in the session (launch %1%2)</span>")
                    .arg(outcome_.launch_id)
                    .arg(outcome_.calibration_points > 0
                             ? tr(", %1 for %2")
                                   .arg(countText(outcome_.calibration_points, tr("calibration point"),
                                                  tr("calibration points")),
                                        launched_ ? qs(launched_->plan.target) : QString())
                             : tr("; no calibration points: %1").arg(outcome_.calibration_note.toHtmlEscaped()));
    else if (!outcome_.record_error.isEmpty())
        text += tr("<span style=\"color:#b91c1c\"> · not kept in the session: %1</span>")
                    .arg(outcome_.record_error.toHtmlEscaped());
    status_label_->setTextFormat(Qt::RichText);
    status_label_->setText(text);

    const bool pass = r.ok() && outcome_.check && outcome_.check->pass();
    verdict_->setText(r.ok() ? (pass ? tr("✓ outputs PASS") : tr("✗ outputs FAIL"))
                             : (r.status == "cancelled" ? tr("cancelled") : tr("✗ failed")));
    styleBadge(verdict_, pass ? QStringLiteral("#dcfce7") : QStringLiteral("#fee2e2"),
               pass ? QStringLiteral("#166534") : QStringLiteral("#991b1b"));
    verdict_->show();
}

void LaunchController::showEquivalence() {
    if (!outcome_.launched || !outcome_.result.ok()) {
        equivalence_->hide();
        return;
    }
    QStringList lines;
    if (outcome_.check) {
        for (const verify::OutputComparison &c : outcome_.check->comparisons)
            lines << tr("<span style=\"color:%1\">%2</span> %3 vs %4: max |error| %5 (tolerance %6 + %7·|ref|)")
                         .arg(c.pass ? QStringLiteral("#166534") : QStringLiteral("#b91c1c"),
                              c.pass ? tr("PASS") : tr("FAIL"), qs(c.tensor).toHtmlEscaped(), qs(c.against))
                         .arg(c.max_abs_error, 0, 'g', 2)
                         .arg(c.atol, 0, 'g', 2)
                         .arg(c.rtol, 0, 'g', 2);
    } else {
        lines << tr("<span style=\"color:#b91c1c\">Outputs not compared:</span> %1")
                     .arg(outcome_.check_error.toHtmlEscaped());
    }
    equivalence_->setTextFormat(Qt::RichText);
    equivalence_->setText(lines.join(QStringLiteral("<br/>")));
    equivalence_->setToolTip(outcome_.check ? qs(outcome_.check->summary()) : QString());
    equivalence_->show();
}

void LaunchController::fillDeviceTable() {
    const std::vector<launch::DeviceMeasurement> &devices = outcome_.result.devices;
    devices_->setRowCount(outcome_.launched ? static_cast<int>(devices.size()) : 0);
    if (!outcome_.launched) return;
    for (int d = 0; d < static_cast<int>(devices.size()); ++d) {
        const launch::DeviceMeasurement &m = devices[static_cast<size_t>(d)];
        QTableWidgetItem *name = setCell(devices_, d, 0, qs(m.name), Qt::AlignLeft);
        name->setData(Qt::DecorationRole, views::deviceColour(d));
        QTableWidgetItem *peak = setCell(devices_, d, 1, bytesText(m.peak_bytes));
        setCell(devices_, d, 2, bytesText(m.predicted_peak_bytes));
        setCell(devices_, d, 3, bytesText(m.arena_bytes));
        setCell(devices_, d, 4, secondsText(m.busy_seconds));
        setCell(devices_, d, 5, bytesText(static_cast<std::int64_t>(m.moved_bytes)));
        if (m.predicted_peak_bytes > 0) {
            const double off = 100.0 * static_cast<double>(m.peak_bytes - m.predicted_peak_bytes) /
                               static_cast<double>(m.predicted_peak_bytes);
            peak->setToolTip(tr("%1 measured, %2 predicted (%3%4 %); %5 resident")
                                 .arg(bytesText(m.peak_bytes), bytesText(m.predicted_peak_bytes))
                                 .arg(off >= 0 ? QStringLiteral("+") : QString())
                                 .arg(off, 0, 'f', 1)
                                 .arg(bytesText(m.resident_bytes)));
            if (std::abs(off) > 5) peak->setForeground(QColor(0xb4, 0x53, 0x09));
        }
    }
}

void LaunchController::fillHistory() {
    const std::vector<store::LaunchRecord> &records = history_records_;
    history_->setRowCount(static_cast<int>(records.size()));
    int row = 0;
    for (auto r = records.rbegin(); r != records.rend(); ++r, ++row) {
        setCell(history_, row, 0, localTimeText(r->started_at), Qt::AlignLeft);
        setCell(history_, row, 1, qs(r->backend), Qt::AlignLeft);
        QTableWidgetItem *status = setCell(history_, row, 2, qs(r->status), Qt::AlignLeft);
        if (!r->error.empty()) status->setToolTip(qs(r->error));
        if (r->status != "ok") status->setForeground(QColor(0xb9, 0x1c, 0x1c));
        // The wall time is in the record's measurements (launch::launch_record).
        const QJsonObject measured = QJsonDocument::fromJson(QByteArray::fromStdString(r->measurements_json)).object();
        const double wall = measured.value(QStringLiteral("wall_seconds")).toDouble(-1);
        setCell(history_, row, 3, wall >= 0 ? secondsText(wall) : QStringLiteral("—"));
        if (r->id == history_current_)
            for (int c = 0; c < history_->columnCount(); ++c) {
                QFont f = history_->item(row, c)->font();
                f.setBold(true);
                history_->item(row, c)->setFont(f);
            }
    }
}

// ---- the history of the plan shown ------------------------------------------------

void LaunchController::setHistory(std::vector<store::LaunchRecord> records, store::LaunchId current) {
    ++history_generation_;  // a session read under way is older than this
    history_records_ = std::move(records);
    history_current_ = current;
    history_caption_->setText(
        history_records_.empty()
            ? tr("The plan shown has not been launched in this session")
            : tr("Launches of the plan shown kept in the session: %1").arg(history_records_.size()));
    fillHistory();
}

void LaunchController::lookUpHistory() {
    ++history_generation_;
    history_records_.clear();
    history_current_ = 0;
    fillHistory();
    const std::shared_ptr<const plan::PlanResult> shown = plans_->result();
    std::shared_ptr<store::Session> session = session_->sharedSession();
    const qint64 project = session_->projectId();
    // A plan read from a file: its launches are kept apart from the document's.
    const bool plan_file = !plans_->openedFrom().isEmpty();
    if (!shown || !session || (project == 0 && !plan_file)) {
        history_caption_->setText(!shown     ? tr("Launch history: no plan shown")
                                  : !session ? tr("Launch history: no session is open (a session keeps launches)")
                                             : tr("The plan shown has not been launched in this session"));
        return;
    }
    history_caption_->setText(tr("Launch history of the plan shown: reading the session…"));
    auto *watcher = new QFutureWatcher<views::SavedPlanLaunches>(this);
    connect(watcher, &QFutureWatcher<views::SavedPlanLaunches>::finished, this,
            [this, watcher, shown, generation = history_generation_, in = std::weak_ptr<store::Session>(session)] {
                views::SavedPlanLaunches found = watcher->result();
                watcher->deleteLater();
                // Another plan shown, another session, or a launch's own history since.
                if (generation != history_generation_ || shown != plans_->result() ||
                    in.lock() != session_->sharedSession())
                    return;
                if (!found.error.isEmpty()) {
                    history_caption_->setText(tr("Launch history not read: %1").arg(found.error));
                    return;
                }
                if (found.plan_id != 0) {
                    // The next launch of it adds to that plan instead of saving it again.
                    saved_plan_ = shown;
                    saved_plan_id_ = found.plan_id;
                    saved_in_ = in;
                }
                const int count = static_cast<int>(found.history.size());
                setHistory(std::move(found.history), 0);
                emit historyLoaded(count);
            });
    // Off the GUI thread: a session can hold many plans, and a read waits for a
    // launch's or an autosave's transaction.
    watcher->setFuture(
        QtConcurrent::run([session, project, shown, plan_file] {
            return views::findSavedPlan(*session, project, shown->plan, plan_file);
        }));
}

void LaunchController::onRecorded(quint64 job, const views::LaunchOutcome &outcome) {
    // A cancelled launch reached the session after the window had reported it.
    if (job != cancelled_job_) return;
    const std::shared_ptr<const plan::PlanResult> plan = cancelled_plan_.lock();
    if (plan && plan == plans_->result()) {
        saved_plan_ = plan;
        saved_plan_id_ = outcome.plan_id;
        saved_in_ = cancelled_in_;
        if (!isLaunching()) setHistory(outcome.history, outcome.launch_id);  // else that launch's will come
    }
    if (outcome_.job == job) {
        outcome_.plan_id = outcome.plan_id;
        outcome_.launch_id = outcome.launch_id;
        showStatus();
    }
}

// ---- re-planning without a failed device ------------------------------------------

void LaunchController::updateReplanButton() {
    const launch::LaunchResult &r = outcome_.result;
    const bool offer = launched_ && outcome_.launched && r.status == "failed" && r.fault.device >= 0;
    replan_button_->setVisible(offer);
    if (!offer) return;
    const plan::Plan &p = launched_->plan;
    const int devices = static_cast<int>(p.devices.size());
    replan_button_->setText(tr("Re-plan without %1").arg(deviceName(p, r.fault.device)));
    if (devices <= 1) {
        replan_button_->setEnabled(false);
        replan_button_->setToolTip(tr("The plan ran on one device: no device is left to plan on"));
    } else if (optimizer_ && optimizer_->isSearching()) {
        replan_button_->setEnabled(false);
        replan_button_->setToolTip(tr("The Optimize dock is searching: re-plan when it ends"));
    } else if (optimizer_) {
        replan_button_->setEnabled(true);
        replan_button_->setToolTip(
            tr("Search again on %1 devices of %2 (the Optimize dock's objectives and constraints), then open the "
               "fastest plan of the front in the Plan dock")
                .arg(devices - 1)
                .arg(QString::fromStdString(p.target)));
    } else if (!launched_settings_) {
        replan_button_->setEnabled(false);
        replan_button_->setToolTip(
            tr("This plan came from the Optimize dock's search: search again there on %1 devices").arg(devices - 1));
    } else {
        const PlanSettings &s = *launched_settings_;
        replan_button_->setEnabled(!plans_->isPlanning());
        replan_button_->setToolTip(
            tr("Plan the same graph on %1 with the same %2 on %3 devices instead of %4 — the plan's devices "
               "numbered afresh; the Plan dock shows it")
                .arg(s.target,
                     s.baseline == QStringLiteral("none") ? tr("placement (%1)").arg(s.placement)
                                                          : tr("baseline (%1)").arg(s.baseline))
                .arg(devices - 1)
                .arg(devices));
    }
}

void LaunchController::setOptimizer(OptimizeController *optimizer) {
    if (optimizer_) disconnect(optimizer_, nullptr, this, nullptr);
    optimizer_ = optimizer;
    if (!optimizer_) {
        updateReplanButton();
        return;
    }
    connect(optimizer_, &OptimizeController::searchFinished, this, &LaunchController::updateReplanButton);
    connect(optimizer_, &OptimizeController::replanOpened, this, [this](const QString &key, const QString &error) {
        if (error.isEmpty())
            status_->showMessage(tr("Re-planned: the fastest plan of the search's front is in the Plan dock (%1)").arg(key),
                                 15000);
        else
            status_->showMessage(tr("Re-plan without the failed device: %1").arg(error), 15000);
    });
    updateReplanButton();
}

bool LaunchController::replanWithoutFailedDevice() {
    if (!replan_button_->isVisible() || !replan_button_->isEnabled()) return false;
    const int survivors = static_cast<int>(launched_->plan.devices.size()) - 1;
    const QString failed = deviceName(launched_->plan, outcome_.result.fault.device);
    QString why_not_searched;
    if (optimizer_) {
        if (optimizer_->replanOn(QString::fromStdString(launched_->plan.target), survivors)) {
            status_->showMessage(tr("Searching again on %1 devices, without %2…").arg(survivors).arg(failed));
            updateReplanButton();
            return true;
        }
        why_not_searched = optimizer_->lastError();
    }
    if (!launched_settings_) {
        status_->showMessage(tr("Cannot re-plan without %1: %2").arg(failed, why_not_searched), 15000);
        return false;
    }
    const bool started = plans_->replanWithDevices(*launched_settings_, survivors);
    if (started)
        status_->showMessage(tr("Planning again on %1 devices, without %2…")
                                 .arg(survivors)
                                 .arg(deviceName(launched_->plan, outcome_.result.fault.device)));
    updateReplanButton();
    return started;
}

}  // namespace tapestry::studio
