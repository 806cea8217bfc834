#include "views/stage_timeline.h"

#include <QAbstractItemView>
#include <QCheckBox>
#include <QCompleter>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStringListModel>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "views/pipeline_worker.h"

namespace tapestry::views {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

const QColor kPass(0x15, 0x80, 0x3d);
const QColor kFail(0xdc, 0x26, 0x26);

}  // namespace

// ---- stage JSON -----------------------------------------------------------------

std::string certificateToJson(const Certificate &certificate) {
    QJsonArray checks;
    for (const CertificateCheck &c : certificate.checks) {
        QJsonArray findings, nodes;
        for (const std::string &f : c.findings) findings.append(qs(f));
        for (const std::string &n : c.nodes) nodes.append(qs(n));
        checks.append(QJsonObject{{QStringLiteral("name"), qs(c.name)},
                                  {QStringLiteral("pass"), c.pass},
                                  {QStringLiteral("message"), qs(c.message)},
                                  {QStringLiteral("findings"), findings},
                                  {QStringLiteral("nodes"), nodes}});
    }
    return QJsonDocument(QJsonObject{{QStringLiteral("checks"), checks}}).toJson(QJsonDocument::Compact).toStdString();
}

Certificate certificateFromJson(const std::string &json) {
    Certificate out;
    const QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
    for (const QJsonValue &v : root.value(QStringLiteral("checks")).toArray()) {
        const QJsonObject o = v.toObject();
        CertificateCheck c;
        c.name = o.value(QStringLiteral("name")).toString().toStdString();
        c.pass = o.value(QStringLiteral("pass")).toBool();
        c.message = o.value(QStringLiteral("message")).toString().toStdString();
        for (const QJsonValue &f : o.value(QStringLiteral("findings")).toArray())
            c.findings.push_back(f.toString().toStdString());
        for (const QJsonValue &n : o.value(QStringLiteral("nodes")).toArray())
            c.nodes.push_back(n.toString().toStdString());
        if (!c.name.empty()) out.checks.push_back(std::move(c));
    }
    return out;
}

std::string diffToJson(const GraphDelta &diff) {
    const GraphDelta::Summary s = diff.summary();
    auto list = [](const std::vector<std::string> &ids) {
        QJsonArray a;
        for (const std::string &id : ids) a.append(qs(id));
        return a;
    };
    return QJsonDocument(QJsonObject{{QStringLiteral("added"), list(s.added)},
                                     {QStringLiteral("removed"), list(s.removed)},
                                     {QStringLiteral("changed"), list(s.changed)}})
        .toJson(QJsonDocument::Compact)
        .toStdString();
}

// ---- the widget -----------------------------------------------------------------

