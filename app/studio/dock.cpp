#include "dock.h"

#include <QDateTime>
#include <QDockWidget>
#include <QFrame>
#include <QLabel>
#include <QMainWindow>
#include <QScrollArea>

namespace tapestry::studio {

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
