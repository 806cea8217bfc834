// The project file format *.tapestry.json (docs/formats.md, schema in
// docs/tapestry-project.schema.json): load and save a Graph. Loading never throws
// and never crashes on bad input: every problem is an Issue naming the file, node
// and JSON path.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"

namespace tapestry {

inline constexpr int kProjectFormatVersion = 1;
inline constexpr std::string_view kProjectFormatName = "tapestry-project";

struct LoadResult {
    Graph graph;                // what could be read (empty on a fatal error)
    std::vector<Issue> issues;  // syntax and schema problems (not semantic validation)
    bool ok() const { return !has_errors(issues); }
};

// Parses project JSON text. `source_name` names the file in messages. Structural
// problems (bad JSON, wrong types, missing fields, duplicate ids, out-of-range
// numbers, unsupported version) are reported here; semantic checks (references,
// shapes, projections, shards) are validate()'s job.
LoadResult parse_project(std::string_view text, const std::string &source_name = "<memory>");
// Reads the file first: only a regular file of at most 1 GiB (a directory, FIFO
// or device is refused with an "io" issue naming the path and what it is).
LoadResult load_project(const std::filesystem::path &path);

// Serialises a graph (stable key order, 2-space indent, trailing newline).
// States index spaces, signatures and shard selections only where the graph does.
std::string serialize_project(const Graph &g);
// Writes atomically (temporary file + rename). Returns an error message or "".
std::string save_project(const Graph &g, const std::filesystem::path &path);

}  // namespace tapestry
