// Tensor roles by name (see tensor.h).
#include "graph/tensor.h"

namespace tapestry {

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

}  // namespace tapestry
