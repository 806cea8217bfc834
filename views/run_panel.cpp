#include "views/run_panel.h"

#include <QAction>
#include <QButtonGroup>
#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QProgressBar>
#include <QRadioButton>
#include <QSettings>
#include <QSpinBox>
#include <QSvgRenderer>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

namespace tapestry::views {

namespace {

const char *iconPath(const QString &name) {
    if (name == QLatin1String("run")) return R"(<path d="M7 4.5v15l12-7.5z"/>)";
    if (name == QLatin1String("verify"))
        return R"(<path d="M12 3l7 3v5c0 4.5-3 8-7 10-4-2-7-5.5-7-10V6z"/><path d="M9 12l2 2 4-4"/>)";
    if (name == QLatin1String("stop")) return R"(<rect x="6" y="6" width="12" height="12" rx="1.5"/>)";
    if (name == QLatin1String("import"))
        return R"(<path d="M12 3v12"/><path d="M7 10l5 5 5-5"/><path d="M4 17v3h16v-3"/>)";
    if (name == QLatin1String("save"))
        return R"(<path d="M5 4h11l3 3v13H5z"/><path d="M8 4v5h7V4"/><path d="M8 20v-6h8v6"/>)";
    return nullptr;
}

QString formatMs(double ms) {
    if (ms >= 10000) return QObject::tr("%1 s").arg(ms / 1000, 0, 'f', 1);
    if (ms >= 1000) return QObject::tr("%1 s").arg(ms / 1000, 0, 'f', 2);
    return QObject::tr("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : 0);
}

}  // namespace

QIcon runActionIcon(const QString &name) {
    const char *path = iconPath(name);
    if (!path) return {};
    const QString colour = name == QLatin1String("run")      ? QStringLiteral("#15803d")
                           : name == QLatin1String("stop")   ? QStringLiteral("#b91c1c")
                           : name == QLatin1String("verify") ? QStringLiteral("#1d4ed8")
                                                             : QStringLiteral("#334155");
    const QByteArray svg = QStringLiteral(
                               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"24\" height=\"24\" "
                               "viewBox=\"0 0 24 24\" fill=\"none\" stroke=\"%1\" stroke-width=\"1.8\" "
                               "stroke-linecap=\"round\" stroke-linejoin=\"round\">%2</svg>")
                               .arg(colour, QString::fromLatin1(path))
                               .toUtf8();
    QSvgRenderer renderer(svg);
    QIcon icon;
    for (int size : {16, 20, 24, 32, 48}) {
        QPixmap pixmap(size, size);
        pixmap.fill(Qt::transparent);
        QPainter p(&pixmap);
        renderer.render(&p);
        p.end();
        icon.addPixmap(pixmap);
    }
    return icon;
}

RunPanel::RunPanel(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("runPanel"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 8, 10, 8);
    layout->setSpacing(8);

    auto *inputs = new QGroupBox(tr("Inputs"), this);
    auto *grid = new QFormLayout(inputs);
    grid->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    random_ = new QRadioButton(tr("Random, seed"), inputs);
    random_->setObjectName(QStringLiteral("randomInputs"));
    seed_ = new QSpinBox(inputs);
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setRange(0, 999999999);
    seed_->setToolTip(
        tr("Inputs (and parameters without values) are uniform in [-1, 1) from this seed; "
           "the same seed gives the same numbers."));
    grid->addRow(random_, seed_);
    folder_ = new QRadioButton(tr("From folder"), inputs);
    folder_->setObjectName(QStringLiteral("folderInputs"));
    auto *folder_row = new QHBoxLayout;
    folder_edit_ = new QLineEdit(inputs);
    folder_edit_->setObjectName(QStringLiteral("inputsFolder"));
    folder_edit_->setPlaceholderText(tr("a folder of <tensor name>.npy files"));
    browse_ = new QToolButton(inputs);
    browse_->setText(tr("…"));
    browse_->setToolTip(tr("Choose the folder of .npy inputs"));
    folder_row->addWidget(folder_edit_, 1);
    folder_row->addWidget(browse_);
    grid->addRow(folder_, folder_row);
    auto *group = new QButtonGroup(this);
    group->addButton(random_);
    group->addButton(folder_);
    layout->addWidget(inputs);

    auto *exec = new QGroupBox(tr("Execution"), this);
    auto *form = new QFormLayout(exec);
    threads_ = new QSpinBox(exec);
    threads_->setObjectName(QStringLiteral("threads"));
    threads_->setRange(1, std::max(64, QThread::idealThreadCount()));
    threads_->setToolTip(tr("Worker threads (virtual devices) of the CPU executor"));
    form->addRow(tr("Threads"), threads_);
    shards_ = new QCheckBox(tr("Use shards"), exec);
    shards_->setObjectName(QStringLiteral("useShards"));
    shards_->setToolTip(tr("Run sharded operations shard by shard (else each as one whole operation)"));
    bf16_ = new QCheckBox(tr("bf16 matmuls"), exec);
    bf16_->setObjectName(QStringLiteral("bf16Matmul"));
    bf16_->setToolTip(
        tr("Reduced precision: matmul and linear steps compute in bf16 (f32 accumulation and output) "
           "where the CPU supports it natively, about twice as fast, with relative errors near 1e-3 "
           "instead of 1e-6. Run only: Verify always computes in f32."));
    // Both switches on one row: the dock leaves the inspector above it more room.
    auto *switches = new QHBoxLayout;
    switches->addWidget(shards_);
    switches->addWidget(bf16_);
    switches->addStretch(1);
    form->addRow(QString(), switches);
    layout->addWidget(exec);

    auto *buttons = new QHBoxLayout;
    buttons->setSpacing(6);
    auto makeButton = [this](const char *name) {
        auto *b = new QToolButton(this);
        b->setObjectName(QString::fromLatin1(name));
        b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        b->setIconSize(QSize(18, 18));
        b->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        return b;
    };
    run_button_ = makeButton("runButton");
    verify_button_ = makeButton("verifyButton");
    cancel_button_ = makeButton("cancelButton");
    buttons->addWidget(run_button_);
    buttons->addWidget(verify_button_);
    buttons->addWidget(cancel_button_);
    layout->addLayout(buttons);

    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("runProgress"));
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setTextVisible(true);
    progress_->setFormat(QString());
    layout->addWidget(progress_);
    status_ = new QLabel(tr("Idle: press Run (Ctrl+R) or Verify (Ctrl+Shift+R)."), this);
    status_->setObjectName(QStringLiteral("runStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);
    layout->addStretch(1);

    setStyleSheet(
        QStringLiteral("QWidget#runPanel { background: #ffffff; }"
                       "QGroupBox { font-weight: 600; color: #334155; border: 1px solid #e2e8f0; border-radius: 6px;"
                       "            margin-top: 10px; padding: 8px 6px 4px 6px; }"
                       "QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 4px; }"
                       "QToolButton#runButton, QToolButton#verifyButton, QToolButton#cancelButton {"
                       "  border: 1px solid #cbd5e1; border-radius: 5px; padding: 4px 8px; background: #f8fafc; }"
                       "QToolButton#runButton:hover, QToolButton#verifyButton:hover, QToolButton#cancelButton:hover {"
                       "  background: #e2e8f0; }"
                       "QToolButton:disabled { color: #94a3b8; }"
                       "QProgressBar#runProgress { border: 1px solid #cbd5e1; border-radius: 4px; background: #f8fafc;"
                       "  text-align: center; color: #0f172a; min-height: 16px; }"
                       "QProgressBar#runProgress::chunk { background: #60a5fa; border-radius: 3px; }"
                       "QLabel#runStatus { color: #334155; }"));

    QSettings settings;
    seed_->setValue(settings.value(QStringLiteral("run/seed"), 1).toInt());
    threads_->setValue(settings.value(QStringLiteral("run/threads"), 2).toInt());
    shards_->setChecked(settings.value(QStringLiteral("run/useShards"), true).toBool());
    bf16_->setChecked(settings.value(QStringLiteral("run/bf16Matmul"), false).toBool());
    folder_edit_->setText(settings.value(QStringLiteral("run/inputsDir")).toString());
    const bool use_folder = settings.value(QStringLiteral("run/fromFolder"), false).toBool();
    (use_folder && !folder_edit_->text().isEmpty() ? folder_ : random_)->setChecked(true);

    connect(browse_, &QToolButton::clicked, this, &RunPanel::chooseFolder);
    connect(random_, &QRadioButton::toggled, this, &RunPanel::updateEnabled);
    connect(shards_, &QCheckBox::toggled, this, &RunPanel::useShardsChanged);
    updateEnabled();
}

RunPanel::~RunPanel() {
    saveSettings();
}

void RunPanel::setActions(QAction *run, QAction *verify, QAction *cancel) {
    run_button_->setDefaultAction(run);
    verify_button_->setDefaultAction(verify);
    cancel_button_->setDefaultAction(cancel);
}

bool RunPanel::randomInputs() const {
    return random_->isChecked();
}
quint64 RunPanel::seed() const {
    return static_cast<quint64>(seed_->value());
}
QString RunPanel::inputsDir() const {
    return randomInputs() ? QString() : folder_edit_->text().trimmed();
}
int RunPanel::threads() const {
    return threads_->value();
}
bool RunPanel::useShards() const {
    return shards_->isChecked();
}
bool RunPanel::bf16Matmul() const {
    return bf16_->isChecked();
}
void RunPanel::setBf16Matmul(bool on) {
    bf16_->setChecked(on);
}
void RunPanel::setSeed(quint64 seed) {
    seed_->setValue(static_cast<int>(seed));
}
void RunPanel::setThreads(int threads) {
    threads_->setValue(threads);
}
void RunPanel::setUseShards(bool on) {
    shards_->setChecked(on);
}
void RunPanel::setRandomInputs() {
    random_->setChecked(true);
}

void RunPanel::setInputsDir(const QString &dir) {
    folder_edit_->setText(dir);
    folder_->setChecked(true);
    saveSettings();
}

void RunPanel::fillRequest(RunRequest &request) const {
    request.inputs_dir = inputsDir();
    request.seed = seed();
    request.threads = threads();
    request.use_shards = useShards();
    request.bf16_matmul = bf16Matmul();
}

void RunPanel::chooseFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder of .npy Inputs"), folder_edit_->text());
    if (!dir.isEmpty()) setInputsDir(dir);
}

void RunPanel::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("run/seed"), seed_->value());
    settings.setValue(QStringLiteral("run/threads"), threads_->value());
    settings.setValue(QStringLiteral("run/useShards"), shards_->isChecked());
    settings.setValue(QStringLiteral("run/bf16Matmul"), bf16_->isChecked());
    settings.setValue(QStringLiteral("run/inputsDir"), folder_edit_->text());
    settings.setValue(QStringLiteral("run/fromFolder"), folder_->isChecked());
}

