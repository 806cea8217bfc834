// A layout that lines its items up left to right and starts a new line where
// the next one would not fit, as text wraps: for a dock's row of settings and
// buttons, so that a dock given half the window (the Plan dock beside the
// Optimize dock) shows every control instead of clipping the row's end.
//
// Its minimum width is its widest item's; its height follows its width
// (heightForWidth), so a QScrollArea or a box layout above it gives it the
// lines it needs. Items keep their size hints; a line's items share its height
// and stand centred in it.
#pragma once

#include <QLayout>
#include <QList>

namespace tapestry::views {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget *parent = nullptr, int horizontal_spacing = 6, int vertical_spacing = 4);
    ~FlowLayout() override;

    void addItem(QLayoutItem *item) override;
    int count() const override { return static_cast<int>(items_.size()); }
    QLayoutItem *itemAt(int index) const override;
    QLayoutItem *takeAt(int index) override;

    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize minimumSize() const override;
    QSize sizeHint() const override;
    void setGeometry(const QRect &rect) override;

    // How many lines the last setGeometry laid the items out in (tests).
    int lineCount() const { return lines_; }

private:
    // Lays the items out in `rect` (moving them when `apply`); the height used.
    int arrange(const QRect &rect, bool apply) const;

    QList<QLayoutItem *> items_;
    int horizontal_spacing_;
    int vertical_spacing_;
    mutable int lines_ = 0;
};

}  // namespace tapestry::views
