#include "views/launch_dialog.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace tapestry::views {

LaunchDialog::LaunchDialog(QWidget *parent) : QDialog(parent) {
    setObjectName(QStringLiteral("launchDialog"));
    setWindowTitle(tr("Launch Plan"));
    auto *column = new QVBoxLayout(this);

    plan_ = new QLabel(this);
    plan_->setObjectName(QStringLiteral("launchPlan"));
    plan_->setWordWrap(true);
    column->addWidget(plan_);

    auto *backend_box = new QGroupBox(tr("Backend"), this);
    auto *backend_column = new QVBoxLayout(backend_box);
    backends_ = new QListWidget(backend_box);
    backends_->setObjectName(QStringLiteral("launchBackends"));
    backends_->setMaximumHeight(64);
    backends_->setToolTip(tr("The backends this build has, as each describes the machine it runs on"));
    backend_column->addWidget(backends_);
    column->addWidget(backend_box);

    auto *inputs_box = new QGroupBox(tr("Inputs"), this);
    auto *grid = new QGridLayout(inputs_box);
    random_ = new QRadioButton(tr("&Random values, seed"), inputs_box);
    random_->setObjectName(QStringLiteral("launchRandomInputs"));
    random_->setChecked(true);
    seed_ = new QSpinBox(inputs_box);
    seed_->setObjectName(QStringLiteral("launchSeed"));
    seed_->setRange(0, 1 << 30);
    seed_->setValue(1);
    folder_ = new QRadioButton(tr("&Folder of .npy files"), inputs_box);
    folder_->setObjectName(QStringLiteral("launchFolderInputs"));
    folder_->setToolTip(tr("<name>.npy for each input (and parameter) it has; random values, seeded, for the rest"));
    folder_edit_ = new QLineEdit(inputs_box);
    folder_edit_->setObjectName(QStringLiteral("launchFolder"));
    folder_edit_->setPlaceholderText(tr("a folder of <tensor name>.npy files"));
    browse_ = new QPushButton(tr("Browse…"), inputs_box);
    auto *group = new QButtonGroup(this);
    group->addButton(random_);
    group->addButton(folder_);
    grid->addWidget(random_, 0, 0);
    grid->addWidget(seed_, 0, 1, 1, 2, Qt::AlignLeft);
    grid->addWidget(folder_, 1, 0);
    grid->addWidget(folder_edit_, 1, 1);
    grid->addWidget(browse_, 1, 2);
    grid->setColumnStretch(1, 1);
    column->addWidget(inputs_box);

    auto *form = new QFormLayout;
    oracle_ =
        new QCheckBox(tr("Also compare the outputs with the &oracle (double precision; slow on big graphs)"), this);
    oracle_->setObjectName(QStringLiteral("launchOracle"));
    form->addRow(oracle_);
    timeout_ = new QDoubleSpinBox(this);
    timeout_->setObjectName(QStringLiteral("launchTimeout"));
    timeout_->setRange(1, 3600);
    timeout_->setDecimals(0);
    timeout_->setValue(120);
    timeout_->setSuffix(tr(" s"));
    timeout_->setToolTip(
        tr("The longest a device waits for a dependency or the other end of a transfer before the launch fails, "
           "naming what it waited for"));
    form->addRow(tr("&Wait timeout"), timeout_);
    column->addLayout(form);

    // The cuda backend's own settings (as tapestry launch --transport, --tf32).
    auto *gpu_box = new QGroupBox(tr("GPUs (cuda backend)"), this);
    auto *gpu_form = new QFormLayout(gpu_box);
    transport_ = new QComboBox(gpu_box);
    transport_->setObjectName(QStringLiteral("launchTransport"));
    transport_->addItem(tr("Automatic — NCCL between GPUs, copies on one"), QStringLiteral("auto"));
    transport_->addItem(tr("Peer copies (cudaMemcpyPeer) only"), QStringLiteral("peer"));
    transport_->addItem(tr("NCCL messages for every hop"), QStringLiteral("nccl"));
    transport_->setToolTip(tr("How a transfer or collective moves data between the plan's devices on the GPUs"));
    gpu_form->addRow(tr("T&ransfers"), transport_);
    tf32_ = new QCheckBox(tr("&TF32 tensor cores for f32 products (about 10 bits of mantissa)"), gpu_box);
    tf32_->setObjectName(QStringLiteral("launchTf32"));
    gpu_form->addRow(tf32_);
    column->addWidget(gpu_box);

    auto *progress_row = new QHBoxLayout;
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("launchProgress"));
    progress_->setFormat(tr("%v / %m steps"));
    phase_ = new QLabel(this);
    phase_->setObjectName(QStringLiteral("launchPhase"));
    progress_row->addWidget(progress_, 1);
    progress_row->addWidget(phase_);
    column->addLayout(progress_row);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("launchStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    column->addWidget(status_);

    auto *buttons = new QDialogButtonBox(this);
    launch_ = buttons->addButton(tr("&Launch"), QDialogButtonBox::AcceptRole);
    launch_->setObjectName(QStringLiteral("launchStart"));
    launch_->setDefault(true);
    cancel_ = buttons->addButton(tr("Cancel Launch"), QDialogButtonBox::ActionRole);
    cancel_->setObjectName(QStringLiteral("launchCancel"));
    close_ = buttons->addButton(QDialogButtonBox::Close);
    column->addWidget(buttons);
    // Launch starts a launch, it does not close the dialog: the controller closes it
    // when a launch has run.
    connect(launch_, &QPushButton::clicked, this, &LaunchDialog::launchRequested);
    connect(cancel_, &QPushButton::clicked, this, &LaunchDialog::cancelRequested);
    connect(close_, &QPushButton::clicked, this, &LaunchDialog::reject);
    connect(random_, &QRadioButton::toggled, this, &LaunchDialog::updateState);
    connect(folder_edit_, &QLineEdit::textChanged, this, &LaunchDialog::updateState);
    connect(backends_, &QListWidget::currentRowChanged, this, &LaunchDialog::updateState);
    connect(browse_, &QPushButton::clicked, this, &LaunchDialog::browseFolder);
    setMinimumWidth(560);
    setRunning(false);
}