void RunPanel::updateEnabled() {
    seed_->setEnabled(random_->isChecked());
    folder_edit_->setEnabled(!random_->isChecked());
}

void RunPanel::runStarted(RunMode mode, const QString &what) {
    saveSettings();
    state_ = State::running;
    progress_->setRange(0, 0);  // indeterminate until the first step
    progress_->setFormat(QString());
    status_->setText(mode == RunMode::verify ? tr("Verifying %1…").arg(what) : tr("Running %1…").arg(what));
}

void RunPanel::setProgress(int done, int total, const QString &phase) {
    if (state_ != State::running) return;
    if (total <= 0) {
        progress_->setRange(0, 0);
    } else {
        progress_->setRange(0, total);
        progress_->setValue(done);
        progress_->setFormat(tr("%1 — %v / %m").arg(phase.isEmpty() ? tr("Running") : phase));
    }
    if (!phase.isEmpty() && total <= 0) status_->setText(phase + QStringLiteral("…"));
}

void RunPanel::runCancelling() {
    if (state_ != State::running) return;
    state_ = State::cancelling;
    progress_->setRange(0, 0);
    progress_->setFormat(tr("Cancelling…"));
    status_->setText(tr("Cancelling…"));
}

void RunPanel::runFinished(const RunOutcome &o) {
    progress_->setRange(0, 1);
    if (o.cancelled) {
        state_ = State::cancelled;
        progress_->setValue(0);
        progress_->setFormat(tr("Cancelled"));
        status_->setText(tr("Cancelled after %1; nothing was kept.").arg(formatMs(o.total_ms)));
        return;
    }
    if (!o.ok) {
        state_ = State::failed;
        progress_->setValue(0);
        progress_->setFormat(tr("Failed"));
        status_->setText(tr("Failed: %1").arg(o.error));
        return;
    }
    state_ = State::finished;
    progress_->setValue(1);
    if (o.mode == RunMode::verify) {
        const bool pass = o.report.pass();
        progress_->setFormat(pass ? tr("Verified — pass") : tr("Verified — FAIL"));
        status_->setText(tr("%1 comparisons, %2 (%3, %4).")
                             .arg(o.report.comparisons.size())
                             .arg(pass ? tr("all pass") : tr("some fail"))
                             .arg(formatMs(o.total_ms), o.inputs_text));
    } else {
        progress_->setFormat(tr("Done — %1").arg(formatMs(o.run_ms)));
        status_->setText(tr("Ran in %1 (compile %2, %3 steps, %4 threads, %5).")
                             .arg(formatMs(o.run_ms), formatMs(o.compile_ms))
                             .arg(o.steps.size())
                             .arg(o.threads)
                             .arg(o.inputs_text));
    }
}

void RunPanel::reset() {
    state_ = State::idle;
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setFormat(QString());
    status_->setText(tr("Idle: press Run (Ctrl+R) or Verify (Ctrl+Shift+R)."));
}

QString RunPanel::stateText() const {
    switch (state_) {
        case State::idle: return QStringLiteral("idle");
        case State::running: return QStringLiteral("running");
        case State::cancelling: return QStringLiteral("cancelling");
        case State::finished: return QStringLiteral("finished");
        case State::failed: return QStringLiteral("failed");
        case State::cancelled: return QStringLiteral("cancelled");
    }
    return {};
}

QString RunPanel::statusLine() const {
    return status_->text();
}

}  // namespace tapestry::views
