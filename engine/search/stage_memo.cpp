// The memo of shared stages (see stage_memo.h).
#include "search/stage_memo.h"

namespace tapestry::search {

StageMemo::StageMemo(std::size_t entries, std::size_t pieces) : entries_(entries), pieces_(pieces) {}

std::size_t StageMemo::pieces_of(const Stage &s) {
    std::size_t n = 0;
    for (const OpPtr &op : s.graph.operations()) n += 1 + op->shards.size();
    return n;
}

std::shared_ptr<const Stage> StageMemo::find(const std::string &key) const {
    std::lock_guard lock(mutex_);
    const auto it = at_.find(key);
    if (it == at_.end()) {
        ++misses_;
        return nullptr;
    }
    ++hits_;
    order_.splice(order_.begin(), order_, it->second);  // the newest now
    return it->second->stage;
}

void StageMemo::keep(const std::string &key, std::shared_ptr<const Stage> stage) const {
    if (!stage || entries_ == 0) return;
    const std::size_t size = pieces_of(*stage);
    if (size > pieces_) return;
    std::lock_guard lock(mutex_);
    if (at_.count(key)) return;  // another thread made it meanwhile: the same stage
    order_.push_front(Entry{key, std::move(stage), size});
    at_.emplace(key, order_.begin());
    held_ += size;
    while (order_.size() > entries_ || held_ > pieces_) {
        held_ -= order_.back().pieces;
        at_.erase(order_.back().key);
        order_.pop_back();
    }
}

std::int64_t StageMemo::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

std::int64_t StageMemo::misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
}

std::size_t StageMemo::size() const {
    std::lock_guard lock(mutex_);
    return order_.size();
}

}  // namespace tapestry::search
