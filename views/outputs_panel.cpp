#include "views/outputs_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "views/histogram_widget.h"
#include "views/run_panel.h"

namespace tapestry::views {

namespace {

QString num(double v) {
    return QString::number(v, 'g', 5);
}

QString formatMs(double ms) {
    return QString::number(ms, 'f', ms < 10 ? 3 : 1);
}

QString formatBytes(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= 1 << 30) return QObject::tr("%1 GiB").arg(b / (1 << 30), 0, 'f', 2);
    if (b >= 1 << 20) return QObject::tr("%1 MiB").arg(b / (1 << 20), 0, 'f', 1);
    if (b >= 1 << 10) return QObject::tr("%1 KiB").arg(b / (1 << 10), 0, 'f', 1);
    return QObject::tr("%1 B").arg(bytes);
}

QTreeWidget *makeTree(QWidget *parent, const QStringList &headers, const char *name) {
    auto *tree = new QTreeWidget(parent);
    tree->setObjectName(QString::fromLatin1(name));
    tree->setHeaderLabels(headers);
    tree->setRootIsDecorated(false);
    tree->setAlternatingRowColors(true);
    tree->setUniformRowHeights(true);
    tree->setSelectionMode(QAbstractItemView::SingleSelection);
    tree->header()->setStretchLastSection(false);
    tree->header()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    return tree;
}

enum class Verdict { pass, fail, stale };

void setVerdict(QLabel *label, const QString &text, Verdict verdict) {
    static const char *kColours[] = {"background: #dcfce7; color: #166534; border: 1px solid #86efac;",
                                     "background: #fee2e2; color: #991b1b; border: 1px solid #fca5a5;",
                                     "background: #f1f5f9; color: #64748b; border: 1px dashed #94a3b8;"};
    label->setText(text);
    label->setStyleSheet(QStringLiteral("QLabel { %1 border-radius: 6px; padding: 4px 14px; font-weight: 700;"
                                        " font-size: 15px; }")
                             .arg(QString::fromLatin1(kColours[static_cast<int>(verdict)])));
}

}  // namespace