StageTimeline::StageTimeline(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("stageTimeline"));
    auto *column = new QVBoxLayout(this);
    column->setContentsMargins(6, 6, 6, 6);
    column->setSpacing(4);

    auto *form = new QFormLayout;
    form->setContentsMargins(0, 0, 0, 0);
    form->setSpacing(4);
    passes_edit_ = new QLineEdit(QStringLiteral("shard"), this);
    passes_edit_->setObjectName(QStringLiteral("stagePasses"));
    passes_edit_->setToolTip(tr("The passes to run, in order, separated by commas (known: %1)")
                                 .arg(PipelineWorker::knownPasses().join(QStringLiteral(", "))));
    specs_edit_ = new QLineEdit(this);
    specs_edit_->setObjectName(QStringLiteral("stageSpecs"));
    specs_edit_->setPlaceholderText(tr("op:dim=parts, e.g. fc1:0=4 fc2:0=4"));
    specs_edit_->setToolTip(
        tr("Shard specs OP:DIM=PARTS separated by spaces: fc1:0=4 splits dim 0 of fc1 into 4 even parts, "
           "fc1:0=3+5+2 into parts of these sizes"));
    specs_edit_->setClearButtonEnabled(true);
    // Typing an operation's id offers the project's operations (setGraph fills them).
    op_model_ = new QStringListModel(this);
    completer_ = new QCompleter(op_model_, this);
    completer_->setObjectName(QStringLiteral("stageSpecsCompleter"));
    completer_->setCaseSensitivity(Qt::CaseInsensitive);
    completer_->setCompletionMode(QCompleter::PopupCompletion);
    completer_->setWidget(specs_edit_);
    connect(completer_, qOverload<const QString &>(&QCompleter::activated), this, &StageTimeline::insertOperation);
    error_label_ = new QLabel(this);
    error_label_->setObjectName(QStringLiteral("stageSpecError"));
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet(QStringLiteral("color: #dc2626"));
    error_label_->hide();
    form->addRow(tr("&Passes:"), passes_edit_);
    form->addRow(tr("&Shard:"), specs_edit_);
    form->addRow(QString(), error_label_);
    column->addLayout(form);

    auto *run_row = new QHBoxLayout;
    numeric_box_ = new QCheckBox(tr("&Numeric"), this);
    numeric_box_->setObjectName(QStringLiteral("stageNumeric"));
    numeric_box_->setToolTip(
        tr("Also run every stage and the original on the CPU with the same random inputs and "
           "compare the outputs (slower)"));
    run_button_ = new QPushButton(tr("Run Pipeline"), this);
    run_button_->setObjectName(QStringLiteral("stageRun"));
    run_button_->setDefault(true);
    cancel_button_ = new QPushButton(tr("Cancel"), this);
    cancel_button_->setObjectName(QStringLiteral("stageCancel"));
    cancel_button_->setEnabled(false);
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("stageProgress"));
    progress_->setTextVisible(false);
    progress_->setMaximumHeight(12);
    progress_->hide();
    run_row->addWidget(numeric_box_);
    run_row->addStretch(1);
    run_row->addWidget(run_button_);
    run_row->addWidget(cancel_button_);
    column->addLayout(run_row);
    column->addWidget(progress_);
    phase_label_ = new QLabel(this);
    phase_label_->setObjectName(QStringLiteral("stagePhase"));
    phase_label_->hide();
    column->addWidget(phase_label_);

    auto *split = new QSplitter(Qt::Vertical, this);
    list_ = new QTreeWidget(split);
    list_->setObjectName(QStringLiteral("stageList"));
    list_->setColumnCount(4);
    list_->setHeaderLabels({tr("#"), tr("Pass"), tr("Certificate"), tr("Summary")});
    list_->setRootIsDecorated(false);
    list_->setUniformRowHeights(true);
    list_->setAlternatingRowColors(true);
    list_->setSelectionMode(QAbstractItemView::SingleSelection);
    list_->header()->setStretchLastSection(true);
    list_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    list_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    list_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    details_ = new QPlainTextEdit(split);
    details_->setObjectName(QStringLiteral("stageDetails"));
    details_->setReadOnly(true);
    details_->setLineWrapMode(QPlainTextEdit::NoWrap);
    details_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    details_->setPlaceholderText(tr("Run a pipeline: each stage's changes and its certificate appear here."));
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 2);
    column->addWidget(split, 1);

    message_label_ = new QLabel(this);
    message_label_->setObjectName(QStringLiteral("stageMessage"));
    message_label_->setWordWrap(true);
    message_label_->hide();
    column->addWidget(message_label_);

    auto *step_row = new QHBoxLayout;
    previous_button_ = new QToolButton(this);
    previous_button_->setObjectName(QStringLiteral("stagePrevious"));
    previous_button_->setArrowType(Qt::LeftArrow);
    previous_button_->setToolTip(tr("Previous stage (Alt+Left)"));
    next_button_ = new QToolButton(this);
    next_button_->setObjectName(QStringLiteral("stageNext"));
    next_button_->setArrowType(Qt::RightArrow);
    next_button_->setToolTip(tr("Next stage (Alt+Right)"));
    apply_button_ = new QPushButton(tr("Apply Stage"), this);
    apply_button_->setObjectName(QStringLiteral("stageApply"));
    apply_button_->setToolTip(tr("Make the selected stage's graph the document's graph (one undo step)"));
    compare_button_ = new QPushButton(tr("Compare…"), this);
    compare_button_->setObjectName(QStringLiteral("stageCompare"));
    compare_button_->setToolTip(tr("Show two stages side by side with synchronized pan and zoom"));
    step_row->addWidget(previous_button_);
    step_row->addWidget(next_button_);
    step_row->addStretch(1);
    step_row->addWidget(compare_button_);
    step_row->addWidget(apply_button_);
    column->addLayout(step_row);

    connect(run_button_, &QPushButton::clicked, this, [this] {
        specs_touched_ = true;
        if (running_ || !validate().isEmpty()) return;
        emit runRequested();
    });
    connect(cancel_button_, &QPushButton::clicked, this, &StageTimeline::cancelRequested);
    connect(specs_edit_, &QLineEdit::textEdited, this, [this] {
        specs_touched_ = true;
        offerOperations();
    });
    connect(specs_edit_, &QLineEdit::textChanged, this, [this] { validate(); });
    connect(passes_edit_, &QLineEdit::textChanged, this, [this] { validate(); });
    connect(specs_edit_, &QLineEdit::returnPressed, run_button_, &QPushButton::click);
    connect(list_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem *item) {
        const int k = item ? list_->indexOfTopLevelItem(item) : -1;
        if (k == current_) return;
        current_ = k;
        showDetails();
        updateButtons();
        emit currentStageChanged(k);
    });
    connect(previous_button_, &QToolButton::clicked, this, [this] { setCurrentStage(current_ - 1); });
    connect(next_button_, &QToolButton::clicked, this, [this] { setCurrentStage(current_ + 1); });
    connect(compare_button_, &QPushButton::clicked, this, [this] {
        if (stageCount() < 2) return;
        const int right = std::max(current_, 1);
        emit compareRequested(right - 1, right);
    });
    connect(apply_button_, &QPushButton::clicked, this, [this] {
        if (current_ >= 0) emit applyRequested(current_);
    });
    updateButtons();
}

