// MurmurHash3 x64-128 (public domain, Austin Appleby), reading words with memcpy so
// that unaligned buffers and strict aliasing are fine; little-endian word order as
// in the reference implementation on x86-64 and AArch64.
#include "store/content_hash.h"

#include <cstring>
#include <vector>

namespace tapestry::store {
namespace {

inline std::uint64_t rotl(std::uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

inline std::uint64_t fmix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

inline std::uint64_t load64(const std::byte *p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

std::string ContentHash::hex() const {
    static const char digits[] = "0123456789abcdef";
    std::string s(32, '0');
    for (int i = 0; i < 16; ++i) {
        s[static_cast<size_t>(i)] = digits[(high >> (60 - 4 * i)) & 0xf];
        s[static_cast<size_t>(16 + i)] = digits[(low >> (60 - 4 * i)) & 0xf];
    }
    return s;
}

ContentHash murmur3_128(std::span<const std::byte> bytes, std::uint64_t seed) {
    const std::byte *data = bytes.data();
    const size_t len = bytes.size();
    const size_t nblocks = len / 16;
    std::uint64_t h1 = seed, h2 = seed;
    constexpr std::uint64_t c1 = 0x87c37b91114253d5ULL;
    constexpr std::uint64_t c2 = 0x4cf5ad432745937fULL;

    for (size_t i = 0; i < nblocks; ++i) {
        std::uint64_t k1 = load64(data + i * 16);
        std::uint64_t k2 = load64(data + i * 16 + 8);
        k1 *= c1, k1 = rotl(k1, 31), k1 *= c2, h1 ^= k1;
        h1 = rotl(h1, 27), h1 += h2, h1 = h1 * 5 + 0x52dce729;
        k2 *= c2, k2 = rotl(k2, 33), k2 *= c1, h2 ^= k2;
        h2 = rotl(h2, 31), h2 += h1, h2 = h2 * 5 + 0x38495ab5;
    }

    const std::byte *tail = data + nblocks * 16;
    std::uint64_t k1 = 0, k2 = 0;
    const size_t rest = len & 15;
    for (size_t i = rest; i > 8; --i) k2 ^= static_cast<std::uint64_t>(tail[i - 1]) << (8 * (i - 9));
    if (rest > 8) k2 *= c2, k2 = rotl(k2, 33), k2 *= c1, h2 ^= k2;
    for (size_t i = rest < 8 ? rest : 8; i > 0; --i) k1 ^= static_cast<std::uint64_t>(tail[i - 1]) << (8 * (i - 1));
    if (rest > 0) k1 *= c1, k1 = rotl(k1, 31), k1 *= c2, h1 ^= k1;

    h1 ^= len, h2 ^= len;
    h1 += h2, h2 += h1;
    h1 = fmix(h1), h2 = fmix(h2);
    h1 += h2, h2 += h1;
    return {h1, h2};
}

ContentHash content_hash(const TensorData &value) {
    const ContentHash body = murmur3_128(value.bytes);
    // The header: dtype, rank, extents and the body's hash, hashed again, so that
    // equal bytes under another dtype or shape get another key.
    std::vector<std::uint64_t> header;
    header.push_back(static_cast<std::uint64_t>(value.dtype));
    header.push_back(static_cast<std::uint64_t>(value.shape.rank()));
    for (auto c : value.shape.coords()) header.push_back(static_cast<std::uint64_t>(c));
    header.push_back(body.low);
    header.push_back(body.high);
    return murmur3_128(std::as_bytes(std::span<const std::uint64_t>(header)), 0x7461706573747279ULL);
}

}  // namespace tapestry::store
