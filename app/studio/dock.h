// How the studio's docks are made: titled, named for the saved window state and,
// when their content has a tall form, scrolling instead of insisting on its
// height — so that no dock's minimum size makes the window grow (a tensor's form
// or shard map once did) or squeezes the other docks.
#pragma once

#include <QString>

class QDockWidget;
class QWidget;

namespace tapestry::studio {

enum class DockContent { fits, scrolls };

QDockWidget *makeDock(const QString &title, const char *object_name, QWidget *content, QWidget *window,
                      DockContent how = DockContent::fits);

}  // namespace tapestry::studio
