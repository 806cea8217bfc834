// tapestry-studio: the desktop workbench (DESIGN.md §9).
//   tapestry-studio [PROJECT] [--session FILE | --no-session] [--screenshot FILE] [--select NODE_ID]
// Without PROJECT it reopens the session's last project (a new session starts on
// the example projects/mlp.tapestry.json). PROJECT may be a plan file
// (*.plan.json): the Plan dock shows it, beside the session's last project.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QStyleFactory>
#include <QTimer>
#include <cstdio>

#include "main_window.h"
#include "project_controller.h"
#include "views/studio_resources.h"

int main(int argc, char *argv[]) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tapestry"));
    QApplication::setApplicationName(QStringLiteral("Tapestry Studio"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    tapestry::views::initResources();
    app.setStyleSheet(tapestry::views::studioStyleSheet());
    QFont font = QApplication::font();
    if (font.pointSizeF() < 10) font.setPointSizeF(10);
    QApplication::setFont(font);

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Tapestry Studio: view and check block tensor operation graphs."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("project"),
                                 QStringLiteral("A .tapestry.json project (default: the example MLP), or a "
                                                "plan file (*.plan.json) to show in the Plan dock."),
                                 QStringLiteral("[PROJECT]"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("After the first layout, save the window to FILE and quit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption select(QStringLiteral("select"), QStringLiteral("Select the node NODE_ID once laid out."),
                                    QStringLiteral("NODE_ID"));
    const QCommandLineOption session(
        QStringLiteral("session"),
        QStringLiteral("Use the session file FILE (default: the last session used, at first "
                       "default.tapestry-session in the user's data directory)."),
        QStringLiteral("FILE"));
    const QCommandLineOption no_session(QStringLiteral("no-session"),
                                        QStringLiteral("Open no session: edits are not autosaved."));
    parser.addOption(session);
    parser.addOption(no_session);
    parser.addOption(screenshot);
    parser.addOption(select);
    parser.process(app);

    const QStringList args = parser.positionalArguments();
    if (args.size() > 1) {
        std::fprintf(stderr, "tapestry-studio: expected at most one project file, got %lld\n",
                     static_cast<long long>(args.size()));
        return 2;
    }

    tapestry::studio::MainWindow window;
    if (parser.isSet(screenshot)) window.setScreenshotPath(QFileInfo(parser.value(screenshot)).absoluteFilePath());
    if (parser.isSet(select)) window.setPreselectedNode(parser.value(select));
    window.show();
    // Start loading once the event loop runs, so the window appears at once.
    const QString session_path = parser.isSet(no_session) ? QString()
                                 : parser.isSet(session)  ? QFileInfo(parser.value(session)).absoluteFilePath()
                                                          : tapestry::studio::MainWindow::lastSessionPath();
    QTimer::singleShot(0, &window, [&window, args, session_path] {
        // The session reopens its last project; a project named on the command
        // line joins the session instead. A session that cannot be opened is
        // reported and the studio carries on without one.
        // A plan file (*.plan.json) goes to the Plan dock: the canvas shows what it
        // would show without one.
        const bool plan = !args.isEmpty() && tapestry::studio::ProjectController::isPlanFile(args.front());
        const bool session_ok =
            !session_path.isEmpty() && window.openSession(session_path, args.isEmpty() || plan).isEmpty();
        if (!args.isEmpty())
            window.openProject(args.front());
        if ((args.isEmpty() || plan) && !session_ok)
            window.project()->openDefaultProject();
    });
    return app.exec();
}
