#include "graph/params.h"

#include <sstream>

namespace tapestry {

std::string param_type_name(const ParamValue &v) {
    switch (v.index()) {
        case 0: return "bool";
        case 1: return "int";
        case 2: return "float";
        case 3: return "string";
        case 4: return "int list";
    }
    return "?";
}

std::string param_to_string(const ParamValue &v) {
    std::ostringstream s;
    if (auto *b = std::get_if<bool>(&v)) s << (*b ? "true" : "false");
    else if (auto *i = std::get_if<std::int64_t>(&v)) s << *i;
    else if (auto *d = std::get_if<double>(&v)) s << *d;
    else if (auto *str = std::get_if<std::string>(&v)) s << '"' << *str << '"';
    else if (auto *l = std::get_if<std::vector<std::int64_t>>(&v)) {
        s << '[';
        for (size_t k = 0; k < l->size(); ++k) s << (k ? ", " : "") << (*l)[k];
        s << ']';
    }
    return s.str();
}

const ParamValue *Params::find(const std::string &name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
}

std::int64_t Params::get_int(const std::string &name, std::int64_t fallback) const {
    const ParamValue *v = find(name);
    if (auto *i = v ? std::get_if<std::int64_t>(v) : nullptr) return *i;
    return fallback;
}

double Params::get_float(const std::string &name, double fallback) const {
    const ParamValue *v = find(name);
    if (!v) return fallback;
    if (auto *d = std::get_if<double>(v)) return *d;
    if (auto *i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
    return fallback;
}

bool Params::get_bool(const std::string &name, bool fallback) const {
    const ParamValue *v = find(name);
    if (auto *b = v ? std::get_if<bool>(v) : nullptr) return *b;
    return fallback;
}

std::string Params::get_string(const std::string &name, const std::string &fallback) const {
    const ParamValue *v = find(name);
    if (auto *s = v ? std::get_if<std::string>(v) : nullptr) return *s;
    return fallback;
}

std::vector<std::int64_t> Params::get_ints(const std::string &name, const std::vector<std::int64_t> &fallback) const {
    const ParamValue *v = find(name);
    if (auto *l = v ? std::get_if<std::vector<std::int64_t>>(v) : nullptr) return *l;
    return fallback;
}

}  // namespace tapestry
