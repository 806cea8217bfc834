// Validation issues as text (see issue.h).
#include "graph/issue.h"

namespace tapestry {

std::string_view severity_name(Severity s) {
    switch (s) {
        case Severity::error: return "error";
        case Severity::warning: return "warning";
        case Severity::info: return "info";
    }
    return "?";
}

std::string format_issue(const Issue &issue) {
    std::string s{severity_name(issue.severity)};
    s += ' ';
    s += issue.code;
    if (!issue.json_path.empty()) s += " at " + issue.json_path;
    if (!issue.node.empty()) s += " (" + issue.node + ")";
    s += ": " + issue.message;
    return s;
}

bool has_errors(const std::vector<Issue> &issues) {
    for (const Issue &i : issues)
        if (i.severity == Severity::error) return true;
    return false;
}

}  // namespace tapestry
