// The elementwise kinds as scalar functions (see element_math.h).
#include "runtime/cpu/element_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace tapestry::cpu {

std::optional<Fn> fn_of(const std::string &kind, const Params &params) {
    static const std::map<std::string, Fn> kinds{
        {"relu", Fn::relu},           {"sigmoid", Fn::sigmoid},         {"tanh", Fn::tanh_},
        {"exp", Fn::exp_},            {"erf", Fn::erf_},                {"sqrt", Fn::sqrt_},
        {"pow", Fn::pow_},            {"neg", Fn::neg},                 {"abs", Fn::abs_},
        {"log", Fn::log_},            {"reciprocal", Fn::reciprocal},   {"leaky_relu", Fn::leaky_relu},
        {"elu", Fn::elu},             {"selu", Fn::selu},               {"softplus", Fn::softplus},
        {"softsign", Fn::softsign},   {"hard_sigmoid", Fn::hard_sigmoid}, {"hard_swish", Fn::hard_swish},
        {"clip", Fn::clip},           {"add", Fn::add},                 {"sub", Fn::sub},
        {"mul", Fn::mul},             {"div", Fn::div},                 {"max", Fn::max_},
        {"min", Fn::min_}};
    if (kind == "gelu") {
        const std::string a = params.get_string("approximate", "none");
        if (a == "none") return Fn::gelu_erf;
        if (a == "tanh") return Fn::gelu_tanh;
        return std::nullopt;
    }
    auto it = kinds.find(kind);
    if (it == kinds.end()) return std::nullopt;
    return it->second;
}

double apply1(Fn f, double x, double a, double b) {
    switch (f) {
        case Fn::relu: return x > 0 ? x : 0;
        case Fn::sigmoid: return 1 / (1 + std::exp(-x));
        case Fn::tanh_: return std::tanh(x);
        case Fn::exp_: return std::exp(x);
        case Fn::erf_: return std::erf(x);
        case Fn::sqrt_: return std::sqrt(x);
        case Fn::pow_: return std::pow(x, a);
        case Fn::gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case Fn::gelu_tanh: {
            const double c = std::sqrt(2.0 / 3.14159265358979323846);
            return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
        }
        case Fn::neg: return -x;
        case Fn::abs_: return std::fabs(x);
        case Fn::log_: return std::log(x);
        case Fn::reciprocal: return 1 / x;
        case Fn::leaky_relu: return x >= 0 ? x : a * x;
        case Fn::elu: return x > 0 ? x : a * std::expm1(x);
        case Fn::selu: return x > 0 ? b * x : b * a * std::expm1(x);
        case Fn::softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
        case Fn::softsign: return x / (1 + std::fabs(x));
        case Fn::hard_sigmoid: return std::isnan(x) ? x : std::max(0.0, std::min(1.0, a * x + b));
        case Fn::hard_swish: return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
        case Fn::clip: return std::isnan(x) ? x : std::min(std::max(x, a), b);
        default: return x;
    }
}

double apply2(Fn f, double a, double b) {
    switch (f) {
        case Fn::add: return a + b;
        case Fn::sub: return a - b;
        case Fn::mul: return a * b;
        case Fn::div: return a / b;
        case Fn::max_: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
        case Fn::min_: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
        default: return a;
    }
}

bool binary(Fn f) {
    return f == Fn::add || f == Fn::sub || f == Fn::mul || f == Fn::div || f == Fn::max_ || f == Fn::min_;
}

}  // namespace tapestry::cpu
