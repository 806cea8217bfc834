#include "views/studio_resources.h"

#include <QFile>

// Q_INIT_RESOURCE must be used outside any namespace.
static void init_studio_qrc() {
    Q_INIT_RESOURCE(studio);
}

namespace tapestry::views {

void initResources() {
    static const bool done = [] {
        init_studio_qrc();
        return true;
    }();
    (void)done;
}

QIcon studioIcon(const QString &name) {
    initResources();
    return QIcon(QStringLiteral(":/icons/%1.svg").arg(name));
}

QString studioStyleSheet() {
    initResources();
    QFile f(QStringLiteral(":/studio.qss"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
}

}  // namespace tapestry::views
