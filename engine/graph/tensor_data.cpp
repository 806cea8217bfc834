// TensorData element access. f16 and bf16 are converted here, bit by bit, rather
// than through a compiler extension (_Float16, __bf16), so that the rounding is the
// same on every compiler: directly from double to the narrow format, once, with
// round-to-nearest-even (going through float first would round twice).
#include "graph/tensor_data.h"

#include <cmath>
#include <limits>

namespace tapestry {
namespace {

// An IEEE binary format with `exponent_bits` and `mantissa_bits` (without the
// implicit bit): binary16 is (5, 10), bfloat16 is (8, 7).
struct NarrowFloat {
    int exponent_bits;
    int mantissa_bits;
    int bias() const { return (1 << (exponent_bits - 1)) - 1; }
    std::uint32_t exponent_mask() const { return (1u << exponent_bits) - 1; }
};

constexpr NarrowFloat kHalf{5, 10};
constexpr NarrowFloat kBFloat16{8, 7};

double decode(NarrowFloat f, std::uint32_t bits) {
    const std::uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1);
    const std::uint32_t exponent = (bits >> f.mantissa_bits) & f.exponent_mask();
    const bool negative = ((bits >> (f.mantissa_bits + f.exponent_bits)) & 1u) != 0;
    double magnitude;
    if (exponent == f.exponent_mask()) {
        magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (exponent == 0) {  // zero or subnormal: mantissa · 2^(1 − bias − mantissa_bits)
        magnitude = std::ldexp(static_cast<double>(mantissa), 1 - f.bias() - f.mantissa_bits);
    } else {
        magnitude = std::ldexp(static_cast<double>(mantissa | (1u << f.mantissa_bits)),
                               static_cast<int>(exponent) - f.bias() - f.mantissa_bits);
    }
    return negative ? -magnitude : magnitude;
}

// q ≥ 0 rounded to an integer, ties to even. Exact: q − floor(q) has no rounding
// error for doubles.
double round_half_even(double q) {
    const double floor_q = std::floor(q);
    const double rest = q - floor_q;
    if (rest > 0.5) return floor_q + 1;
    if (rest < 0.5) return floor_q;
    return std::fmod(floor_q, 2.0) == 0 ? floor_q : floor_q + 1;
}

std::uint32_t encode(NarrowFloat f, double v) {
    const std::uint32_t sign = std::signbit(v) ? 1u << (f.exponent_bits + f.mantissa_bits) : 0u;
    const std::uint32_t infinity = f.exponent_mask() << f.mantissa_bits;
    if (std::isnan(v)) return sign | infinity | (1u << (f.mantissa_bits - 1));  // a quiet NaN
    const double a = std::fabs(v);
    if (std::isinf(a)) return sign | infinity;
    const int min_exponent = 1 - f.bias();  // of the smallest normal number
    int e2 = 0;
    std::frexp(a, &e2);     // a = m · 2^e2, m in [0.5, 1)
    int exponent = e2 - 1;  // a = (2m) · 2^exponent
    if (a == 0 || exponent < min_exponent) {
        // Subnormal: a count of the smallest step 2^(min_exponent − mantissa_bits).
        // Rounding up to 2^mantissa_bits steps gives the smallest normal number,
        // whose encoding is that same integer.
        const double steps = round_half_even(std::ldexp(a, f.mantissa_bits - min_exponent));
        return sign | static_cast<std::uint32_t>(steps);
    }
    double significand = round_half_even(std::ldexp(a, f.mantissa_bits - exponent));  // in [2^m, 2^(m+1)]
    if (significand == std::ldexp(1.0, f.mantissa_bits + 1)) {
        significand /= 2;
        ++exponent;
    }
    if (exponent > f.bias()) return sign | infinity;
    const auto biased = static_cast<std::uint32_t>(exponent + f.bias());
    const auto fraction = static_cast<std::uint32_t>(significand) - (1u << f.mantissa_bits);
    return sign | (biased << f.mantissa_bits) | fraction;
}

// C-style conversion to an integer type (truncation toward zero, as NumPy's and
// ONNX's casts do), except that it saturates instead of being undefined: NaN → 0.
template <typename I>
I to_integer(double v) {
    if (std::isnan(v)) return 0;
    // 2^63 and 2^31 are exact doubles; the largest integers are not.
    constexpr double upper = -static_cast<double>(std::numeric_limits<I>::min());
    if (v >= upper) return std::numeric_limits<I>::max();
    if (v <= -upper) return std::numeric_limits<I>::min();
    return static_cast<I>(v);
}

template <typename T>
T load(const std::vector<std::byte> &bytes, std::int64_t i) {
    T x;
    std::memcpy(&x, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return x;
}

template <typename T>
void store(std::vector<std::byte> &bytes, std::int64_t i, T x) {
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &x, sizeof(T));
}

}  // namespace

double TensorData::get(std::int64_t i) const {
    TAPESTRY_CHECK(i >= 0 && i < element_count(), "TensorData::get: index out of range");
    TAPESTRY_CHECK(bytes.size() == static_cast<size_t>(element_count()) * static_cast<size_t>(dtype_bytes(dtype)),
                   "TensorData::get: byte size does not match the shape");
    switch (dtype) {
        case DType::f32: return load<float>(bytes, i);
        case DType::f16: return decode(kHalf, load<std::uint16_t>(bytes, i));
        case DType::bf16: return decode(kBFloat16, load<std::uint16_t>(bytes, i));
        case DType::i32: return load<std::int32_t>(bytes, i);
        case DType::i64: return static_cast<double>(load<std::int64_t>(bytes, i));
        case DType::boolean: return load<std::uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;
    }
    return 0;
}

void TensorData::set(std::int64_t i, double v) {
    TAPESTRY_CHECK(i >= 0 && i < element_count(), "TensorData::set: index out of range");
    TAPESTRY_CHECK(bytes.size() == static_cast<size_t>(element_count()) * static_cast<size_t>(dtype_bytes(dtype)),
                   "TensorData::set: byte size does not match the shape");
    switch (dtype) {
        case DType::f32: store(bytes, i, static_cast<float>(v)); return;  // IEEE: nearest-even, ±inf beyond range
        case DType::f16: store(bytes, i, static_cast<std::uint16_t>(encode(kHalf, v))); return;
        case DType::bf16: store(bytes, i, static_cast<std::uint16_t>(encode(kBFloat16, v))); return;
        case DType::i32: store(bytes, i, to_integer<std::int32_t>(v)); return;
        case DType::i64: store(bytes, i, to_integer<std::int64_t>(v)); return;
        case DType::boolean: store(bytes, i, static_cast<std::uint8_t>(v != 0 ? 1 : 0)); return;
    }
}

}  // namespace tapestry