OutputsPanel::OutputsPanel(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("outputsPanel"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    auto *top = new QHBoxLayout;
    top->setContentsMargins(10, 5, 6, 5);
    headline_ = new QLabel(tr("Nothing has run yet: Run ▸ Run (Ctrl+R) runs the open graph on the CPU."), this);
    headline_->setObjectName(QStringLiteral("outputsHeadline"));
    headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    save_ = new QPushButton(runActionIcon(QStringLiteral("save")), tr("Save Outputs…"), this);
    save_->setObjectName(QStringLiteral("saveOutputs"));
    save_->setToolTip(tr("Write every output as <name>.npy into a folder"));
    save_->setEnabled(false);
    top->addWidget(headline_, 1);
    top->addWidget(save_);
    layout->addLayout(top);
    // What the run could not do as asked on this CPU, over every tab.
    notices_ = new QLabel(this);
    notices_->setObjectName(QStringLiteral("runNotices"));
    notices_->setWordWrap(true);
    notices_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    notices_->setContentsMargins(10, 4, 10, 4);
    notices_->hide();
    layout->addWidget(notices_);

    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("outputsTabs"));
    tabs_->setDocumentMode(true);
    layout->addWidget(tabs_, 1);

    // Tensors: the table on the left, the selected tensor's picture on the right.
    auto *split = new QSplitter(Qt::Horizontal, tabs_);
    tensors_ = makeTree(split,
                        {tr("Tensor"), tr("Role"), tr("Shape"), tr("DType"), tr("Min"), tr("Max"), tr("Mean"),
                         tr("Std"), tr("NaN"), tr("Inf")},
                        "tensorTree");
    tensors_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto *detail = new QWidget(split);
    detail->setObjectName(QStringLiteral("tensorDetail"));
    auto *dl = new QVBoxLayout(detail);
    dl->setContentsMargins(10, 4, 10, 4);
    dl->setSpacing(2);
    detail_title_ = new QLabel(detail);
    detail_title_->setObjectName(QStringLiteral("tensorTitle"));
    detail_stats_ = new QLabel(detail);
    detail_stats_->setObjectName(QStringLiteral("tensorStats"));
    detail_stats_->setWordWrap(true);
    detail_stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    dl->addWidget(detail_title_);
    dl->addWidget(detail_stats_);
    auto *pictures = new QHBoxLayout;
    pictures->setSpacing(10);
    histogram_ = new HistogramWidget(detail);
    pictures->addWidget(histogram_, 1);
    auto *preview_box = new QVBoxLayout;
    preview_ = new QLabel(detail);
    preview_->setObjectName(QStringLiteral("imagePreview"));
    preview_->setAlignment(Qt::AlignCenter);
    preview_->setFixedSize(120, 120);
    preview_->setStyleSheet(QStringLiteral("QLabel#imagePreview { background: #0f172a; border-radius: 4px; }"));
    preview_note_ = new QLabel(detail);
    preview_note_->setObjectName(QStringLiteral("previewNote"));
    preview_note_->setWordWrap(true);
    preview_note_->setFixedWidth(150);
    preview_note_->setStyleSheet(QStringLiteral("color: #64748b; font-size: 11px;"));
    preview_box->addWidget(preview_);
    preview_box->addWidget(preview_note_);
    preview_box->addStretch(1);
    pictures->addLayout(preview_box);
    dl->addLayout(pictures, 1);
    split->addWidget(tensors_);
    split->addWidget(detail);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setSizes({3000, 2000});  // proportions: the table needs its ten columns
    tabs_->addTab(split, tr("Tensors"));

    auto *timing_page = new QWidget(tabs_);
    auto *tl = new QVBoxLayout(timing_page);
    tl->setContentsMargins(0, 0, 0, 0);
    timings_ = makeTree(timing_page, {tr("Operation"), tr("Shards"), tr("Time (ms)"), tr("Share"), tr("Kernel")},
                        "timingsTree");
    timings_->setRootIsDecorated(true);
    timings_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    timings_total_ = new QLabel(timing_page);
    timings_total_->setObjectName(QStringLiteral("timingsTotal"));
    timings_total_->setContentsMargins(10, 4, 10, 4);
    tl->addWidget(timings_, 1);
    tl->addWidget(timings_total_);
    tabs_->addTab(timing_page, tr("Timings"));

    auto *verify_page = new QWidget(tabs_);
    auto *vl = new QVBoxLayout(verify_page);
    vl->setContentsMargins(10, 8, 10, 0);
    auto *verdict_row = new QHBoxLayout;
    verdict_ = new QLabel(verify_page);
    verdict_->setObjectName(QStringLiteral("verdictBadge"));
    verdict_->hide();
    verify_summary_ = new QLabel(tr("Run ▸ Verify (Ctrl+Shift+R) compares the sharded run with the unsharded run "
                                    "and with the double-precision oracle."),
                                 verify_page);
    verify_summary_->setObjectName(QStringLiteral("verifySummary"));
    verify_summary_->setWordWrap(true);
    verdict_row->addWidget(verdict_);
    verdict_row->addWidget(verify_summary_, 1);
    vl->addLayout(verdict_row);
    verify_ =
        makeTree(verify_page, {tr("Output"), tr("Against"), tr("Max abs error"), tr("Max rel error"), tr("Result")},
                 "verifyTree");
    verify_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    vl->addWidget(verify_, 1);
    tabs_->addTab(verify_page, tr("Verification"));

    setStyleSheet(
        QStringLiteral("QWidget#tensorDetail { background: #ffffff; }"
                       "QLabel#tensorTitle { font-weight: 600; font-size: 14px; color: #0f172a; }"
                       "QLabel#tensorStats { color: #334155; }"
                       "QLabel#outputsHeadline { color: #334155; }"
                       "QLabel#runNotices { background: #fffbeb; color: #78350f; border-bottom: 1px solid #fde68a; }"
                       "QTreeWidget { background: #ffffff; alternate-background-color: #f8fafc; }"
                       "QTreeWidget::item { padding: 2px 2px; }"
                       "QTreeWidget::item:selected { background: #dbeafe; color: #0f172a; }"));

    connect(tensors_, &QTreeWidget::currentItemChanged, this,
            [this](QTreeWidgetItem *item) { showTensor(item ? item->data(NameColumn, Qt::UserRole).toInt() : -1); });
    connect(save_, &QPushButton::clicked, this, &OutputsPanel::saveRequested);
    clear();
}

QString OutputsPanel::tensorLabel(const QString &id, const QString &name) {
    return name.isEmpty() || name == id ? id : QStringLiteral("%1 (%2)").arg(name, id);
}