void LaunchDialog::setPlan(const QString &text, int devices) {
    plan_->setText(text);
    devices_ = devices;
    updateState();
}

void LaunchDialog::setBackends(const std::vector<LaunchBackendInfo> &backends) {
    infos_ = backends;
    const QString picked =
        backends_->currentItem() ? backends_->currentItem()->data(Qt::UserRole).toString() : QString();
    backends_->clear();
    for (const LaunchBackendInfo &b : backends) {
        auto *item = new QListWidgetItem(QStringLiteral("%1 — %2").arg(b.name, b.description), backends_);
        item->setToolTip(item->text());  // a long description (why there is no GPU) is clipped in the list
        item->setData(Qt::UserRole, b.name);
        if (b.name == picked || backends_->count() == 1) backends_->setCurrentItem(item);
    }
    updateState();
}

LaunchSettings LaunchDialog::settings() const {
    LaunchSettings s;
    if (backends_->currentItem()) s.backend = backends_->currentItem()->data(Qt::UserRole).toString();
    if (folder_->isChecked()) s.inputs_dir = folder_edit_->text().trimmed();
    s.seed = static_cast<quint64>(seed_->value());
    s.oracle = oracle_->isChecked();
    s.wait_timeout_seconds = timeout_->value();
    s.transport = transport_->currentData().toString();
    s.tf32 = tf32_->isChecked();
    return s;
}

void LaunchDialog::setSettings(const LaunchSettings &s) {
    (s.inputs_dir.isEmpty() ? random_ : folder_)->setChecked(true);
    if (!s.inputs_dir.isEmpty()) folder_edit_->setText(s.inputs_dir);
    seed_->setValue(static_cast<int>(s.seed));
    oracle_->setChecked(s.oracle);
    timeout_->setValue(s.wait_timeout_seconds);
    const int transport = transport_->findData(s.transport);
    transport_->setCurrentIndex(transport >= 0 ? transport : 0);
    tf32_->setChecked(s.tf32);
}

void LaunchDialog::setRunning(bool running) {
    running_ = running;
    if (running) {
        status_->clear();
        progress_->setRange(0, 0);
    }
    progress_->setVisible(running);
    phase_->setVisible(running);
    updateState();
}

void LaunchDialog::setProgress(int done, int total, const QString &phase) {
    if (total > 0) {
        progress_->setRange(0, total);
        progress_->setValue(done);
        progress_->setTextVisible(true);
    } else {
        progress_->setRange(0, 0);
        progress_->setTextVisible(false);
    }
    phase_->setText(phase);
}

void LaunchDialog::showError(const QString &error) {
    status_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    status_->setText(error);
}

void LaunchDialog::showMessage(const QString &message) {
    status_->setStyleSheet(QString());
    status_->setText(message);
}

void LaunchDialog::reject() {
    if (running_) emit cancelRequested();
    QDialog::reject();
}

void LaunchDialog::updateState() {
    for (QWidget *w : std::initializer_list<QWidget *>{backends_, random_, folder_, oracle_, timeout_})
        w->setEnabled(!running_);
    seed_->setEnabled(!running_);
    folder_edit_->setEnabled(!running_ && folder_->isChecked());
    browse_->setEnabled(!running_ && folder_->isChecked());
    const bool cuda = backends_->currentItem() &&
                      backends_->currentItem()->data(Qt::UserRole).toString() == QLatin1String("cuda");
    transport_->setEnabled(!running_ && cuda);
    tf32_->setEnabled(!running_ && cuda);
    // A backend that cannot hold the plan's devices is listed, not launchable.
    QString why;
    const int row = backends_->currentRow();
    if (row < 0 || row >= static_cast<int>(infos_.size()))
        why = tr("No backend is selected");
    else if (infos_[static_cast<size_t>(row)].max_devices > 0 &&
             devices_ > infos_[static_cast<size_t>(row)].max_devices)
        why = tr("The plan has %1 devices; the %2 backend offers %3")
                  .arg(devices_)
                  .arg(infos_[static_cast<size_t>(row)].name)
                  .arg(infos_[static_cast<size_t>(row)].max_devices);
    else if (folder_->isChecked() && folder_edit_->text().trimmed().isEmpty())
        why = tr("Pick the folder of .npy inputs");
    launch_->setEnabled(!running_ && why.isEmpty() && devices_ > 0);
    launch_->setToolTip(why);
    cancel_->setEnabled(running_);
}

void LaunchDialog::browseFolder() {
    const QString start = folder_edit_->text().isEmpty() ? QDir::homePath() : folder_edit_->text();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder of .npy Inputs"), start);
    if (!dir.isEmpty()) folder_edit_->setText(dir);
}

}  // namespace tapestry::views
