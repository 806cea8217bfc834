// Test projects for the engine suites: a fixture's JSON text parsed into a graph
// (it must parse: a failure stops the suite with the first issue), and the source
// tree the suite runs from (TAPESTRY_SOURCE_DIR, set by CTest).
#pragma once

#include <QtGlobal>
#include <filesystem>
#include <string>

#include "graph/graph.h"
#include "io/project_file.h"

namespace tapestry::test {

inline Graph parse(const std::string &json) {
    LoadResult r = parse_project(json);
    if (!r.ok()) qFatal("test project does not parse: %s", format_issue(r.issues.front()).c_str());
    return r.graph;
}

inline std::filesystem::path source_dir() {
    return std::filesystem::path(qgetenv("TAPESTRY_SOURCE_DIR").toStdString());
}

}  // namespace tapestry::test