void StageTimeline::setGraph(const Graph &graph) {
    graph_ = graph;
    // The examples and the completions name this project's operations.
    QStringList ops;
    for (const OpPtr &op : graph_.operations()) ops << qs(op->id.value);
    QStringList example;
    for (const QString &op : ops.mid(0, 2)) example << op + QStringLiteral(":0=4");
    specs_edit_->setPlaceholderText(ops.isEmpty() ? tr("op:dim=parts")
                                                  : tr("op:dim=parts, e.g. %1").arg(example.join(QLatin1Char(' '))));
    specs_edit_->setToolTip(
        tr("Shard specs OP:DIM=PARTS separated by spaces: %1:0=4 splits dim 0 of %1 into 4 even parts, "
           "%1:0=3+5+2 into parts of these sizes. Operations: %2")
            .arg(ops.value(0, QStringLiteral("fc1")), ops.isEmpty() ? tr("none") : ops.join(QStringLiteral(", "))));
    QStringList completions;
    for (const QString &op : ops) completions << op + QLatin1Char(':');
    op_model_->setStringList(completions);
    if (!specs_edit_->text().trimmed().isEmpty()) validate();
}

void StageTimeline::offerOperations() {
    // The word under the cursor, while it is still an operation's id.
    const QString text = specs_edit_->text().left(specs_edit_->cursorPosition());
    const QString word = text.section(QLatin1Char(' '), -1);
    if (word.isEmpty() || word.contains(QLatin1Char(':'))) {
        completer_->popup()->hide();
        return;
    }
    completer_->setCompletionPrefix(word);
    if (completer_->completionCount() == 0) {
        completer_->popup()->hide();
        return;
    }
    completer_->complete();
}

void StageTimeline::insertOperation(const QString &completion) {
    const int cursor = specs_edit_->cursorPosition();
    const QString text = specs_edit_->text();
    const QString before = text.left(cursor);
    const int start = static_cast<int>(before.lastIndexOf(QLatin1Char(' '))) + 1;
    specs_edit_->setText(text.left(start) + completion + text.mid(cursor));
    specs_edit_->setCursorPosition(start + static_cast<int>(completion.size()));
}

QString StageTimeline::passesText() const {
    return passes_edit_->text();
}

QString StageTimeline::specsText() const {
    return specs_edit_->text();
}

bool StageTimeline::numeric() const {
    return numeric_box_->isChecked();
}

void StageTimeline::setPasses(const QString &text) {
    passes_edit_->setText(text);
}

void StageTimeline::setSpecs(const QString &text) {
    specs_edit_->setText(text);
}

void StageTimeline::setNumeric(bool on) {
    numeric_box_->setChecked(on);
}