void OutputsPanel::markStale() {
    if (stale_ || (!shows_verdict_ && !has_outputs_)) return;
    stale_ = true;
    if (shows_verdict_) {
        setVerdict(verdict_, passed_ ? tr("PASS · stale") : tr("FAIL · stale"), Verdict::stale);
        verdict_->setToolTip(tr("The graph changed after this verification: verify it again"));
        verify_summary_->setText(
            tr("The graph changed after this verification; these results are of the graph as it "
               "was. Run ▸ Verify (Ctrl+Shift+R) checks it again."));
    }
    headline_->setStyleSheet(QStringLiteral("color: #64748b;"));
    headline_->setText(tr("Stale — the graph changed since: %1").arg(headline_->text()));
}

void OutputsPanel::clear() {
    stale_ = false;
    shows_verdict_ = false;
    passed_ = false;
    summaries_.clear();
    selected_ = -1;
    has_outputs_ = false;
    tensors_->clear();
    timings_->clear();
    verify_->clear();
    timings_total_->clear();
    notices_->clear();
    notices_->hide();
    verdict_->hide();
    save_->setEnabled(false);
    showTensor(-1);
    headline_->setStyleSheet(QString());
    headline_->setText(tr("Nothing has run yet: Run ▸ Run (Ctrl+R) runs the open graph on the CPU."));
}

void OutputsPanel::showNotices(const std::vector<std::string> &notices) {
    QStringList lines;
    for (const std::string &n : notices) lines << QStringLiteral("⚠ ") + QString::fromStdString(n);
    notices_->setText(lines.join(QLatin1Char('\n')));
    notices_->setVisible(!lines.isEmpty());
}

void OutputsPanel::showError(const QString &message) {
    headline_->setStyleSheet(QStringLiteral("color: #991b1b;"));
    headline_->setText(message);
}

