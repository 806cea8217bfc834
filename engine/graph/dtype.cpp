#include "graph/dtype.h"

#include "graph/issue.h"
#include "graph/tensor.h"

namespace tapestry {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
        case DType::boolean: return "bool";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : kAllDTypes)
        if (dtype_name(t) == name) return t;
    return std::nullopt;
}

int dtype_bytes(DType t) {
    switch (t) {
        case DType::f32: return 4;
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::i32: return 4;
        case DType::i64: return 8;
        case DType::boolean: return 1;
    }
    return 0;
}

bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

std::string_view role_name(TensorRole r) {
    switch (r) {
        case TensorRole::input: return "input";
        case TensorRole::parameter: return "parameter";
        case TensorRole::intermediate: return "intermediate";
        case TensorRole::output: return "output";
    }
    return "?";
}

std::optional<TensorRole> parse_role(std::string_view name) {
    for (TensorRole r : {TensorRole::input, TensorRole::parameter, TensorRole::intermediate, TensorRole::output})
        if (role_name(r) == name) return r;
    return std::nullopt;
}

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
