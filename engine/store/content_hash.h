// Content hashes of tensor values: the key under which the session store keeps a
// value once, however many versions refer to it (docs/sessions.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "graph/tensor_data.h"

namespace tapestry::store {

// A 128-bit hash. Not cryptographic: the store compares the bytes of a value
// whose hash matches before it reuses the stored row.
struct ContentHash {
    std::uint64_t low = 0, high = 0;
    friend bool operator==(const ContentHash &, const ContentHash &) = default;
    std::string hex() const;  // 32 lowercase hex digits, high word first
};

// MurmurHash3 x64-128 of `bytes` with `seed` (Austin Appleby's public-domain algorithm).
ContentHash murmur3_128(std::span<const std::byte> bytes, std::uint64_t seed = 0);
// Hash of a value's dtype, shape and bytes.
ContentHash content_hash(const TensorData &value);

}  // namespace tapestry::store
