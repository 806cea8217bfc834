// FNV-1a hashing of the values the memos key on (graph/derivation_cache.h,
// ops/fusion_cache.h): bytes, strings, integers, parameters and operand types.
// A hash only picks a bucket; the memos compare the values themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/params.h"
#include "graph/signature.h"

namespace tapestry::value_hash {

inline constexpr std::uint64_t kSeed = 14695981039346656037ull;

inline void mix(std::uint64_t &h, const void *data, std::size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    for (std::size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
}
inline void mix(std::uint64_t &h, std::int64_t v) { mix(h, &v, sizeof v); }
inline void mix(std::uint64_t &h, const std::string &s) {
    mix(h, s.data(), s.size());
    mix(h, static_cast<std::int64_t>(s.size()));
}
void mix(std::uint64_t &h, const Params &params);
void mix(std::uint64_t &h, const std::vector<PortTypes> &ports);

}  // namespace tapestry::value_hash
