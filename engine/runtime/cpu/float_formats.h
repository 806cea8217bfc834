// The 16-bit float formats of the CPU kernels, bit by bit: bf16 and f16 widened
// to float exactly, and float rounded to them to nearest even (NaN stays NaN,
// overflow of f16 goes to ±∞). One place for the elementwise loops and the dtype
// fallback (runtime/cpu/dtype_fallback.cpp) to share.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tapestry::cpu {

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t float_to_bf16(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
    return static_cast<std::uint16_t>(x >> 16);
}

inline float f16_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
    const std::uint32_t e = (h >> 10) & 0x1f;
    const std::uint32_t m = h & 0x3ff;
    if (e == 0) {
        const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m · 2^-24
        return sign ? -v : v;
    }
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
    return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

inline std::uint16_t float_to_f16(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (x > 0x7f800000u ? 0x7e00 : 0x7c00));
    if (x >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00);  // ≥ 65520 rounds to ∞
    if (x < 0x38800000u) {  // below 2^-14: subnormal steps of 2^-24, exact scaling, nearest-even
        const float steps = std::nearbyint(std::bit_cast<float>(x) * 16777216.0f);
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(steps));
    }
    x += 0xfff + ((x >> 13) & 1);
    x -= (127u - 15u) << 23;
    return static_cast<std::uint16_t>(sign | (x >> 13));
}

}  // namespace tapestry::cpu
