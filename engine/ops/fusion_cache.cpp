// The fusion memo (see fusion_cache.h).
#include "ops/fusion_cache.h"

#include <mutex>

#include "graph/value_hash.h"

namespace tapestry {
namespace {

void mix(std::uint64_t &h, const ZPoint &p) {
    for (Coord c : p) value_hash::mix(h, c);
    value_hash::mix(h, static_cast<std::int64_t>(p.rank()));
}

void mix(std::uint64_t &h, const std::vector<std::vector<std::int64_t>> &strides) {
    for (const auto &s : strides) {
        for (std::int64_t x : s) value_hash::mix(h, x);
        value_hash::mix(h, static_cast<std::int64_t>(s.size()));
    }
}

std::uint64_t key_of(const FusedPiece &p) {
    std::uint64_t h = value_hash::kSeed;
    value_hash::mix(h, &p.def, sizeof p.def);
    value_hash::mix(h, p.params);
    value_hash::mix(h, p.operands);
    value_hash::mix(h, p.derivation.outputs);
    mix(h, p.index_range.start());
    mix(h, p.index_range.end());
    for (const auto *shapes : {&p.input_shapes, &p.output_shapes}) {
        for (const ZPoint &s : *shapes) mix(h, s);
        value_hash::mix(h, static_cast<std::int64_t>(shapes->size()));
    }
    mix(h, p.input_strides);
    mix(h, p.output_strides);
    return h;
}

bool same_piece(const FusedPiece &a, const FusedPiece &b) {
    if (a.def != b.def || !(a.params == b.params) || !(a.index_range == b.index_range) ||
        a.input_shapes != b.input_shapes || a.output_shapes != b.output_shapes || a.input_strides != b.input_strides ||
        a.output_strides != b.output_strides)
        return false;
    auto same_ports = [](const std::vector<PortTypes> &x, const std::vector<PortTypes> &y) {
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (x[i].port != y[i].port || x[i].operands != y[i].operands) return false;
        return true;
    };
    return same_ports(a.operands, b.operands) && same_ports(a.derivation.outputs, b.derivation.outputs) &&
           a.derivation.signature == b.derivation.signature;
}

}  // namespace

FusionCache::FusionCache(const FusionBackend &inner, std::size_t capacity) : inner_(inner), capacity_(capacity) {}

std::string FusionCache::refusal(const FusedPiece &piece) const {
    const std::uint64_t key = key_of(piece);
    {
        std::shared_lock lock(mutex_);
        const auto [lo, hi] = memo_.equal_range(key);
        for (auto it = lo; it != hi; ++it)
            if (same_piece(it->second->piece, piece)) {
                hits_.fetch_add(1, std::memory_order_relaxed);
                return it->second->refusal;
            }
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    std::string answer = inner_.refusal(piece);
    std::unique_lock lock(mutex_);
    if (memo_.size() < capacity_) {
        memo_.emplace(key, std::make_shared<const Entry>(Entry{piece, answer}));
    }
    return answer;
}

}  // namespace tapestry