QString StageTimeline::validate() {
    QStringList passes;
    QString error = PipelineWorker::parsePasses(passes_edit_->text(), &passes);
    if (error.isEmpty()) error = PipelineWorker::checkSpecs(specs_edit_->text(), graph_, passes);
    // An empty field is not an error to shout about while the user has typed nothing.
    const bool quiet = specs_edit_->text().trimmed().isEmpty() && !specs_touched_;
    error_label_->setText(error);
    error_label_->setVisible(!error.isEmpty() && !quiet);
    specs_edit_->setStyleSheet(error.isEmpty() || quiet ? QString() : QStringLiteral("border: 1px solid #dc2626"));
    return error;
}

QString StageTimeline::errorText() const {
    return error_label_->isVisible() ? error_label_->text() : QString();
}

void StageTimeline::setStages(std::vector<Stage> stages, const QString &origin) {
    stages_ = std::move(stages);
    applied_ = -1;
    const QSignalBlocker block(list_);
    list_->clear();
    for (size_t k = 0; k < stages_.size(); ++k) {
        const Stage &s = stages_[k];
        auto *item = new QTreeWidgetItem(list_);
        item->setText(0, QString::number(k));
        item->setText(1, qs(s.pass));
        const bool certified = s.certificate.certified();
        const bool pass = s.certificate.pass();
        item->setText(2, !certified ? tr("—") : pass ? tr("✓ PASS") : tr("✗ FAIL"));
        if (certified) item->setForeground(2, pass ? kPass : kFail);
        item->setToolTip(2, qs(s.certificate.badge()));
        item->setText(3, qs(s.summary));
        item->setToolTip(3, qs(s.summary));
        item->setData(0, Qt::UserRole, static_cast<int>(k));
    }
    current_ = -1;
    details_->clear();
    if (!origin.isEmpty()) showMessage(origin);
    updateButtons();
}

void StageTimeline::clearStages() {
    setStages({});
    message_label_->clear();
    message_label_->hide();
}

bool StageTimeline::setCurrentStage(int k) {
    if (k < 0 || k >= stageCount()) return false;
    list_->setCurrentItem(list_->topLevelItem(k));
    return true;
}

void StageTimeline::setRunning(bool running) {
    running_ = running;
    progress_->setVisible(running);
    phase_label_->setVisible(running);
    if (running) {
        progress_->setRange(0, 0);
        phase_label_->setText(tr("Starting…"));
    }
    updateButtons();
}

void StageTimeline::setProgress(int done, int total, const QString &phase) {
    if (total > 0) {
        progress_->setRange(0, total);
        progress_->setValue(done);
    } else {
        progress_->setRange(0, 0);
    }
    if (!phase.isEmpty()) phase_label_->setText(phase + QStringLiteral("…"));
}

void StageTimeline::showMessage(const QString &text, bool error) {
    message_label_->setText(text);
    message_label_->setStyleSheet(error ? QStringLiteral("color: #dc2626") : QString());
    message_label_->setVisible(!text.isEmpty());
}

QString StageTimeline::message() const {
    return message_label_->text();
}

void StageTimeline::setAppliedStage(int k) {
    applied_ = k;
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = list_->topLevelItem(i);
        QFont f = item->font(0);
        f.setBold(i == k);
        for (int c = 0; c < list_->columnCount(); ++c) item->setFont(c, f);
        item->setText(0, i == k ? QStringLiteral("%1 ✎").arg(i) : QString::number(i));
    }
    list_->header()->resizeSections(QHeaderView::ResizeToContents);
    updateButtons();
}

void StageTimeline::showDetails() {
    if (current_ < 0 || current_ >= stageCount()) {
        details_->clear();
        return;
    }
    const Stage &s = stages_[static_cast<size_t>(current_)];
    QString text = qs(stage_text(s, current_));
    if (!s.certificate.certified()) text += tr("certificate: not certified\n");
    details_->setPlainText(text);
}

void StageTimeline::updateButtons() {
    run_button_->setEnabled(!running_);
    cancel_button_->setEnabled(running_);
    passes_edit_->setEnabled(!running_);
    specs_edit_->setEnabled(!running_);
    numeric_box_->setEnabled(!running_);
    previous_button_->setEnabled(current_ > 0);
    next_button_->setEnabled(current_ >= 0 && current_ + 1 < stageCount());
    apply_button_->setEnabled(!running_ && current_ >= 0 && current_ != applied_);
    compare_button_->setEnabled(stageCount() >= 2);
}

}  // namespace tapestry::views
