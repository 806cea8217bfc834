#include "views/project_locator.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace tapestry::views {

QStringList exampleProjectDirs() {
    QStringList dirs;
    const QString env = qEnvironmentVariable("TAPESTRY_SOURCE_DIR");
    if (!env.isEmpty()) dirs << QDir(env).filePath(QStringLiteral("projects"));
#ifdef TAPESTRY_SOURCE_DIR_HINT
    dirs << QDir(QStringLiteral(TAPESTRY_SOURCE_DIR_HINT)).filePath(QStringLiteral("projects"));
#endif
    if (QCoreApplication::instance()) {
        const QDir app(QCoreApplication::applicationDirPath());
        dirs << QDir::cleanPath(app.filePath(QStringLiteral("../../projects")));              // <src>/build/app
        dirs << QDir::cleanPath(app.filePath(QStringLiteral("../share/tapestry/projects")));  // installed
    }
    dirs.removeDuplicates();
    return dirs;
}

QString findExampleProject(const QString &file_name) {
    for (const QString &dir : exampleProjectDirs()) {
        const QFileInfo candidate(QDir(dir).filePath(file_name));
        if (candidate.isFile()) return candidate.absoluteFilePath();
    }
    return {};
}

}  // namespace tapestry::views
