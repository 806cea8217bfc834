// How the studio's docks are made: titled, named for the saved window state and,
// when their content has a tall form, scrolling instead of insisting on its
// height — so that no dock's minimum size makes the window grow (a tensor's form
// or shard map once did) or squeezes the other docks.
#pragma once

#include <QString>
#include <Qt>
#include <functional>
#include <string>

class QDockWidget;
class QLabel;
class QSplitter;
class QWidget;

namespace tapestry::studio {

enum class DockContent { fits, scrolls };

QDockWidget *makeDock(const QString &title, const char *object_name, QWidget *content, QWidget *window,
                      DockContent how = DockContent::fits);

// Shows and raises a dock; the first time (`sized` is false, then set) a dock at
// the bottom gets at least `height` pixels — the strip that suits the issues list
// is too short for charts — and later the user's choice stands.
void showWithRoom(QDockWidget *dock, QWidget *window, int height, bool &sized);

// A scrolling dock docked beside others (the Optimize dock beside the bottom
// tabs) narrower than its content's minimum width is widened to it, up to half
// the window: its content scrolls only up and down, so a narrower dock clips its
// right side. A dock wide enough, floating or hidden is left as the user has it.
void widenToContent(QDockWidget *dock, QWidget *window);

// Panes side by side while `watched` (the dock's panel) is at least as wide as
// `wide()` says they need, stacked top to bottom when it is narrower — the Plan
// dock beside the Optimize dock gets half the window, and its device table
// squeezed beside two charts showed none of them whole. The splitter's
// orientation follows every resize, and the function returned looks again now
// (for when what `wide()` says changes: a table filled); the panel scrolls up
// and down. `changed`, when given, is told the new orientation.
std::function<void()> stackWhenNarrow(QSplitter *splitter, QWidget *watched, std::function<int()> wide,
                                      std::function<void(Qt::Orientation)> changed = {});

// What the docks' forms share: a label whose mnemonic focuses `buddy`; a rounded
// badge ("PREDICTION", a certificate's verdict) in the given colours; a time the
// session stored (ISO 8601 UTC) as lists show it, in local time ("2026-11-25 14:03").
QLabel *formLabel(const QString &text, QWidget *buddy, QWidget *parent);
void styleBadge(QLabel *label, const QString &background, const QString &foreground);
QString localTimeText(const std::string &iso);
// A count with its noun, singular or plural: "1 project", "3 projects" (the
// studio installs no translator, so tr's "%n project(s)" would show the brackets).
QString countText(qint64 n, const QString &one, const QString &many);

}  // namespace tapestry::studio
