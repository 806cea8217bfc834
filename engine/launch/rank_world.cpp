// Agreeing on a stage's outcome across ranks (see rank_world.h).
#include "launch/rank_world.h"

#include <algorithm>

namespace tapestry::launch {

Expected<std::monostate, std::string> agree_ranks(RankWorld &world, Expected<std::monostate, std::string> mine,
                                                  const std::string &what) {
    if (world.ranks() <= 1) return mine;
    auto outcomes = world.allgather(mine ? 0 : 1, "every rank's outcome of " + what);
    if (!outcomes) return mine ? unexpected(outcomes.error()) : mine;
    const auto failed = std::find(outcomes->begin(), outcomes->end(), 1);
    if (failed == outcomes->end()) return mine;
    const int first = static_cast<int>(failed - outcomes->begin());
    // The first failed rank's words, to every rank: their length, then the bytes.
    std::string words = !mine && world.rank() == first ? mine.error() : std::string();
    std::int64_t length = static_cast<std::int64_t>(words.size());
    const std::string from = "rank " + std::to_string(first) + "'s report of " + what;
    if (auto b = world.broadcast(&length, sizeof length, first, from); !b) return mine ? unexpected(b.error()) : mine;
    words.resize(static_cast<size_t>(std::max<std::int64_t>(0, length)));
    if (length > 0)
        if (auto b = world.broadcast(words.data(), length, first, from); !b) return mine ? unexpected(b.error()) : mine;
    if (!mine) return mine;
    return unexpected("rank " + std::to_string(first) + " could not finish " + what + ": " + words);
}

}  // namespace tapestry::launch
