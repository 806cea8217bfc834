#include "flow_layout.h"

#include <algorithm>

namespace tapestry::views {

FlowLayout::FlowLayout(QWidget *parent, int horizontal_spacing, int vertical_spacing)
    : QLayout(parent), horizontal_spacing_(horizontal_spacing), vertical_spacing_(vertical_spacing) {}

FlowLayout::~FlowLayout() {
    while (QLayoutItem *item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem *item) {
    items_.append(item);
    invalidate();
}

QLayoutItem *FlowLayout::itemAt(int index) const {
    return index >= 0 && index < items_.size() ? items_.at(index) : nullptr;
}

QLayoutItem *FlowLayout::takeAt(int index) {
    if (index < 0 || index >= items_.size()) return nullptr;
    QLayoutItem *item = items_.takeAt(index);
    invalidate();
    return item;
}

int FlowLayout::heightForWidth(int width) const {
    return arrange(QRect(0, 0, width, 0), false);
}

QSize FlowLayout::minimumSize() const {
    QSize size;
    for (const QLayoutItem *item : items_)
        if (!item->isEmpty()) size = size.expandedTo(item->minimumSize());
    const QMargins m = contentsMargins();
    return size + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize FlowLayout::sizeHint() const {
    // Everything on one line.
    int width = 0;
    int height = 0;
    int shown = 0;
    for (const QLayoutItem *item : items_) {
        if (item->isEmpty()) continue;
        const QSize hint = item->sizeHint();
        width += hint.width() + (shown++ > 0 ? horizontal_spacing_ : 0);
        height = std::max(height, hint.height());
    }
    const QMargins m = contentsMargins();
    return QSize(width + m.left() + m.right(), height + m.top() + m.bottom());
}

void FlowLayout::setGeometry(const QRect &rect) {
    QLayout::setGeometry(rect);
    arrange(rect, true);
}

int FlowLayout::arrange(const QRect &rect, bool apply) const {
    const QRect area = rect.marginsRemoved(contentsMargins());
    const int right = area.x() + std::max(area.width(), 0);
    int y = area.y();
    int lines = 0;
    QList<QLayoutItem *> line;
    QList<int> widths;
    int x = area.x();
    int line_height = 0;
    const auto finishLine = [&] {
        if (line.isEmpty()) return;
        if (apply) {
            int at = area.x();
            for (qsizetype i = 0; i < line.size(); ++i) {
                const int h = std::min(line[i]->sizeHint().height(), line_height);
                line[i]->setGeometry(QRect(at, y + (line_height - h) / 2, widths[i], h));
                at += widths[i] + horizontal_spacing_;
            }
        }
        y += line_height + vertical_spacing_;
        ++lines;
        line.clear();
        widths.clear();
        x = area.x();
        line_height = 0;
    };
    for (QLayoutItem *item : items_) {
        if (item->isEmpty()) continue;
        // An item wider than the whole line shrinks to it, down to its minimum.
        const int width = std::max(std::min(item->sizeHint().width(), area.width()), item->minimumSize().width());
        if (!line.isEmpty() && x + width > right) finishLine();
        line.append(item);
        widths.append(width);
        x += width + horizontal_spacing_;
        line_height = std::max(line_height, item->sizeHint().height());
    }
    finishLine();
    if (apply) lines_ = lines;
    const int used = lines > 0 ? y - vertical_spacing_ - area.y() : 0;
    const QMargins m = contentsMargins();
    return used + m.top() + m.bottom();
}

}  // namespace tapestry::views