void OutputsPanel::showOutcome(const RunOutcome &o) {
    headline_->setStyleSheet(QString());
    if (o.mode == RunMode::verify) {
        verify_->clear();
        const bool pass = o.report.pass();
        setVerdict(verdict_, pass ? tr("✔ PASS") : tr("✘ FAIL"), pass ? Verdict::pass : Verdict::fail);
        verdict_->show();
        shows_verdict_ = true;
        passed_ = pass;
        stale_ = false;
        int failed = 0;
        for (const verify::OutputComparison &c : o.report.comparisons) {
            auto *item = new QTreeWidgetItem(verify_);
            const QString id = QString::fromStdString(c.tensor);
            item->setText(VerifyOutputColumn, tensorLabel(id, o.names.value(id, id)));
            item->setText(VerifyAgainstColumn,
                          c.against == "oracle" ? tr("oracle (double precision)") : QString::fromStdString(c.against));
            item->setText(VerifyMaxAbsColumn, QString::number(c.max_abs_error, 'e', 3));
            item->setText(VerifyMaxRelColumn, QString::number(c.max_rel_error, 'e', 3));
            item->setText(VerifyResultColumn, c.pass ? tr("pass") : tr("FAIL"));
            item->setForeground(VerifyResultColumn, c.pass ? QColor(0x15, 0x80, 0x3d) : QColor(0xb9, 0x1c, 0x1c));
            QFont bold = item->font(VerifyResultColumn);
            bold.setBold(true);
            item->setFont(VerifyResultColumn, bold);
            if (c.worst_index >= 0)
                item->setToolTip(VerifyMaxAbsColumn, tr("worst element at flat index %1").arg(c.worst_index));
            for (int col = 0; col < VerifyColumnCount; ++col)
                if (col >= VerifyMaxAbsColumn) item->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
            if (!c.pass) ++failed;
        }
        QString summary = pass ? tr("Every output agrees within |a−b| ≤ atol + rtol·|ref|.")
                               : tr("%1 of %2 comparisons fail.").arg(failed).arg(o.report.comparisons.size());
        summary += QLatin1Char(' ') + (o.report.sharded ? tr("The graph's shards ran against its unsharded form.")
                                                        : tr("The graph has no shards: the run is checked against the "
                                                             "oracle only."));
        verify_summary_->setText(summary);
        showNotices(o.notices);
        headline_->setText(tr("%1 · verification %2 · %3 · %4 ms")
                               .arg(o.source_name, pass ? tr("passed") : tr("FAILED"), o.inputs_text)
                               .arg(o.total_ms, 0, 'f', 0));
        tabs_->setCurrentIndex(VerificationTab);
        return;
    }

    // A run: tensors, then timings.
    stale_ = false;
    summaries_ = o.inputs;
    summaries_.insert(summaries_.end(), o.outputs.begin(), o.outputs.end());
    has_outputs_ = !o.outputs.empty();
    save_->setEnabled(has_outputs_);
    tensors_->clear();
    QTreeWidgetItem *first_output = nullptr;
    for (size_t i = 0; i < summaries_.size(); ++i) {
        const TensorSummary &s = summaries_[i];
        auto *item = new QTreeWidgetItem(tensors_);
        item->setData(NameColumn, Qt::UserRole, static_cast<int>(i));
        item->setText(NameColumn, tensorLabel(s.id, s.name));
        item->setToolTip(NameColumn, s.id);
        item->setText(RoleColumn, s.role);
        item->setText(ShapeColumn, s.shapeText());
        item->setText(DTypeColumn, QString::fromLatin1(dtype_name(s.dtype).data(),
                                                       static_cast<qsizetype>(dtype_name(s.dtype).size())));
        const bool any = s.finite_count > 0;
        item->setText(MinColumn, any ? num(s.min) : QStringLiteral("—"));
        item->setText(MaxColumn, any ? num(s.max) : QStringLiteral("—"));
        item->setText(MeanColumn, any ? num(s.mean) : QStringLiteral("—"));
        item->setText(StdColumn, any ? num(s.stddev) : QStringLiteral("—"));
        item->setText(NanColumn, QString::number(s.nan_count));
        item->setText(InfColumn, QString::number(s.inf_count));
        for (int col = MinColumn; col < TensorColumnCount; ++col)
            item->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
        if (s.nan_count + s.inf_count > 0)
            for (int col : {NanColumn, InfColumn}) item->setForeground(col, QColor(0xb9, 0x1c, 0x1c));
        if (s.role == QLatin1String("output")) {
            QFont f = item->font(NameColumn);
            f.setBold(true);
            item->setFont(NameColumn, f);
            if (!first_output) first_output = item;
        } else {
            for (int col = 0; col < TensorColumnCount; ++col) item->setForeground(col, QColor(0x64, 0x74, 0x8b));
        }
    }
    if (first_output)
        tensors_->setCurrentItem(first_output);
    else if (tensors_->topLevelItemCount() > 0)
        tensors_->setCurrentItem(tensors_->topLevelItem(0));
    else
        showTensor(-1);

    // Timings, per operation with its shards (or the batch tiles the executor
    // cut it into) below, slowest first.
    timings_->clear();
    struct OpTime {
        double ms = 0;
        std::vector<const cpu::StepTiming *> parts;  // shards or batch tiles
        int tiles = 0;
        const cpu::StepTiming *noted = nullptr;  // a step whose kernel is not the plain native one
    };
    // The Kernel column: a short label, the whole sentence as its tooltip.
    auto set_kernel = [this](QTreeWidgetItem *item, const cpu::StepTiming *s) {
        if (!s) return;
        item->setText(TimingKernelColumn, s->fallback.empty() ? tr("note") : tr("f32 fallback"));
        item->setToolTip(TimingKernelColumn, QString::fromStdString(s->note()));
        item->setForeground(TimingKernelColumn, QColor(0xb4, 0x53, 0x09));
    };
    std::map<std::string, OpTime> per_op;
    double sum = 0;
    for (const cpu::StepTiming &s : o.steps) {
        OpTime &t = per_op[s.op];
        t.ms += s.milliseconds;
        if (!s.shard.empty() || s.tile >= 0) t.parts.push_back(&s);
        if (s.tile >= 0) t.tiles = s.tiles;
        if (!t.noted && (!s.fallback.empty() || !s.notes.empty())) t.noted = &s;
        sum += s.milliseconds;
    }
    std::vector<std::pair<std::string, OpTime>> ordered(per_op.begin(), per_op.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto &a, const auto &b) { return a.second.ms > b.second.ms; });
    auto share = [sum](double ms) {
        return sum > 0 ? QStringLiteral("%1 %").arg(ms / sum * 100, 0, 'f', 1) : QString();
    };
    for (const auto &[op, t] : ordered) {
        auto *item = new QTreeWidgetItem(timings_);
        item->setText(0, QString::fromStdString(op));
        QString parts = QStringLiteral("—");
        if (t.tiles > 0)
            parts = tr("%1 batch tiles").arg(t.tiles);  // never fewer than 2
        else if (!t.parts.empty())
            parts = QString::number(t.parts.size());
        item->setText(1, parts);
        item->setText(2, formatMs(t.ms));
        item->setText(3, share(t.ms));
        set_kernel(item, t.noted);
        for (const cpu::StepTiming *s : t.parts) {
            auto *child = new QTreeWidgetItem(item);
            QString name = QString::fromStdString(s->shard);
            if (s->tile >= 0) {
                const QString tile = tr("tile %1/%2").arg(s->tile + 1).arg(s->tiles);
                name = name.isEmpty() ? tile : name + QStringLiteral(" · ") + tile;
            }
            child->setText(0, name);
            child->setText(2, formatMs(s->milliseconds));
            child->setText(3, share(s->milliseconds));
            if (!s->fallback.empty() || !s->notes.empty()) set_kernel(child, s);
            for (int col = 1; col < 4; ++col) child->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
        }
        for (int col = 1; col < 4; ++col) item->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
    }
    timings_total_->setText(tr("%1 steps · %2 ms in steps (they overlap on %3 threads) · wall %4 ms · compile %5 ms · "
                               "arena %6 · oneDNN on %7")
                                .arg(o.steps.size())
                                .arg(formatMs(sum))
                                .arg(o.threads)
                                .arg(formatMs(o.run_ms), formatMs(o.compile_ms), formatBytes(o.arena_bytes), o.isa));
    showNotices(o.notices);
    bool bf16_unavailable = false;  // asked for, but this CPU has no native bf16 (a notice says so)
    for (const std::string &n : o.notices) bf16_unavailable = bf16_unavailable || n.starts_with("bf16 matmuls are not");
    headline_->setText(tr("%1 · ran in %2 ms · %3 · %4 threads · shards %5%6")
                           .arg(o.source_name, formatMs(o.run_ms), o.inputs_text)
                           .arg(o.threads)
                           .arg(o.use_shards ? tr("on") : tr("off"))
                           .arg(!o.bf16_matmul     ? QString()
                                : bf16_unavailable ? tr(" · bf16 matmuls not available on %1 (f32)").arg(o.isa)
                                                   : tr(" · bf16 matmuls")));
    if (tabs_->currentIndex() == VerificationTab) tabs_->setCurrentIndex(TensorsTab);
}

