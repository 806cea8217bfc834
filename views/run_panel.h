// The Run dock: how to run the open graph on the CPU (random inputs with a seed,
// or a folder of .npy inputs; threads; shards on or off), the Run / Verify /
// Cancel buttons (the window's actions), a progress bar, and one line saying
// what the last run did. The settings persist between sessions.
#pragma once

#include <QIcon>
#include <QString>
#include <QWidget>

#include "views/run_worker.h"

class QAction;
class QButtonGroup;
class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QRadioButton;
class QSpinBox;
class QToolButton;

namespace tapestry::views {

// Icons of the run actions, drawn like the studio's own (:/icons): "run",
// "verify", "stop", "import", "save".
QIcon runActionIcon(const QString &name);

class RunPanel : public QWidget {
    Q_OBJECT
public:
    enum class State { idle, running, cancelling, finished, failed, cancelled };

    explicit RunPanel(QWidget *parent = nullptr);
    ~RunPanel() override;

    // The window's actions, shown as the panel's buttons.
    void setActions(QAction *run, QAction *verify, QAction *cancel);

    bool randomInputs() const;
    quint64 seed() const;
    QString inputsDir() const;  // "" with random inputs
    int threads() const;
    bool useShards() const;
    bool bf16Matmul() const;
    void setBf16Matmul(bool on);
    void setSeed(quint64 seed);
    void setThreads(int threads);
    void setUseShards(bool on);
    void setRandomInputs();
    void setInputsDir(const QString &dir);
    // Fills `request`'s input and execution settings from the panel.
    void fillRequest(RunRequest &request) const;

    void runStarted(RunMode mode, const QString &what);
    void setProgress(int done, int total, const QString &phase);
    // Cancel was pressed: the panel says so at once and ignores later progress.
    void runCancelling();
    void runFinished(const RunOutcome &outcome);
    void reset();  // idle, e.g. when another graph opens

    State state() const { return state_; }
    QString stateText() const;   // "idle", "running", "cancelling", "finished", "failed", "cancelled"
    QString statusLine() const;  // the line under the progress bar
    QProgressBar *progressBar() const { return progress_; }

signals:
    void useShardsChanged(bool on);

private:
    void chooseFolder();
    void saveSettings() const;
    void updateEnabled();

    QRadioButton *random_ = nullptr;
    QRadioButton *folder_ = nullptr;
    QSpinBox *seed_ = nullptr;
    QLineEdit *folder_edit_ = nullptr;
    QToolButton *browse_ = nullptr;
    QSpinBox *threads_ = nullptr;
    QCheckBox *shards_ = nullptr;
    QCheckBox *bf16_ = nullptr;
    QToolButton *run_button_ = nullptr;
    QToolButton *verify_button_ = nullptr;
    QToolButton *cancel_button_ = nullptr;
    QProgressBar *progress_ = nullptr;
    QLabel *status_ = nullptr;
    State state_ = State::idle;
};

}  // namespace tapestry::views
