// Operation parameters: a small typed map (name → value). The op library declares
// which parameters each kind takes and checks them (ops/op_def.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tapestry {

using ParamValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;

// Human name of the value's type, used in messages: "bool", "int", "float", "string", "int list".
std::string param_type_name(const ParamValue &v);
// "true", "3", "0.5", "\"tanh\"", "[1, 2]"
std::string param_to_string(const ParamValue &v);

class Params {
public:
    Params() = default;
    Params(std::initializer_list<std::pair<const std::string, ParamValue>> init) : values_(init) {}

    bool has(const std::string &name) const { return values_.count(name) != 0; }
    const ParamValue *find(const std::string &name) const;
    void set(const std::string &name, ParamValue v) { values_[name] = std::move(v); }
    void erase(const std::string &name) { values_.erase(name); }
    const std::map<std::string, ParamValue> &values() const { return values_; }
    bool empty() const { return values_.empty(); }

    // Typed reads for code that has already checked the parameters; a missing or
    // mistyped value yields `fallback`. (An int is accepted where a float is asked.)
    std::int64_t get_int(const std::string &name, std::int64_t fallback) const;
    double get_float(const std::string &name, double fallback) const;
    bool get_bool(const std::string &name, bool fallback) const;
    std::string get_string(const std::string &name, const std::string &fallback) const;
    std::vector<std::int64_t> get_ints(const std::string &name, const std::vector<std::int64_t> &fallback) const;

    friend bool operator==(const Params &, const Params &) = default;

private:
    std::map<std::string, ParamValue> values_;
};

}  // namespace tapestry
