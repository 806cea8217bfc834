// Overflow-checked size arithmetic, in one place (issue 14): element counts, byte
// counts and arena offsets never wrap. A product or sum of sizes that leaves 64
// bits saturates at kSizeSaturated, which is larger than any size the loader
// accepts (kMaxElements elements), so a saturated size is refused wherever it is
// checked against a limit — never mistaken for a small one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace tapestry {

// The most elements a tensor, index space or selection may hold (the loader's limit).
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;
// What a size that does not fit in 64 bits becomes.
inline constexpr std::int64_t kSizeSaturated = std::numeric_limits<std::int64_t>::max();

// a·b and a + b, or none where the result leaves 64 bits.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
    std::int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// Sizes (non-negative): a·b and a + b, saturated at kSizeSaturated.
inline std::int64_t size_mul(std::int64_t a, std::int64_t b) { return checked_mul(a, b).value_or(kSizeSaturated); }
inline std::int64_t size_add(std::int64_t a, std::int64_t b) { return checked_add(a, b).value_or(kSizeSaturated); }

// "1.5 GiB", "512 B"; "more than 8 EiB" for a saturated size.
inline std::string byte_text(std::int64_t bytes) {
    if (bytes >= kSizeSaturated) return "more than 8 EiB";
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace tapestry
