// Validation issues: structured findings about a graph, each naming the node and
// the JSON path of the field at fault (DESIGN.md §4).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tapestry {

enum class Severity { error, warning, info };
std::string_view severity_name(Severity s);  // "error", "warning", "info"

struct Issue {
    Severity severity = Severity::error;
    std::string code;       // stable machine-readable code, e.g. "shard-overlap"
    std::string message;    // one sentence a user understands
    std::string node;       // id of the tensor/operation/shard at fault ("" for the graph)
    std::string json_path;  // JSONPath into the project file, e.g. "$.operations[2].inputs.x[0].tensor"
    std::vector<std::string> related;  // other node ids involved
    friend bool operator==(const Issue &, const Issue &) = default;
};

// "error shard-overlap at $.operations[0].shards (op fc1): message"
std::string format_issue(const Issue &issue);
bool has_errors(const std::vector<Issue> &issues);

}  // namespace tapestry
