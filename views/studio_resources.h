// The studio's built-in resources (resources/studio.qrc): icons under :/icons/,
// the stylesheet at :/studio.qss. Views and the window call initResources()
// before using them, since the static library's resources need registering.
#pragma once

#include <QIcon>
#include <QString>

namespace tapestry::views {

// Registers the resources; cheap and idempotent.
void initResources();
// An icon from :/icons/<name>.svg.
QIcon studioIcon(const QString &name);
// The application stylesheet.
QString studioStyleSheet();

}  // namespace tapestry::views
