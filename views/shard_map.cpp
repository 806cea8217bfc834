// The shard map draws boxes, never elements: each region is projected onto the
// chosen slice once per rebuild and mapped to pixels per paint, so a tensor of a
// billion elements costs what one of four does.
#include "views/shard_map.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QSpinBox>
#include <QTableWidget>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace tapestry::views {
namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

QString count(std::int64_t n) {
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(n));
}

// One colour per shard: a qualitative palette (Tableau 10), then golden-angle hues.
QColor shardColor(int i) {
    static const char *kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};
    constexpr int n = static_cast<int>(std::size(kPalette));
    if (i < n) return QColor(kPalette[i]);
    return QColor::fromHsvF(std::fmod(0.11 + i * 0.381966, 1.0), 0.55, 0.85);
}

// The colour of an operation that is not sharded.
const QColor kWholeColor("#7a9cc6");

bool isDark(const QColor &c) {
    return 0.299 * c.redF() + 0.587 * c.greenF() + 0.114 * c.blueF() < 0.55;
}

QString dimsText(const ZPoint &shape) {
    QStringList parts;
    for (Coord c : shape.coords()) parts << QString::number(c);
    return parts.join(QStringLiteral("×"));
}

}  // namespace

// ---- canvas -------------------------------------------------------------------

ShardMapCanvas::ShardMapCanvas(ShardMapWidget *owner) : QWidget(owner), owner_(owner) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QRectF ShardMapCanvas::gridRect() const {
    if (owner_->tensor_.isEmpty() || !owner_->error_.isEmpty()) return {};
    const QRectF avail = QRectF(rect()).adjusted(72, 40, -14, -12);
    if (avail.width() < 8 || avail.height() < 8) return {};
    const double rows = static_cast<double>(owner_->sliceRows());
    const double cols = static_cast<double>(owner_->sliceCols());
    if (owner_->row_dim_ < 0) {  // a single row: a strip across the width
        const double h = std::min(avail.height(), 48.0);
        return QRectF(avail.left(), avail.top(), avail.width(), h);
    }
    // Keep the tensor's proportions unless they would make a sliver.
    const double ratio = std::clamp(cols / std::max(rows, 1.0), 0.3, 3.5);
    double w = avail.width(), h = w / ratio;
    if (h > avail.height()) {
        h = avail.height();
        w = h * ratio;
    }
    // Centred in the room to the right of the row labels.
    return QRectF(avail.left() + (avail.width() - w) / 2, avail.top(), w, h);
}

