#include "dock.h"

#include <QDockWidget>
#include <QFrame>
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

}  // namespace tapestry::studio
