#include "dock.h"

#include <QDateTime>
#include <QDockWidget>
#include <QFrame>
#include <QLabel>
#include <QMainWindow>
#include <QPointer>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <algorithm>

namespace tapestry::studio {

namespace {

// stackWhenNarrow's watcher: the splitter's child, so it goes with it.
class NarrowStacker : public QObject {
public:
    NarrowStacker(QSplitter *splitter, QWidget *watched, std::function<int()> wide,
                  std::function<void(Qt::Orientation)> changed)
        : QObject(splitter), splitter_(splitter), wide_(std::move(wide)), changed_(std::move(changed)) {
        watched->installEventFilter(this);
    }

    void arrange(int width) {
        const Qt::Orientation want = width >= wide_() ? Qt::Horizontal : Qt::Vertical;
        if (splitter_->orientation() == want) return;
        splitter_->setOrientation(want);
        if (changed_) changed_(want);
    }

    bool eventFilter(QObject *watched, QEvent *event) override {
        if (event->type() == QEvent::Resize) arrange(static_cast<QResizeEvent *>(event)->size().width());
        return QObject::eventFilter(watched, event);
    }

private:
    QSplitter *splitter_;
    std::function<int()> wide_;
    std::function<void(Qt::Orientation)> changed_;
};

}  // namespace

std::function<void()> stackWhenNarrow(QSplitter *splitter, QWidget *watched, std::function<int()> wide,
                                      std::function<void(Qt::Orientation)> changed) {
    QPointer<NarrowStacker> stacker = new NarrowStacker(splitter, watched, std::move(wide), std::move(changed));
    QPointer<QWidget> of = watched;
    return [stacker, of] {
        if (stacker && of) stacker->arrange(of->width());
    };
}

QDockWidget *makeDock(const QString &title, const char *object_name, QWidget *content, QWidget *window,
                      DockContent how) {
    auto *dock = new QDockWidget(title, window);
    dock->setObjectName(QString::fromLatin1(object_name));
    if (how == DockContent::fits) {
        dock->setWidget(content);
        return dock;
    }
    auto *scroll = new QScrollArea(dock);
    scroll->setObjectName(QString::fromLatin1(object_name) + QStringLiteral("Scroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(content);
    dock->setWidget(scroll);
    return dock;
}

void showWithRoom(QDockWidget *dock, QWidget *window, int height, bool &sized) {
    auto *main = qobject_cast<QMainWindow *>(window);
    dock->show();
    dock->raise();
    if (sized || !main || dock->isFloating()) return;
    sized = true;
    if (dock->height() < height) main->resizeDocks({dock}, {height}, Qt::Vertical);
}

void widenToContent(QDockWidget *dock, QWidget *window) {
    auto *main = qobject_cast<QMainWindow *>(window);
    auto *scroll = qobject_cast<QScrollArea *>(dock->widget());
    if (!main || !scroll || !scroll->widget() || dock->isFloating() || !dock->isVisible()) return;
    const int content = scroll->widget()->minimumSizeHint().width();
    if (scroll->viewport()->width() >= content) return;
    // The content's minimum, the scroll area's frame and the dock's margins, room
    // for the vertical scroll bar; at most half the window.
    const int chrome = dock->width() - scroll->viewport()->width();
    const int wanted =
        std::min(content + chrome + scroll->verticalScrollBar()->sizeHint().width(), main->width() / 2);
    // Qt shares a single dock's new width out among its row; naming the neighbour
    // it takes the width from (the dock shown in the row beside it) makes it exact.
    const Qt::DockWidgetArea area = main->dockWidgetArea(dock);
    for (QDockWidget *other : main->findChildren<QDockWidget *>()) {
        if (other == dock || other->isFloating() || !other->isVisible() || other->visibleRegion().isEmpty() ||
            main->dockWidgetArea(other) != area)
            continue;
        const bool same_row = other->y() < dock->y() + dock->height() && dock->y() < other->y() + other->height();
        if (!same_row) continue;
        main->resizeDocks({other, dock}, {other->width() + dock->width() - wanted, wanted}, Qt::Horizontal);
        return;
    }
    main->resizeDocks({dock}, {wanted}, Qt::Horizontal);
}

QLabel *formLabel(const QString &text, QWidget *buddy, QWidget *parent) {
    auto *label = new QLabel(text, parent);
    label->setBuddy(buddy);
    return label;
}

void styleBadge(QLabel *label, const QString &background, const QString &foreground) {
    label->setStyleSheet(QStringLiteral("QLabel { background: %1; color: %2; border-radius: 4px; padding: 1px 6px; "
                                        "font-weight: 600; }")
                             .arg(background, foreground));
}

QString localTimeText(const std::string &iso) {
    const QString text = QString::fromStdString(iso);
    const QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
    return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : text;
}

QString countText(qint64 n, const QString &one, const QString &many) {
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

}  // namespace tapestry::studio
