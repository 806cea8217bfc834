// The Outputs dock: what the last run produced and how long it took. "Tensors"
// lists every input and output with shape, dtype, min/max/mean/std and NaN/Inf
// counts; the selected one shows its histogram and, when image-shaped, a preview
// of its first item. "Timings" lists the per-operation (and per-shard) times;
// "Verification" shows the equivalence table with a pass/fail badge.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "views/run_worker.h"
#include "views/tensor_stats.h"

class QLabel;
class QPushButton;
class QTabWidget;
class QTreeWidget;

namespace tapestry::views {

class HistogramWidget;

class OutputsPanel : public QWidget {
    Q_OBJECT
public:
    enum TensorColumn {
        NameColumn,
        RoleColumn,
        ShapeColumn,
        DTypeColumn,
        MinColumn,
        MaxColumn,
        MeanColumn,
        StdColumn,
        NanColumn,
        InfColumn,
        TensorColumnCount
    };
    enum VerifyColumn {
        VerifyOutputColumn,
        VerifyAgainstColumn,
        VerifyMaxAbsColumn,
        VerifyMaxRelColumn,
        VerifyResultColumn,
        VerifyColumnCount
    };
    enum TimingColumn {
        TimingOperationColumn,
        TimingShardsColumn,
        TimingMsColumn,
        TimingShareColumn,
        TimingKernelColumn,  // "f32 fallback" / "note" where the kernel is not the plain native one (tooltip: why)
        TimingColumnCount
    };
    enum Tab { TensorsTab, TimingsTab, VerificationTab };

    explicit OutputsPanel(QWidget *parent = nullptr);

    // Shows a finished run (tensors and timings) or verification (the table).
    void showOutcome(const RunOutcome &outcome);
    void showError(const QString &message);  // a failed run: a red line, tables kept
    void clear();
    // The graph changed after what is shown ran: the verdict turns grey and says
    // "stale", the headline says to run or verify again. Nothing is dropped.
    void markStale();
    bool isStale() const { return stale_; }

    // How both tables name a tensor: its name, with the id after it where they differ.
    static QString tensorLabel(const QString &id, const QString &name);

    // The tensor summaries shown (inputs then outputs) and the row selected.
    const std::vector<TensorSummary> &summaries() const { return summaries_; }
    bool selectTensor(const QString &id);
    int selectedTensor() const { return selected_; }

    QTabWidget *tabs() const { return tabs_; }
    QTreeWidget *tensorTree() const { return tensors_; }
    QTreeWidget *timingsTree() const { return timings_; }
    QLabel *timingsTotal() const { return timings_total_; }
    QTreeWidget *verifyTree() const { return verify_; }
    QLabel *verdictLabel() const { return verdict_; }
    QLabel *headline() const { return headline_; }
    // The run's notices (cpu::Program::notices(): steps that fell back to f32,
    // options this CPU cannot honour), under the headline; hidden when there are none.
    QLabel *noticesLabel() const { return notices_; }
    HistogramWidget *histogram() const { return histogram_; }
    QLabel *previewLabel() const { return preview_; }
    QPushButton *saveButton() const { return save_; }
    bool hasOutputs() const { return has_outputs_; }

signals:
    void saveRequested();

private:
    void showTensor(int index);
    void showNotices(const std::vector<std::string> &notices);

    QLabel *headline_ = nullptr;
    QTabWidget *tabs_ = nullptr;
    QTreeWidget *tensors_ = nullptr;
    QLabel *detail_title_ = nullptr;
    QLabel *detail_stats_ = nullptr;
    HistogramWidget *histogram_ = nullptr;
    QLabel *preview_ = nullptr;
    QLabel *preview_note_ = nullptr;
    QTreeWidget *timings_ = nullptr;
    QLabel *timings_total_ = nullptr;
    QLabel *notices_ = nullptr;
    QLabel *verdict_ = nullptr;
    QLabel *verify_summary_ = nullptr;
    QTreeWidget *verify_ = nullptr;
    QPushButton *save_ = nullptr;
    std::vector<TensorSummary> summaries_;
    int selected_ = -1;
    bool has_outputs_ = false;
    bool stale_ = false;
    bool shows_verdict_ = false;
    bool passed_ = false;
};

}  // namespace tapestry::views