void ShardMapCanvas::paintEvent(QPaintEvent *) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setRenderHint(QPainter::Antialiasing, false);
    const QRectF grid = gridRect();
    const QColor text = palette().color(QPalette::Text);
    QColor muted = text;
    muted.setAlphaF(0.6);
    if (grid.isEmpty()) {
        p.setPen(muted);
        const QString line = !owner_->error_.isEmpty() ? owner_->error_
                             : owner_->tensor_.isEmpty()
                                 ? QStringLiteral("Select a tensor to see which shard writes or reads each region")
                                 : QString();
        p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, line);
        return;
    }
    const Coord r0 = owner_->row_dim_ < 0 ? 0 : owner_->map_.extent.start()[owner_->row_dim_];
    const Coord c0 = owner_->col_dim_ < 0 ? 0 : owner_->map_.extent.start()[owner_->col_dim_];
    const double rows = static_cast<double>(owner_->sliceRows()), cols = static_cast<double>(owner_->sliceCols());
    auto xOf = [&](Coord c) { return grid.left() + static_cast<double>(c - c0) / cols * grid.width(); };
    auto yOf = [&](Coord r) { return grid.top() + static_cast<double>(r - r0) / rows * grid.height(); };
    auto rectOf = [&](const ShardMapWidget::SliceBox &b) {
        QRectF r(QPointF(xOf(b.col0), yOf(b.row0)), QPointF(xOf(b.col1), yOf(b.row1)));
        if (r.width() < 1.5) r.setWidth(1.5);  // a one-element sliver stays visible
        if (r.height() < 1.5) r.setHeight(1.5);
        return r;
    };

    // Nothing written/read: a pale ground.
    p.fillRect(grid, QColor(0xec, 0xef, 0xf3));
    const QList<ShardMapWidget::SliceBox> boxes = owner_->sliceBoxes();
    for (const auto &b : boxes) {
        p.fillRect(rectOf(b), owner_->regionColor(b.region));
    }
    for (const auto &b : boxes) {
        p.setPen(QPen(owner_->regionColor(b.region).darker(160), 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(rectOf(b));
    }
    // Read by several shards: hatched, with a red outline.
    const QList<ShardMapWidget::SliceBox> shared = owner_->sliceSharedBoxes();
    for (const auto &b : shared) {
        const QRectF r = rectOf(b);
        p.fillRect(r, QBrush(QColor(30, 30, 30, 170), Qt::BDiagPattern));
        p.setPen(QPen(QColor("#c62828"), 1.6));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r);
    }

    // Labels inside the regions that can hold them (once per distinct box).
    p.setRenderHint(QPainter::Antialiasing, true);
    QFont label_font = font();
    label_font.setBold(true);
    p.setFont(label_font);
    const QFontMetrics fm(label_font);
    QList<QRectF> labelled;
    for (const auto &b : boxes) {
        const QRectF r = rectOf(b);
        if (labelled.contains(r)) continue;
        labelled << r;
        const QString label = qs(owner_->map_.regions[static_cast<size_t>(b.region)].label());
        if (fm.horizontalAdvance(label) + 8 > r.width() || fm.height() + 4 > r.height()) continue;
        p.setPen(isDark(owner_->regionColor(b.region)) ? Qt::white : QColor(0x1d, 0x1d, 0x1f));
        p.drawText(r, Qt::AlignCenter, label);
    }
    p.setFont(font());
    p.setRenderHint(QPainter::Antialiasing, false);
    p.setPen(QPen(QColor("#455a64"), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(grid);

    // Axes: ticks at the region boundaries, spaced so their numbers never collide.
    p.setRenderHint(QPainter::Antialiasing, true);
    QFont small = font();
    small.setPointSizeF(std::max(7.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    const QFontMetrics sm(small);
    std::vector<Coord> col_cuts{c0, c0 + static_cast<Coord>(cols)}, row_cuts{r0, r0 + static_cast<Coord>(rows)};
    for (const auto &b : boxes + shared) {
        col_cuts.push_back(b.col0);
        col_cuts.push_back(b.col1);
        row_cuts.push_back(b.row0);
        row_cuts.push_back(b.row1);
    }
    auto tidy = [](std::vector<Coord> &v) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
    };
    tidy(col_cuts);
    tidy(row_cuts);
    p.setPen(muted);
    {
        double last_right = -1e9;
        const double end_left = xOf(col_cuts.back()) - sm.horizontalAdvance(QString::number(col_cuts.back())) / 2.0;
        for (size_t i = 0; i < col_cuts.size(); ++i) {
            const QString t = QString::number(col_cuts[i]);
            const double x = xOf(col_cuts[i]), w = sm.horizontalAdvance(t);
            const bool last = i + 1 == col_cuts.size();
            if (x - w / 2 < last_right + 6 || (!last && x + w / 2 + 6 > end_left)) continue;
            p.drawLine(QPointF(x, grid.top() - 4), QPointF(x, grid.top()));
            p.drawText(QRectF(x - w / 2 - 2, grid.top() - 6 - sm.height(), w + 4, sm.height()), Qt::AlignCenter, t);
            last_right = x + w / 2;
        }
    }
    if (owner_->row_dim_ >= 0) {
        double last_bottom = -1e9;
        const double end_top = yOf(row_cuts.back()) - sm.height() / 2.0;
        for (size_t i = 0; i < row_cuts.size(); ++i) {
            const double y = yOf(row_cuts[i]);
            const bool last = i + 1 == row_cuts.size();
            if (y - sm.height() / 2.0 < last_bottom + 2 || (!last && y + sm.height() / 2.0 + 2 > end_top)) continue;
            p.drawLine(QPointF(grid.left() - 4, y), QPointF(grid.left(), y));
            p.drawText(QRectF(0, y - sm.height() / 2.0, grid.left() - 7, sm.height()),
                       Qt::AlignRight | Qt::AlignVCenter, QString::number(row_cuts[i]));
            last_bottom = y + sm.height() / 2.0;
        }
    }
    // Axis names in the corner and above the columns.
    QFont axis = small;
    axis.setItalic(true);
    p.setFont(axis);
    if (owner_->col_dim_ >= 0)
        p.drawText(QRectF(grid.left(), 2, grid.width(), sm.height()), Qt::AlignHCenter | Qt::AlignTop,
                   QStringLiteral("dim %1 →").arg(owner_->col_dim_));
    if (owner_->row_dim_ >= 0)
        p.drawText(QRectF(2, 2, grid.left() - 8, sm.height()), Qt::AlignLeft | Qt::AlignTop,
                   QStringLiteral("dim %1 ↓").arg(owner_->row_dim_));
}

void ShardMapCanvas::mouseMoveEvent(QMouseEvent *event) {
    // The tooltip follows the cursor: the element under it and who touches it.
    const auto point = owner_->pointAt(event->position());
    const QString text = point ? owner_->describePoint(*point) : QString();
    setToolTip(text);
    if (QToolTip::isVisible()) {
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, this);
    }
    QWidget::mouseMoveEvent(event);
}

// ---- widget -------------------------------------------------------------------

ShardMapWidget::ShardMapWidget(QWidget *parent) : QWidget(parent) {
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 6, 6, 6);
    outer->setSpacing(6);

    auto *top = new QHBoxLayout;
    title_ = new QLabel(this);
    title_->setTextFormat(Qt::RichText);
    top->addWidget(title_, 1);
    writes_button_ = new QToolButton(this);
    writes_button_->setText(tr("Writes"));
    writes_button_->setToolTip(tr("Colour by the producer's shard writing each region"));
    reads_button_ = new QToolButton(this);
    reads_button_->setText(tr("Reads"));
    reads_button_->setToolTip(tr("Colour by the consumer's shard reading each region"));
    for (QToolButton *b : {writes_button_, reads_button_}) {
        b->setCheckable(true);
        b->setAutoRaise(false);
        top->addWidget(b);
    }
    auto *group = new QButtonGroup(this);
    group->setExclusive(true);
    group->addButton(writes_button_);
    group->addButton(reads_button_);
    consumer_box_ = new QComboBox(this);
    consumer_box_->setToolTip(tr("The consumer whose shards' reads are shown"));
    consumer_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    top->addWidget(consumer_box_);
    outer->addLayout(top);

    // The axes on one row, the coordinates of the other dims on the next: one long
    // row was cut off at the dock's edge for a rank-4 tensor.
    slice_bar_ = new QWidget(this);
    auto *slice_rows = new QVBoxLayout(slice_bar_);
    slice_rows->setContentsMargins(0, 0, 0, 0);
    slice_rows->setSpacing(4);
    auto *axes = new QHBoxLayout;
    axes->addWidget(new QLabel(tr("Rows:"), slice_bar_));
    row_box_ = new QComboBox(slice_bar_);
    row_box_->setObjectName(QStringLiteral("rowDim"));
    row_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    axes->addWidget(row_box_);
    axes->addWidget(new QLabel(tr("Columns:"), slice_bar_));
    col_box_ = new QComboBox(slice_bar_);
    col_box_->setObjectName(QStringLiteral("colDim"));
    col_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    axes->addWidget(col_box_);
    axes->addStretch(1);
    slice_rows->addLayout(axes);
    slice_layout_ = new QHBoxLayout;
    slice_layout_->addStretch(1);
    slice_rows->addLayout(slice_layout_);
    outer->addWidget(slice_bar_);

    canvas_ = new ShardMapCanvas(this);
    outer->addWidget(canvas_, 1);

    summary_ = new QLabel(this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(summary_);

    legend_ = new QTableWidget(0, 4, this);
    legend_->setHorizontalHeaderLabels({tr("Shard"), tr("Port"), tr("Range"), tr("Elements")});
    legend_->verticalHeader()->hide();
    legend_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    legend_->setSelectionMode(QAbstractItemView::NoSelection);
    legend_->setFocusPolicy(Qt::NoFocus);
    legend_->setShowGrid(false);
    legend_->setAlternatingRowColors(true);
    legend_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    legend_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    legend_->verticalHeader()->setDefaultSectionSize(legend_->fontMetrics().height() + 6);
    outer->addWidget(legend_);

    connect(writes_button_, &QToolButton::clicked, this, [this] { setMode(Mode::writes); });
    connect(reads_button_, &QToolButton::clicked, this, [this] { setMode(Mode::reads); });
    connect(consumer_box_, &QComboBox::activated, this,
            [this](int i) { setConsumer(consumer_box_->itemData(i).toString()); });
    connect(row_box_, &QComboBox::activated, this,
            [this](int i) { setSliceDims(row_box_->itemData(i).toInt(), col_dim_); });
    connect(col_box_, &QComboBox::activated, this,
            [this](int i) { setSliceDims(row_dim_, col_box_->itemData(i).toInt()); });
    rebuild();
}

void ShardMapWidget::setGraph(const Graph &graph) {
    graph_ = graph;
    const Tensor *t = tensor_.isEmpty() ? nullptr : graph_.find_tensor(TensorId(tensor_.toStdString()));
    if (!t) {
        setTensor(QString());
        return;
    }
    if (t->range.rank() != static_cast<int>(fixed_.size())) {
        setTensor(tensor_);  // the tensor changed rank: start its slice afresh
        return;
    }
    for (int d = 0; d < t->range.rank(); ++d)  // its extent may have changed
        fixed_[static_cast<size_t>(d)] = std::clamp(fixed_[static_cast<size_t>(d)], t->range.start()[d],
                                                    std::max(t->range.start()[d], t->range.end()[d] - 1));
    rebuild();
}

void ShardMapWidget::setTensor(const QString &tensor_id) {
    const Tensor *t = tensor_id.isEmpty() ? nullptr : graph_.find_tensor(TensorId(tensor_id.toStdString()));
    tensor_ = t ? tensor_id : QString();
    fixed_.clear();
    row_dim_ = col_dim_ = -1;
    if (t) {
        const int rank = t->range.rank();
        fixed_ = t->range.start().to_vector();
        if (rank >= 2) {
            row_dim_ = rank - 2;
            col_dim_ = rank - 1;
        } else if (rank == 1) {
            col_dim_ = 0;
        }
    }
    rebuild();
    showSplitDims();
}

QList<int> ShardMapWidget::splitDims() const {
    QList<int> dims;
    const int rank = map_.extent.rank();
    for (int d = 0; d < rank; ++d) {
        const bool split = std::any_of(map_.regions.begin(), map_.regions.end(), [&](const ShardRegion &r) {
            return r.box.start()[d] != map_.extent.start()[d] || r.box.end()[d] != map_.extent.end()[d];
        });
        if (split) dims << d;
    }
    return dims;
}

void ShardMapWidget::showSplitDims() {
    const int rank = static_cast<int>(fixed_.size());
    const QList<int> split = splitDims();
    if (rank <= 2 || split.isEmpty()) return;
    int row = split.front();
    int col = split.size() > 1 ? split.at(1) : (row == rank - 1 ? rank - 2 : rank - 1);
    if (row > col) std::swap(row, col);
    if (row != row_dim_ || col != col_dim_) setSliceDims(row, col);
}

void ShardMapWidget::setMode(Mode mode) {
    mode_ = mode;
    if (mode_ == Mode::reads && consumer_.isEmpty() && !consumers_.isEmpty()) consumer_ = consumers_.front();
    rebuild();
    if (!splitDims().contains(row_dim_) && !splitDims().contains(col_dim_)) showSplitDims();
}

void ShardMapWidget::setConsumer(const QString &op_id) {
    consumer_ = op_id;
    mode_ = Mode::reads;
    rebuild();
    if (!splitDims().contains(row_dim_) && !splitDims().contains(col_dim_)) showSplitDims();
}

void ShardMapWidget::setSliceDims(int row_dim, int col_dim) {
    const int rank = static_cast<int>(fixed_.size());
    if (rank < 2 || row_dim < 0 || col_dim < 0 || row_dim >= rank || col_dim >= rank) return;
    if (row_dim == col_dim) {  // picking the other's dim swaps the two
        if (row_dim == row_dim_)
            row_dim = col_dim_;
        else
            col_dim = row_dim_;
    }
    row_dim_ = row_dim;
    col_dim_ = col_dim;
    rebuild();
}

void ShardMapWidget::setFixedIndex(int dim, Coord value) {
    if (dim < 0 || dim >= static_cast<int>(fixed_.size())) return;
    const ZRange &extent = graph_.find_tensor(TensorId(tensor_.toStdString()))->range;
    fixed_[static_cast<size_t>(dim)] = std::clamp(value, extent.start()[dim], extent.end()[dim] - 1);
    rebuild();
}

Coord ShardMapWidget::fixedIndex(int dim) const {
    return dim >= 0 && dim < static_cast<int>(fixed_.size()) ? fixed_[static_cast<size_t>(dim)] : 0;
}

void ShardMapWidget::rebuild() {
    error_.clear();
    map_ = TensorShardMap{};
    consumers_.clear();
    label_colors_.clear();
    region_label_.clear();
    const TensorId id(tensor_.toStdString());
    if (const Tensor *t = tensor_.isEmpty() ? nullptr : graph_.find_tensor(id)) {
        map_.tensor = id;
        map_.extent = t->range;
        for (const OpId &op : graph_.consumers(id))
            if (!consumers_.contains(qs(op.value))) consumers_ << qs(op.value);
        if (!consumer_.isEmpty() && !consumers_.contains(consumer_)) consumer_.clear();
        if (consumer_.isEmpty() && !consumers_.isEmpty()) consumer_ = consumers_.front();
        if (mode_ == Mode::reads && consumers_.isEmpty()) mode_ = Mode::writes;
        auto computed = mode_ == Mode::writes ? tensor_writers(graph_, id)
                                              : tensor_readers(graph_, id, OpId(consumer_.toStdString()));
        if (computed)
            map_ = std::move(computed).value();
        else
            error_ = qs(computed.error());
        const std::vector<std::string> labels = map_.labels();
        for (size_t i = 0; i < labels.size(); ++i)
            label_colors_ << (map_.sharded() ? shardColor(static_cast<int>(i)) : kWholeColor);
        for (const ShardRegion &r : map_.regions)
            region_label_.push_back(
                static_cast<int>(std::find(labels.begin(), labels.end(), r.label()) - labels.begin()));
    }
    refreshControls();
    refreshLegend();
    canvas_->update();
    emit mapChanged();
}

void ShardMapWidget::refreshControls() {
    updating_ = true;
    const Tensor *t = tensor_.isEmpty() ? nullptr : graph_.find_tensor(TensorId(tensor_.toStdString()));
    if (t) {
        const QString name = qs(t->name.empty() ? t->id.value : t->name);
        title_->setText(QStringLiteral("<b>%1</b> &nbsp;<span style='color:gray'>%2 [%3]</span>")
                            .arg(name.toHtmlEscaped(), qs(std::string(dtype_name(t->dtype))), dimsText(t->shape())));
    } else {
        title_->setText(tr("<span style='color:gray'>No tensor selected</span>"));
    }
    writes_button_->setEnabled(t != nullptr);
    reads_button_->setEnabled(t != nullptr && !consumers_.isEmpty());
    writes_button_->setChecked(mode_ == Mode::writes);
    reads_button_->setChecked(mode_ == Mode::reads);
    consumer_box_->clear();
    for (const QString &c : consumers_) {
        const Operation *op = graph_.find_op(OpId(c.toStdString()));
        const QString shown = op && !op->name.empty() && op->name != op->id.value ? qs(op->name) + " (" + c + ")" : c;
        consumer_box_->addItem(shown, c);
    }
    consumer_box_->setCurrentIndex(static_cast<int>(consumers_.indexOf(consumer_)));
    consumer_box_->setEnabled(mode_ == Mode::reads && consumers_.size() > 0);
    consumer_box_->setVisible(!consumers_.isEmpty());

    const int rank = static_cast<int>(fixed_.size());
    slice_bar_->setVisible(rank >= 2);
    row_box_->clear();
    col_box_->clear();
    for (int d = 0; d < rank; ++d) {
        const QString text = tr("dim %1 (%2)").arg(d).arg(t ? t->range.extent(d) : 0);
        row_box_->addItem(text, d);
        col_box_->addItem(text, d);
    }
    row_box_->setCurrentIndex(row_dim_);
    col_box_->setCurrentIndex(col_dim_);
    // One spin box per dim that is not displayed.
    // deleteLater: this may run inside one of these spin boxes' valueChanged.
    QList<QWidget *> old(fixed_spins_.begin(), fixed_spins_.end());
    old += QList<QWidget *>(fixed_labels_.begin(), fixed_labels_.end());
    for (QWidget *w : old) {
        w->hide();
        slice_layout_->removeWidget(w);
        w->deleteLater();
    }
    fixed_spins_.clear();
    fixed_labels_.clear();
    if (t && rank > 2) {
        int at = 0;  // before the stretch
        for (int d = 0; d < rank; ++d) {
            if (d == row_dim_ || d == col_dim_) continue;
            auto *label = new QLabel(tr("dim %1 =").arg(d), slice_bar_);
            auto *spin = new QSpinBox(slice_bar_);
            spin->setRange(static_cast<int>(t->range.start()[d]), static_cast<int>(t->range.end()[d] - 1));
            spin->setValue(static_cast<int>(fixed_[static_cast<size_t>(d)]));
            spin->setToolTip(tr("The coordinate of dim %1 the slice is taken at").arg(d));
            spin->setProperty("dim", d);
            connect(spin, &QSpinBox::valueChanged, this, [this, d](int v) {
                if (!updating_) setFixedIndex(d, v);
            });
            slice_layout_->insertWidget(at++, label);
            slice_layout_->insertWidget(at++, spin);
            fixed_labels_ << label;
            fixed_spins_ << spin;
        }
    }
    summary_->setText(summaryText());
    updating_ = false;
}

void ShardMapWidget::refreshLegend() {
    legend_->setRowCount(0);
    for (size_t i = 0; i < map_.regions.size(); ++i) {
        const ShardRegion &r = map_.regions[i];
        const int row = legend_->rowCount();
        legend_->insertRow(row);
        QPixmap swatch(12, 12);
        swatch.fill(regionColor(static_cast<int>(i)));
        auto *shard = new QTableWidgetItem(QIcon(swatch), qs(r.label()));
        legend_->setItem(row, 0, shard);
        legend_->setItem(row, 1, new QTableWidgetItem(qs(r.port)));
        legend_->setItem(row, 2, new QTableWidgetItem(qs(r.box.to_string())));
        auto *n = new QTableWidgetItem(count(r.box.size()));
        n->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        legend_->setItem(row, 3, n);
    }
    if (map_.shared > 0) {  // the hatch key
        const int row = legend_->rowCount();
        legend_->insertRow(row);
        QPixmap swatch(12, 12);
        swatch.fill(QColor(0xec, 0xef, 0xf3));
        {
            QPainter p(&swatch);
            p.fillRect(swatch.rect(), QBrush(QColor(30, 30, 30, 170), Qt::BDiagPattern));
            p.setPen(QColor("#c62828"));
            p.drawRect(swatch.rect().adjusted(0, 0, -1, -1));
        }
        legend_->setItem(row, 0, new QTableWidgetItem(QIcon(swatch), tr("shared")));
        legend_->setItem(row, 1, new QTableWidgetItem(QString()));
        legend_->setItem(
            row, 2,
            new QTableWidgetItem(
                (map_.overlaps.size() == 1 ? tr("1 overlap: ") : tr("%1 overlaps: ").arg(map_.overlaps.size())) +
                qs(overlap_shapes_text(map_.overlaps))));
        auto *n = new QTableWidgetItem(count(map_.shared));
        n->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        legend_->setItem(row, 3, n);
    }
    legend_->resizeColumnToContents(0);
    legend_->resizeColumnToContents(1);
    legend_->resizeColumnToContents(3);
    // As tall as its rows, up to a handful.
    const int rows = std::min(legend_->rowCount(), 8);
    legend_->setFixedHeight(legend_->horizontalHeader()->sizeHint().height() +
                            rows * legend_->verticalHeader()->defaultSectionSize() + 2 * legend_->frameWidth() + 2);
    legend_->setVisible(legend_->rowCount() > 0);
}

QString ShardMapWidget::shapeText(const ZRange &r) const {
    return dimsText(r.shape());
}

Coord ShardMapWidget::sliceRows() const {
    return row_dim_ < 0 ? 1 : map_.extent.extent(row_dim_);
}

Coord ShardMapWidget::sliceCols() const {
    return col_dim_ < 0 ? 1 : map_.extent.extent(col_dim_);
}

QColor ShardMapWidget::regionColor(int region) const {
    if (region < 0 || region >= static_cast<int>(region_label_.size())) return kWholeColor;
    return label_colors_.value(region_label_[static_cast<size_t>(region)], kWholeColor);
}

namespace {

// The box's footprint on the slice, if it meets the slice.
std::optional<ShardMapWidget::SliceBox> project(const ZRange &box, int row_dim, int col_dim,
                                                const std::vector<Coord> &fixed) {
    for (int d = 0; d < box.rank(); ++d) {
        if (d == row_dim || d == col_dim) continue;
        const Coord f = fixed[static_cast<size_t>(d)];
        if (f < box.start()[d] || f >= box.end()[d]) return std::nullopt;
    }
    ShardMapWidget::SliceBox s;
    if (row_dim >= 0) {
        s.row0 = box.start()[row_dim];
        s.row1 = box.end()[row_dim];
    }
    if (col_dim >= 0) {
        s.col0 = box.start()[col_dim];
        s.col1 = box.end()[col_dim];
    }
    return s;
}

}  // namespace

QList<ShardMapWidget::SliceBox> ShardMapWidget::sliceBoxes() const {
    QList<SliceBox> out;
    for (size_t i = 0; i < map_.regions.size(); ++i)
        if (auto s = project(map_.regions[i].box, row_dim_, col_dim_, fixed_)) {
            s->region = static_cast<int>(i);
            out << *s;
        }
    return out;
}

QList<ShardMapWidget::SliceBox> ShardMapWidget::sliceSharedBoxes() const {
    QList<SliceBox> out;
    for (const ZRange &b : map_.shared_boxes)
        if (auto s = project(b, row_dim_, col_dim_, fixed_)) out << *s;
    return out;
}

QString ShardMapWidget::sharedText() const {
    if (map_.shared == 0) return {};
    const bool replicated = map_.shared == map_.covered;
    return QStringLiteral("%1: %2 — %3 elements read by more than one shard")
        .arg(replicated ? tr("replicated") : tr("halo"), qs(overlap_shapes_text(map_.overlaps)), count(map_.shared));
}

QString ShardMapWidget::summaryText() const {
    if (tensor_.isEmpty()) return {};
    if (!error_.isEmpty()) return error_;
    const Tensor *t = graph_.find_tensor(map_.tensor);
    const QString name = qs(t->name.empty() ? t->id.value : t->name);
    if (mode_ == Mode::writes && map_.regions.empty())
        return tr("%1 is %2: no operation writes it.")
            .arg(name, t->role == TensorRole::parameter ? tr("a parameter") : tr("an input"));
    QStringList ops;
    for (const ShardRegion &r : map_.regions)
        if (!ops.contains(qs(r.op.value))) ops << qs(r.op.value);
    const QString verb = mode_ == Mode::writes ? tr("write") : tr("read");
    QString line;
    if (!map_.sharded()) {
        line = tr("%1 by %2 — not sharded · %3 elements")
                   .arg(mode_ == Mode::writes ? tr("Written") : tr("Read"), ops.join(", "), count(map_.covered));
    } else {
        const qsizetype shards = static_cast<qsizetype>(map_.labels().size());
        line = tr("%1 shards of %2 %3 %4: %5 of %6 elements")
                   .arg(shards)
                   .arg(ops.join(", "), verb, name, count(map_.covered), count(map_.extent.size()));
        if (map_.shared == 0) line += mode_ == Mode::writes ? tr(", each exactly once") : tr(", no element twice");
    }
    const QString shared = sharedText();
    if (!shared.isEmpty()) line += QStringLiteral(" · ") + shared;
    return line;
}

QStringList ShardMapWidget::legendLines() const {
    QStringList out;
    for (const ShardRegion &r : map_.regions)
        out << QStringLiteral("%1 · %2 · %3 · %4 elements")
                   .arg(qs(r.label()), qs(r.port), qs(r.box.to_string()), count(r.box.size()));
    return out;
}

std::optional<ZPoint> ShardMapWidget::pointAt(const QPointF &canvas_pos) const {
    const QRectF grid = canvas_->gridRect();
    if (grid.isEmpty() || !grid.contains(canvas_pos)) return std::nullopt;
    ZPoint p(fixed_);
    auto along = [](double frac, Coord start, Coord extent) {
        return start +
               std::clamp(static_cast<Coord>(std::floor(frac * static_cast<double>(extent))), Coord{0}, extent - 1);
    };
    if (col_dim_ >= 0)
        p[col_dim_] = along((canvas_pos.x() - grid.left()) / grid.width(), map_.extent.start()[col_dim_], sliceCols());
    if (row_dim_ >= 0)
        p[row_dim_] = along((canvas_pos.y() - grid.top()) / grid.height(), map_.extent.start()[row_dim_], sliceRows());
    return p;
}

QPointF ShardMapWidget::canvasPosOf(Coord row, Coord col) const {
    const QRectF grid = canvas_->gridRect();
    const Coord r0 = row_dim_ < 0 ? 0 : map_.extent.start()[row_dim_];
    const Coord c0 = col_dim_ < 0 ? 0 : map_.extent.start()[col_dim_];
    return {grid.left() + (static_cast<double>(col - c0) + 0.5) / static_cast<double>(sliceCols()) * grid.width(),
            grid.top() + (static_cast<double>(row - r0) + 0.5) / static_cast<double>(sliceRows()) * grid.height()};
}

QString ShardMapWidget::describePoint(const ZPoint &point) const {
    const Tensor *t = graph_.find_tensor(map_.tensor);
    if (!t) return {};
    QStringList coords;
    for (Coord c : point.coords()) coords << QString::number(c);
    QStringList lines{qs(t->name.empty() ? t->id.value : t->name) + "[" + coords.join(", ") + "]"};
    QStringList who;
    for (const ShardRegion &r : map_.regions)
        if (r.box.contains(point))
            who << tr("%1 %2 it (%3 %4)")
                       .arg(qs(r.label()), mode_ == Mode::writes ? tr("writes") : tr("reads"), qs(r.port),
                            qs(r.box.to_string()));
    if (who.isEmpty())
        lines << (mode_ == Mode::writes ? tr("no shard writes it") : tr("%1 does not read it").arg(consumer_));
    lines << who;
    int shards = 0;
    QStringList seen;
    for (const ShardRegion &r : map_.regions)
        if (r.box.contains(point) && !seen.contains(qs(r.label()))) {
            seen << qs(r.label());
            ++shards;
        }
    if (shards > 1) lines << tr("shared by %1 shards").arg(shards);
    return lines.join('\n');
}

}  // namespace tapestry::views
