// Where the studio finds its example projects when it is started without a
// file: $TAPESTRY_SOURCE_DIR/projects, the source tree this binary was built
// from, <build>/app/../../projects, and an installed share/tapestry/projects.
#pragma once

#include <QString>
#include <QStringList>

namespace tapestry::views {

// Candidate `projects/` folders, most specific first (existing or not).
QStringList exampleProjectDirs();
// The first existing `projects/<file_name>`, or "" when none exists.
QString findExampleProject(const QString &file_name = QStringLiteral("mlp.tapestry.json"));

}  // namespace tapestry::views
