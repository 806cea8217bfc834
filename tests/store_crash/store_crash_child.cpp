// The process the crash-safety test kills: opens SESSION, and forever saves the
// next version of the crash stream (crash_graph.h) as an autosave, printing
// "committed N" on stdout after each commit returns. Exits 1 on a store error.
#include <cstdio>

#include "crash_graph.h"
#include "store/session.h"

using namespace tapestry;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: store_crash_child SESSION\n");
        return 2;
    }
    auto session = store::Session::open(argv[1], store::OpenMode::read_write);
    if (!session) {
        std::fprintf(stderr, "store_crash_child: %s\n", session.error().message.c_str());
        return 1;
    }
    store::Session &s = **session;
    auto projects = s.projects();
    if (!projects) return 1;
    store::ProjectId project = 0;
    int next = 1;
    if (projects->empty()) {
        auto created = s.create_project("crash");
        if (!created) return 1;
        project = *created;
    } else {
        project = projects->front().id;
        auto versions = s.versions(project);
        if (!versions) return 1;
        if (!versions->empty()) next = versions->back().number + 1;
    }
    for (;; ++next) {
        auto saved = s.save_version(project, crash_test::graph_for_version(next), "autosave");
        if (!saved) {
            std::fprintf(stderr, "store_crash_child: %s\n", saved.error().message.c_str());
            return 1;
        }
        if (saved->number != next) {
            std::fprintf(stderr, "store_crash_child: saved as %d, expected %d\n", saved->number, next);
            return 1;
        }
        std::printf("committed %d\n", saved->number);
        std::fflush(stdout);
    }
}
