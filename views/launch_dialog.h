// The Launch Plan dialog (docs/launch.md, docs/user-guide.md "Launching a plan"):
// the plan to launch and its device count, the backends found (their own one-line
// description), the inputs — seeded random values or a folder of .npy files — the
// oracle comparison and the wait timeout; while a launch runs, its progress and a
// Cancel that stops it at once. A view only: the Launch dock's controller starts
// and cancels the launch (views/launch_worker.h) when it asks.
#pragma once

#include <QDialog>
#include <QString>
#include <vector>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace tapestry::views {

struct LaunchBackendInfo {
    QString name;         // "cpu"
    QString description;  // Backend::describe()
    int max_devices = 0;
};

struct LaunchSettings {
    QString backend;     // the backend picked ("cpu")
    QString inputs_dir;  // "" = random inputs
    quint64 seed = 1;
    bool oracle = false;
    double wait_timeout_seconds = 120;
    // The cuda backend's (docs/gpu.md): how data moves between GPUs ("auto": NCCL
    // between GPUs, copies on one; "peer"; "nccl") and TF32 for f32 products — as
    // `tapestry launch --transport` and `--tf32`.
    QString transport = QStringLiteral("auto");
    bool tf32 = false;
};

class LaunchDialog : public QDialog {
    Q_OBJECT
public:
    explicit LaunchDialog(QWidget *parent = nullptr);

    // What is launched: one line on the plan, and its devices (checked against each backend's).
    void setPlan(const QString &text, int devices);
    void setBackends(const std::vector<LaunchBackendInfo> &backends);
    LaunchSettings settings() const;
    void setSettings(const LaunchSettings &settings);

    // While a launch runs the settings are locked, the progress shows and Cancel works.
    void setRunning(bool running);
    bool isRunning() const { return running_; }
    // `total` 0: a phase without steps (busy, not a fraction).
    void setProgress(int done, int total, const QString &phase);
    // A line under the settings: why nothing ran (red), or what happened.
    void showError(const QString &error);
    void showMessage(const QString &message);

    // ---- the widgets (the GUI suites drive them) -----------------------------------
    QListWidget *backendList() const { return backends_; }
    QLabel *planLabel() const { return plan_; }
    QRadioButton *randomInputsButton() const { return random_; }
    QRadioButton *folderInputsButton() const { return folder_; }
    QSpinBox *seedBox() const { return seed_; }
    QLineEdit *folderEdit() const { return folder_edit_; }
    QCheckBox *oracleBox() const { return oracle_; }
    QDoubleSpinBox *timeoutBox() const { return timeout_; }
    QComboBox *transportBox() const { return transport_; }  // enabled for the cuda backend
    QCheckBox *tf32Box() const { return tf32_; }            // enabled for the cuda backend
    QPushButton *launchButton() const { return launch_; }
    QPushButton *cancelButton() const { return cancel_; }
    QProgressBar *progressBar() const { return progress_; }
    QLabel *statusLabel() const { return status_; }

public slots:
    void reject() override;  // Esc or Close: cancels a launch under way first

signals:
    void launchRequested();
    void cancelRequested();

private:
    void updateState();
    void browseFolder();

    QLabel *plan_ = nullptr;
    QListWidget *backends_ = nullptr;
    QRadioButton *random_ = nullptr;
    QRadioButton *folder_ = nullptr;
    QSpinBox *seed_ = nullptr;
    QLineEdit *folder_edit_ = nullptr;
    QPushButton *browse_ = nullptr;
    QCheckBox *oracle_ = nullptr;
    QDoubleSpinBox *timeout_ = nullptr;
    QComboBox *transport_ = nullptr;
    QCheckBox *tf32_ = nullptr;
    QProgressBar *progress_ = nullptr;
    QLabel *phase_ = nullptr;
    QLabel *status_ = nullptr;
    QPushButton *launch_ = nullptr;
    QPushButton *cancel_ = nullptr;
    QPushButton *close_ = nullptr;
    std::vector<LaunchBackendInfo> infos_;
    int devices_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views