bool OutputsPanel::selectTensor(const QString &id) {
    for (int i = 0; i < tensors_->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = tensors_->topLevelItem(i);
        const int index = item->data(NameColumn, Qt::UserRole).toInt();
        if (summaries_[static_cast<size_t>(index)].id == id) {
            tensors_->setCurrentItem(item);
            return true;
        }
    }
    return false;
}

void OutputsPanel::showTensor(int index) {
    selected_ = index;
    if (index < 0 || index >= static_cast<int>(summaries_.size())) {
        detail_title_->setText(tr("No tensor selected"));
        detail_stats_->clear();
        histogram_->clear();
        preview_->clear();
        preview_->setVisible(false);
        preview_note_->clear();
        return;
    }
    const TensorSummary &s = summaries_[static_cast<size_t>(index)];
    detail_title_->setText(QStringLiteral("%1  <span style='color:#64748b; font-weight:400'>%2 %3</span>")
                               .arg(s.name.toHtmlEscaped(), s.role, s.shapeText()));
    detail_stats_->setText(
        tr("%1 elements · mean %2 · std %3 · min %4 · max %5%6")
            .arg(s.count)
            .arg(num(s.mean), num(s.stddev), num(s.min), num(s.max))
            .arg(s.nan_count + s.inf_count > 0
                     ? tr(" · <span style='color:#b91c1c'>%1 NaN, %2 Inf</span>").arg(s.nan_count).arg(s.inf_count)
                     : QString()));
    histogram_->setData(s.histogram, s.min, s.max, s.nan_count, s.inf_count);
    if (s.preview.isNull()) {
        preview_->clear();
        preview_->setVisible(false);
        preview_note_->setText(tr("No image preview: not image-shaped ([N,C,H,W] with C 1 or 3, or [H,W])."));
    } else {
        const QSize box = preview_->size() - QSize(4, 4);
        // Small images are enlarged without smoothing, so that each pixel stays a pixel.
        const bool enlarge = s.preview.width() < box.width() && s.preview.height() < box.height();
        const QImage scaled =
            s.preview.scaled(box, Qt::KeepAspectRatio, enlarge ? Qt::FastTransformation : Qt::SmoothTransformation);
        preview_->setPixmap(QPixmap::fromImage(scaled));
        preview_->setVisible(true);
        // The first part under the picture; the scale (and the rest) in the tooltip.
        preview_note_->setText(s.preview_note.section(QStringLiteral("; "), 0, 0));
        preview_note_->setToolTip(s.preview_note);
        preview_->setToolTip(s.preview_note);
    }
}

}  // namespace tapestry::views
