// The Pareto-front search (see optimizer.h).
#include "search/optimizer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "plan/baselines.h"

namespace tapestry::search {

namespace {

using Rng = std::mt19937_64;
using Clock = std::chrono::steady_clock;

int uniform(Rng &rng, int lo, int hi) {  // [lo, hi]
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Coord extent_of(const OpChoices &o, int dim) {
    for (size_t k = 0; k < o.dims.size(); ++k)
        if (o.dims[k] == dim) return o.extents[k];
    return 0;
}

int max_parts(const Space &s, size_t op, int dim) {
    return static_cast<int>(std::min<Coord>(s.devices(), extent_of(s.ops()[op], dim)));
}

std::vector<size_t> split_ops(const Candidate &c) {
    std::vector<size_t> out;
    for (size_t i = 0; i < c.dim.size(); ++i)
        if (c.dim[i] >= 0) out.push_back(i);
    return out;
}

// ---- mutators: each changes the candidate or says it cannot ------------------------

bool reshard(const Space &s, Candidate &c, Rng &rng) {
    std::vector<size_t> choices;
    for (size_t i = 0; i < s.ops().size(); ++i)
        if (!s.ops()[i].dims.empty()) choices.push_back(i);
    if (choices.empty() || s.devices() < 2) return false;
    const size_t i = choices[static_cast<size_t>(uniform(rng, 0, static_cast<int>(choices.size()) - 1))];
    const OpChoices &o = s.ops()[i];
    const int dim = o.dims[static_cast<size_t>(uniform(rng, 0, static_cast<int>(o.dims.size()) - 1))];
    if (dim == c.dim[i]) return false;
    if (c.has_second(i) && c.dim2[i] == dim) c.clear_second(i);
    const int top = max_parts(s, i, dim) / (c.has_second(i) ? c.parts2[i] : 1);
    if (top < 2) return false;
    c.dim[i] = dim;
    c.parts[i] = c.parts[i] >= 2 && c.parts[i] <= top ? c.parts[i] : uniform(rng, 2, top);
    return true;
}

bool refactor(const Space &s, Candidate &c, Rng &rng) {
    const std::vector<size_t> split = split_ops(c);
    if (split.empty()) return false;
    const size_t i = split[static_cast<size_t>(uniform(rng, 0, static_cast<int>(split.size()) - 1))];
    // The first split's parts, or the second's when the op has one (half the time).
    const bool second = c.has_second(i) && uniform(rng, 0, 1) == 1;
    int &p = second ? c.parts2[i] : c.parts[i];
    const int other = second ? c.parts[i] : (c.has_second(i) ? c.parts2[i] : 1);
    const int top = std::min(max_parts(s, i, second ? c.dim2[i] : c.dim[i]), s.devices() / other);
    std::vector<int> options;
    for (int q : {p * 2, p / 2, p + 1, p - 1})
        if (q >= 2 && q <= top && q != p && std::find(options.begin(), options.end(), q) == options.end()) options.push_back(q);
    if (options.empty()) return false;
    p = options[static_cast<size_t>(uniform(rng, 0, static_cast<int>(options.size()) - 1))];
    return true;
}

bool unsplit(const Space &, Candidate &c, Rng &rng) {
    const std::vector<size_t> split = split_ops(c);
    if (split.empty()) return false;
    const size_t i = split[static_cast<size_t>(uniform(rng, 0, static_cast<int>(split.size()) - 1))];
    c.dim[i] = -1;
    c.parts[i] = 1;
    c.clear_second(i);
    return true;
}

// Adds, changes or drops a second split of a split op (a product split: each of
// its parts split again along another dim, the pieces at most the devices).
bool product(const Space &s, Candidate &c, Rng &rng) {
    const std::vector<size_t> split = split_ops(c);
    if (split.empty()) return false;
    const size_t i = split[static_cast<size_t>(uniform(rng, 0, static_cast<int>(split.size()) - 1))];
    if (c.has_second(i) && uniform(rng, 0, 2) == 0) {
        c.clear_second(i);
        return true;
    }
    const OpChoices &o = s.ops()[i];
    std::vector<int> dims;
    for (int d : o.dims)
        if (d != c.dim[i]) dims.push_back(d);
    if (dims.empty()) return false;
    const int d = dims[static_cast<size_t>(uniform(rng, 0, static_cast<int>(dims.size()) - 1))];
    const int top = std::min(max_parts(s, i, d), s.devices() / c.parts[i]);
    if (top < 2) return false;
    const int p = uniform(rng, 2, top);
    if (c.has_second(i) && c.dim2[i] == d && c.parts2[i] == p) return false;
    c.set_second(i, s.ops().size(), d, p);
    return true;
}

// Carries one op's split (same dim, same parts) along its neighbours in
// dependency order, as far as they offer that dim.
bool chain(const Space &s, Candidate &c, Rng &rng) {
    const std::vector<size_t> split = split_ops(c);
    if (split.empty()) return false;
    const size_t i = split[static_cast<size_t>(uniform(rng, 0, static_cast<int>(split.size()) - 1))];
    const int dim = c.dim[i], parts = c.parts[i];
    const int dim2 = c.has_second(i) ? c.dim2[i] : -1, parts2 = c.has_second(i) ? c.parts2[i] : 1;
    const int reach = uniform(rng, 1, static_cast<int>(s.ops().size()));
    bool changed = false;
    auto carry = [&](size_t j) {
        if (max_parts(s, j, dim) < parts) return false;
        // The second split goes along where the neighbour offers it, else stays behind.
        const bool second = dim2 >= 0 && max_parts(s, j, dim2) >= parts2;
        const int d2 = second ? dim2 : -1, p2 = second ? parts2 : 1;
        const int had2 = c.has_second(j) ? c.dim2[j] : -1, hadp2 = c.has_second(j) ? c.parts2[j] : 1;
        if (c.dim[j] != dim || c.parts[j] != parts || had2 != d2 || hadp2 != p2) changed = true;
        c.dim[j] = dim;
        c.parts[j] = parts;
        if (second) c.set_second(j, s.ops().size(), d2, p2);
        else c.clear_second(j);
        return true;
    };
    const bool forward = uniform(rng, 0, 1) == 1;
    for (int step = 1; step <= reach; ++step) {
        const long j = forward ? static_cast<long>(i) + step : static_cast<long>(i) - step;
        if (j < 0 || j >= static_cast<long>(s.ops().size()) || !carry(static_cast<size_t>(j))) break;
    }
    return changed;
}

// Another placement rule: shard, round-robin, spread, or a pipeline of 2 … devices
// stages (contiguous groups of ops on groups of devices, docs/passes.md).
bool replace(const Space &s, Candidate &c, Rng &rng) {
    if (s.devices() < 2) return false;
    const int most = std::min<int>(s.devices(), static_cast<int>(s.ops().size()));
    const int pick = uniform(rng, 0, most >= 2 ? 3 : 2);
    const PlacementRule before = c.rule;
    const int stages_before = c.stages;
    if (pick == 3) {
        c.rule = PlacementRule::pipeline;
        c.stages = uniform(rng, 2, most);
    } else {
        c.rule = pick == 0 ? PlacementRule::by_shard : pick == 1 ? PlacementRule::round_robin : PlacementRule::spread;
        c.stages = 0;
    }
    if (c.rule == before && c.stages == stages_before) return false;
    c.cuts.clear();  // placement's own cuts for the new stages
    return true;
}

// Moves a pipeline cut: a pipeline whose stages placement cuts by FLOPs takes the
// space's balanced cuts (Space::balanced_cuts), then one cut moves a few ops either
// way, staying between its neighbours; an explicit one goes back to placement's own
// cuts a quarter of the time.
bool recut(const Space &s, Candidate &c, Rng &rng) {
    if (c.rule != PlacementRule::pipeline || c.stages < 2) return false;
    if (!c.cuts.empty() && uniform(rng, 0, 3) == 0) {
        c.cuts.clear();
        return true;
    }
    std::vector<int> cuts = c.cuts.empty() ? s.balanced_cuts(c.stages) : c.cuts;
    if (cuts.empty()) return false;
    const int ops = static_cast<int>(s.ops().size());
    const size_t k = static_cast<size_t>(uniform(rng, 0, static_cast<int>(cuts.size()) - 1));
    const int lo = k ? cuts[k - 1] + 1 : 1, hi = k + 1 < cuts.size() ? cuts[k + 1] - 1 : ops - 1;
    // Steps of a few ops; in a long graph, up to an eighth of a stage's ops.
    const int reach = std::max(3, ops / (8 * c.stages));
    const int to = std::clamp(cuts[k] + (uniform(rng, 0, 1) ? 1 : -1) * uniform(rng, 1, reach), lo, hi);
    if (to == cuts[k]) return false;
    cuts[k] = to;
    c.cuts = std::move(cuts);
    return true;
}

// Fusion on or off: fuses an unfused candidate; otherwise drops the fusion (a third
// of the time) or keeps one more op out of it, or lets one back in.
bool toggle_fusion(const Space &s, Candidate &c, Rng &rng) {
    if (!s.fusion()) return false;
    if (!c.fused) {
        c.fused = true;
        c.unfused.clear();
        return true;
    }
    if (uniform(rng, 0, 2) == 0) {
        c.fused = false;
        c.unfused.clear();
        return true;
    }
    const int i = uniform(rng, 0, static_cast<int>(s.ops().size()) - 1);
    const auto at = std::lower_bound(c.unfused.begin(), c.unfused.end(), i);
    if (at != c.unfused.end() && *at == i) c.unfused.erase(at);
    else c.unfused.insert(at, i);
    return true;
}

// A device map on or off: maps an op's pieces from a device of its own (the device
// it would start from under the rule excepted, where that is known: piece 0 of an
// op placed `shard` starts on device 0), or gives a mapped op back to the rule (a
// third of the time).
bool remap(const Space &s, Candidate &c, Rng &rng) {
    if (!s.maps() || s.devices() < 2) return false;
    const size_t ops = s.ops().size();
    const size_t i = static_cast<size_t>(uniform(rng, 0, static_cast<int>(ops) - 1));
    if (c.has_map(i) && uniform(rng, 0, 2) == 0) {
        c.clear_map(i);
        return true;
    }
    const int before = c.has_map(i) ? c.at[i] : -1;
    const int device = uniform(rng, 0, s.devices() - 1);
    if (device == before || (before < 0 && device == 0 && c.rule == PlacementRule::by_shard)) return false;
    c.set_map(i, ops, device);
    return true;
}

// Copies one op's split (its dim and parts, and its second split) to its twins —
// the same op of the other layers of a stack (Space::twins) —, so that what one
// layer found reaches every layer in one step.
bool mirror(const Space &s, Candidate &c, Rng &rng) {
    std::vector<size_t> with;
    for (size_t i = 0; i < s.ops().size(); ++i)
        if (!s.twins(i).empty()) with.push_back(i);
    if (with.empty()) return false;
    const size_t i = with[static_cast<size_t>(uniform(rng, 0, static_cast<int>(with.size()) - 1))];
    const int d2 = c.has_second(i) ? c.dim2[i] : -1, p2 = c.has_second(i) ? c.parts2[i] : 1;
    bool changed = false;
    for (int t : s.twins(i)) {
        const size_t j = static_cast<size_t>(t);
        const int had2 = c.has_second(j) ? c.dim2[j] : -1, hadp2 = c.has_second(j) ? c.parts2[j] : 1;
        if (c.dim[j] == c.dim[i] && c.parts[j] == c.parts[i] && had2 == d2 && hadp2 == p2) continue;
        c.dim[j] = c.dim[i];
        c.parts[j] = c.parts[i];
        if (d2 >= 0) c.set_second(j, s.ops().size(), d2, p2);
        else c.clear_second(j);
        changed = true;
    }
    return changed;
}

// The candidate carried to another space (another substitution's graph): each op
// both graphs have (by id) keeps its split where the other space offers the dim
// and the parts fit, and stays out of the fusion if it was; the rest starts whole.
// The rule, its stages (where the other graph has the ops for them) and the fusion
// go with it; device maps and cuts, which name the old graph's ops, do not.
bool carry(const Space &from, const Space &to, const Candidate &c, Candidate &out) {
    out = to.unsplit();
    out.rule = c.rule;
    out.stages = c.rule == PlacementRule::pipeline ? std::min<int>(c.stages, static_cast<int>(to.ops().size())) : 0;
    if (out.rule == PlacementRule::pipeline && out.stages < 2) {
        out.rule = PlacementRule::by_shard;
        out.stages = 0;
    }
    out.fused = c.fused && to.fusion();
    std::map<std::string, size_t> index;
    for (size_t j = 0; j < from.ops().size(); ++j) index.emplace(from.ops()[j].op.value, j);
    auto offers = [&](size_t i, int dim, int parts) {
        const Coord e = extent_of(to.ops()[i], dim);
        return e >= parts && parts <= to.devices();
    };
    for (size_t i = 0; i < to.ops().size(); ++i) {
        const auto it = index.find(to.ops()[i].op.value);
        if (it == index.end()) continue;
        const size_t j = it->second;
        if (j < c.dim.size() && c.dim[j] >= 0 && offers(i, c.dim[j], c.pieces(j))) {
            out.dim[i] = c.dim[j];
            out.parts[i] = c.parts[j];
            if (c.has_second(j)) out.set_second(i, to.ops().size(), c.dim2[j], c.parts2[j]);
        }
        if (out.fused && std::binary_search(c.unfused.begin(), c.unfused.end(), static_cast<int>(j)))
            out.unfused.push_back(static_cast<int>(i));
    }
    std::sort(out.unfused.begin(), out.unfused.end());
    return to.valid(out);
}

}  // namespace

std::vector<BaselineCandidate> baseline_candidates(const Evaluator &e) {
    std::vector<BaselineCandidate> out;
    const Space &s = e.space();
    const Graph &g = e.graph();
    const int n = s.devices(), per_node = e.model().shape().devices_per_node;
    if (n < 2) return out;
    auto add = [&](plan::Baseline b, Expected<std::vector<ShardSpec>, std::string> specs, PlacementRule rule, int stages) {
        if (!specs) return;
        if (auto c = s.from_specs(*specs, rule, stages)) out.push_back({b, std::move(c).value()});
    };
    add(plan::Baseline::dp, plan::batch_specs(g, n, "dp"), PlacementRule::by_shard, 0);
    add(plan::Baseline::tp, plan::tensor_specs(g, n, "tp"), PlacementRule::by_shard, 0);
    const int tp = std::min({n, per_node, 8});
    if (tp > 1 && tp < n && n % tp == 0) {
        auto b = plan::batch_specs(g, n / tp, "dp×tp");
        auto t = plan::tensor_specs(g, tp, "dp×tp");
        if (b && t) {
            std::vector<ShardSpec> both = *b;
            both.insert(both.end(), t->begin(), t->end());
            add(plan::Baseline::dp_tp, both, PlacementRule::spread, 0);
        }
    }
    if (static_cast<int>(s.ops().size()) >= n)
        for (int m = n; m >= 2; m /= 2)
            if (auto b = plan::batch_specs(g, m, "pp")) {
                add(plan::Baseline::pp, std::move(b), PlacementRule::pipeline, n);
                break;
            }
    return out;
}

namespace {

struct Mutator {
    const char *name;
    bool (*apply)(const Space &, Candidate &, Rng &);
};
constexpr Mutator kMutators[] = {{"reshard", reshard}, {"refactor", refactor}, {"unsplit", unsplit},
                                 {"chain", chain},     {"replace", replace},   {"product", product}};
// The mutators of a space: "fuse" only where the space allows fusion, "remap"
// only where it allows device maps, "cut" only where it allows pipeline cuts,
// "mirror" only where ops have twins (repeated layers) — so a space without them
// draws exactly as before.
std::vector<Mutator> mutators_of(const Space &s) {
    std::vector<Mutator> out(std::begin(kMutators), std::end(kMutators));
    if (s.fusion()) out.push_back({"fuse", toggle_fusion});
    if (s.maps()) out.push_back({"remap", remap});
    if (s.cuts()) out.push_back({"cut", recut});
    if (s.has_twins()) out.push_back({"mirror", mirror});
    return out;
}

// The search's worker threads, started once: a thread started per generation
// costs its start, and each new thread's allocator heap starts cold.
class Workers {
public:
    explicit Workers(int threads) {
        for (int t = 1; t < threads; ++t) threads_.emplace_back([this] { serve(); });
    }
    ~Workers() {
        {
            std::lock_guard lock(mutex_);
            quit_ = true;
        }
        wake_.notify_all();
        for (std::thread &t : threads_) t.join();
    }
    Workers(const Workers &) = delete;
    Workers &operator=(const Workers &) = delete;
    // Runs `job` on every worker and on the calling thread; returns when all are done.
    void run(const std::function<void()> &job) {
        {
            std::lock_guard lock(mutex_);
            job_ = &job;
            ++round_;
            busy_ = static_cast<int>(threads_.size());
        }
        wake_.notify_all();
        job();
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return busy_ == 0; });
        job_ = nullptr;
    }

private:
    void serve() {
        long seen = 0;
        for (;;) {
            const std::function<void()> *job = nullptr;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return quit_ || round_ != seen; });
                if (quit_) return;
                seen = round_;
                job = job_;
            }
            (*job)();
            std::lock_guard lock(mutex_);
            if (--busy_ == 0) done_.notify_one();
        }
    }
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void()> *job_ = nullptr;
    long round_ = 0;
    int busy_ = 0;
    bool quit_ = false;
};

class Search {
public:
    Search(const Evaluator &e, const SearchOptions &o, const SearchHooks &h)
        : eval_(e), opt_(o), hooks_(h), rng_(o.seed), start_(Clock::now()) {
        mutator_list_ = mutators_of(e.space());
        // Where the evaluator offers substitutions, a candidate may move to another
        // substitution's graph (handled by the search: it needs both spaces).
        if (e.spaces().size() > 1) mutator_list_.push_back({"substitute", nullptr});
        mutators_ = static_cast<int>(mutator_list_.size());
        stats_.resize(mutator_list_.size());
        for (int m = 0; m < mutators_; ++m) stats_[static_cast<size_t>(m)].name = mutator_list_[static_cast<size_t>(m)].name;
        threads_ = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
        workers_ = std::make_unique<Workers>(threads_);
    }

    Expected<SearchResult, std::string> run();

private:
    bool stopping() const { return hooks_.stop && hooks_.stop->load(); }
    double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
    // Evaluates the candidates not seen before (in parallel), then returns every
    // candidate's scored form in order; streams the new ones.
    std::vector<Scored> evaluate(const std::vector<Candidate> &cands, const std::vector<std::string> &made_by);
    size_t tournament(const std::vector<int> &rank, const std::vector<double> &crowd);
    int draw_mutator();
    double refresh_weights();  // each mutator's weight from its record; their sum
    std::vector<Scored> select(std::vector<Scored> pool);
    bool update_front(const std::vector<Scored> &fresh);
    // Applies mutator m to c (in c's own space); whether it changed c.
    bool mutate(int m, Candidate &c);
    std::vector<Point> points(const std::vector<Scored> &v) const {
        std::vector<Point> out;
        for (const Scored &s : v) out.push_back(s.evaluation.point);
        return out;
    }

    const Evaluator &eval_;
    const SearchOptions &opt_;
    const SearchHooks &hooks_;
    Rng rng_;
    Clock::time_point start_;
    int threads_ = 1;
    std::unique_ptr<Workers> workers_;
    std::vector<Mutator> mutator_list_;  // this space's (mutators_of)
    int mutators_ = 0;
    std::map<std::string, Scored> cache_;  // by key: each candidate as first evaluated
    std::vector<MutatorStats> stats_;
    std::vector<Scored> population_, front_;
    long evaluations_ = 0, invalid_ = 0;
    int generation_ = 0;
};

std::vector<Scored> Search::evaluate(const std::vector<Candidate> &cands, const std::vector<std::string> &made_by) {
    // The new ones, each once, in order.
    std::vector<size_t> todo;
    std::set<std::string> queued;
    for (size_t i = 0; i < cands.size(); ++i) {
        const std::string k = cands[i].key();
        if (cache_.count(k) || queued.count(k)) continue;
        if (opt_.max_evaluations > 0 && evaluations_ + static_cast<long>(todo.size()) >= opt_.max_evaluations) break;
        queued.insert(k);
        todo.push_back(i);
    }
    std::vector<Evaluation> results(todo.size());
    std::vector<char> skipped(todo.size(), 0);  // not evaluated: the search was stopped
    std::atomic<size_t> next{0};
    const std::function<void()> work = [&] {
        for (size_t k = next++; k < todo.size(); k = next++) {
            if (stopping()) {
                skipped[k] = 1;
                continue;
            }
            results[k] = eval_.evaluate(cands[todo[k]]);
        }
    };
    if (todo.size() > 1) workers_->run(work);
    else work();
    for (size_t k = 0; k < todo.size(); ++k) {
        if (skipped[k]) continue;
        const Candidate &c = cands[todo[k]];
        const Scored &s = cache_[c.key()] = Scored{c, results[k], evaluations_++, generation_, made_by[todo[k]]};
        if (!s.evaluation.ok) ++invalid_;
        if (hooks_.candidate) hooks_.candidate(s);
    }
    // Every candidate asked for that has an evaluation, as first evaluated (its
    // index, generation and maker).
    std::vector<Scored> out;
    for (size_t i = 0; i < cands.size(); ++i) {
        const auto it = cache_.find(cands[i].key());
        if (it == cache_.end()) continue;  // over the evaluation budget, or stopped
        out.push_back(it->second);
    }
    return out;
}

size_t Search::tournament(const std::vector<int> &rank, const std::vector<double> &crowd) {
    const int n = static_cast<int>(population_.size());
    const size_t a = static_cast<size_t>(uniform(rng_, 0, n - 1)), b = static_cast<size_t>(uniform(rng_, 0, n - 1));
    if (rank[a] != rank[b]) return rank[a] < rank[b] ? a : b;
    return crowd[a] >= crowd[b] ? a : b;
}

double Search::refresh_weights() {
    double total = 0;
    for (MutatorStats &m : stats_) {
        m.weight = (1.0 + static_cast<double>(m.successes)) / (2.0 + static_cast<double>(m.trials));
        total += m.weight;
    }
    return total;
}

int Search::draw_mutator() {
    const double total = refresh_weights();
    double r = std::uniform_real_distribution<double>(0, total)(rng_);
    for (int m = 0; m < mutators_; ++m) {
        r -= stats_[static_cast<size_t>(m)].weight;
        if (r <= 0) return m;
    }
    return mutators_ - 1;
}

// NSGA-II survival: whole ranks while they fit, then the least crowded of the next.
std::vector<Scored> Search::select(std::vector<Scored> pool) {
    std::vector<Scored> unique;
    std::set<std::string> seen;
    for (Scored &s : pool)
        if (s.evaluation.ok && seen.insert(s.candidate.key()).second) unique.push_back(std::move(s));
    const std::vector<Point> pts = points(unique);
    const std::vector<int> rank = nondominated_ranks(pts);
    std::vector<Scored> out;
    const int top = unique.empty() ? -1 : *std::max_element(rank.begin(), rank.end());
    for (int r = 0; r <= top && static_cast<int>(out.size()) < opt_.population; ++r) {
        std::vector<size_t> members;
        for (size_t i = 0; i < unique.size(); ++i)
            if (rank[i] == r) members.push_back(i);
        if (static_cast<int>(out.size() + members.size()) <= opt_.population) {
            for (size_t i : members) out.push_back(unique[i]);
            continue;
        }
        const std::vector<double> crowd = crowding(pts, members);
        std::vector<size_t> order(members.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return crowd[x] > crowd[y]; });
        for (size_t k = 0; k < order.size() && static_cast<int>(out.size()) < opt_.population; ++k)
            out.push_back(unique[members[order[k]]]);
    }
    return out;
}

// The archive's first front with the fresh candidates; whether it changed. Each
// candidate's key is made once (the sort breaks ties by it).
bool Search::update_front(const std::vector<Scored> &fresh) {
    std::vector<const Scored *> pool;
    std::vector<std::string> keys;
    std::set<std::string> seen;
    auto offer = [&](const Scored &s) {
        std::string k = s.candidate.key();
        if (!seen.insert(k).second) return;
        pool.push_back(&s);
        keys.push_back(std::move(k));
    };
    for (const Scored &s : front_) offer(s);
    for (const Scored &s : fresh)
        if (s.evaluation.ok) offer(s);
    std::vector<Point> pts;
    pts.reserve(pool.size());
    for (const Scored *s : pool) pts.push_back(s->evaluation.point);
    std::vector<size_t> next = first_front(pts);
    std::sort(next.begin(), next.end(), [&](size_t a, size_t b) {
        const auto &x = pool[a]->evaluation.point.objectives, &y = pool[b]->evaluation.point.objectives;
        return x < y || (x == y && keys[a] < keys[b]);
    });
    // Plans with the same figures are one point of the front: the first by key stays.
    next.erase(std::unique(next.begin(), next.end(),
                           [&](size_t a, size_t b) {
                               return pool[a]->evaluation.point.objectives == pool[b]->evaluation.point.objectives &&
                                      pool[a]->evaluation.point.violation == pool[b]->evaluation.point.violation;
                           }),
               next.end());
    // front_ is the first front_.size() of the pool, in its order.
    bool changed = next.size() != front_.size();
    for (size_t i = 0; !changed && i < next.size(); ++i) changed = next[i] != i;
    if (!changed) return false;
    std::vector<Scored> made;
    made.reserve(next.size());
    for (size_t i : next) made.push_back(*pool[i]);
    front_ = std::move(made);
    return true;
}

bool Search::mutate(int m, Candidate &c) {
    const Mutator &mu = mutator_list_[static_cast<size_t>(m)];
    const Space *own = eval_.space_of(c);
    if (!own) return false;
    if (mu.apply) return mu.apply(*own, c, rng_);
    // "substitute": to another of the evaluator's spaces, drawn uniformly.
    const std::vector<const Space *> all = eval_.spaces();
    std::vector<const Space *> others;
    for (const Space *s : all)
        if (s != own) others.push_back(s);
    if (others.empty()) return false;
    const Space *to = others[static_cast<size_t>(uniform(rng_, 0, static_cast<int>(others.size()) - 1))];
    Candidate moved;
    if (!carry(*own, *to, c, moved)) return false;
    c = std::move(moved);
    return true;
}

Expected<SearchResult, std::string> Search::run() {
    SearchResult result;
    // The first population: nothing split, the batch split over each power of two
    // and over every device, the warm start, then mutations of those — from the
    // graph as given and from each substitution offered (the hand baselines from
    // the graph as given: theirs).
    std::vector<Candidate> seeds;
    std::vector<std::string> made_by;
    for (const Space *each : eval_.spaces()) {
        const Space &space = *each;
        const bool given = space.substitution().empty();
        seeds.push_back(space.unsplit());
        made_by.push_back("seed");
        for (int p = 2; p <= space.devices(); p *= 2) {
            seeds.push_back(space.batch_split(p));
            made_by.push_back("seed");
        }
        if (space.devices() > 1) {
            seeds.push_back(space.batch_split(space.devices()));
            made_by.push_back("seed");
            // Every op split the same way over every device, per dim choice (the second
            // choice of a linear is its output features: a tensor-parallel start).
            for (size_t k = 1; k < space.most_choices(); ++k) {
                seeds.push_back(space.uniform_split(k, space.devices()));
                made_by.push_back("seed");
            }
            // Data parallel over tensor-parallel groups: the batch over outer groups, each
            // group's ops split along a dim choice (a product split), for each outer count.
            for (int outer = 2; outer < space.devices(); outer *= 2)
                for (size_t k = 1; k < space.most_choices(); ++k) {
                    Candidate c = space.product_split(outer, k, space.devices() / outer);
                    if (c.dim2.empty() || std::find(seeds.begin(), seeds.end(), c) != seeds.end()) continue;
                    c.rule = PlacementRule::spread;
                    seeds.push_back(std::move(c));
                    made_by.push_back("seed");
                }
            // The hand baselines' shardings (docs/plans.md) where they are candidates:
            // the search starts from them, so its front is never worse than they are.
            if (given)
                for (BaselineCandidate &b : baseline_candidates(eval_)) {
                    if (std::find(seeds.begin(), seeds.end(), b.candidate) != seeds.end()) continue;
                    seeds.push_back(std::move(b.candidate));
                    made_by.push_back(std::string("baseline ") + plan::baseline_name(b.baseline));
                }
        }
    }
    // Where the space allows fusion, each start fused too (fusion saves the
    // elementwise epilogues' round trips through memory).
    if (eval_.space().fusion())
        for (size_t k = 0, n = seeds.size(); k < n; ++k) {
            Candidate c = seeds[k];
            c.fused = true;
            seeds.push_back(std::move(c));
            made_by.push_back(made_by[k] + " fused");
        }
    for (const Candidate &c : opt_.warm_start)
        if (const Space *own = eval_.space_of(c); own && own->valid(c)) {
            seeds.push_back(c);
            made_by.push_back("warm start");
        }
    for (int tries = 0; static_cast<int>(seeds.size()) < opt_.population && tries < 50 * opt_.population; ++tries) {
        Candidate c = seeds[static_cast<size_t>(uniform(rng_, 0, static_cast<int>(seeds.size()) - 1))];
        const int m = uniform(rng_, 0, mutators_ - 1);
        if (!mutate(m, c)) continue;
        seeds.push_back(std::move(c));
        made_by.push_back(mutator_list_[static_cast<size_t>(m)].name);
    }
    std::vector<Scored> first = evaluate(seeds, made_by);
    population_ = select(first);
    update_front(first);
    if (population_.empty() && stopping()) {
        result.stopped = "stopped";
        result.evaluations = evaluations_;
        result.seconds = seconds();
        result.mutators = stats_;
        return result;
    }
    if (population_.empty()) return unexpected(std::string("no candidate of the search space has a plan") +
                                               (first.empty() ? std::string() : ": " + first.front().evaluation.error));
    int stall = 0;
    auto report = [&] {
        if (!hooks_.generation) return;
        Progress p;
        p.generation = generation_;
        p.evaluations = evaluations_;
        p.invalid = invalid_;
        p.seconds = seconds();
        p.evaluations_per_second = p.seconds > 0 ? static_cast<double>(evaluations_) / p.seconds : 0;
        p.front = front_;
        hooks_.generation(p);
    };
    report();
    while (true) {
        if (stopping()) { result.stopped = "stopped"; break; }
        if (opt_.generations > 0 && generation_ >= opt_.generations) { result.stopped = "generations"; break; }
        if (opt_.max_evaluations > 0 && evaluations_ >= opt_.max_evaluations) { result.stopped = "evaluations"; break; }
        if (opt_.budget_seconds > 0 && seconds() >= opt_.budget_seconds) { result.stopped = "budget"; break; }
        if (opt_.stall_generations > 0 && stall >= opt_.stall_generations) { result.stopped = "stalled"; break; }
        ++generation_;
        const std::vector<Point> pts = points(population_);
        const std::vector<int> rank = nondominated_ranks(pts);
        std::vector<double> crowd(population_.size(), 0);
        {   // crowding within each rank
            const int top = *std::max_element(rank.begin(), rank.end());
            for (int r = 0; r <= top; ++r) {
                std::vector<size_t> members;
                for (size_t i = 0; i < rank.size(); ++i)
                    if (rank[i] == r) members.push_back(i);
                const std::vector<double> c = crowding(pts, members);
                for (size_t k = 0; k < members.size(); ++k) crowd[members[k]] = c[k];
            }
        }
        std::vector<Candidate> children;
        std::vector<std::string> by;
        std::vector<size_t> parent;
        std::vector<int> mutator;
        for (int k = 0; k < opt_.population; ++k) {
            const size_t p = tournament(rank, crowd);
            Candidate c = population_[p].candidate;
            int m = -1;
            for (int attempt = 0; attempt < 8 && m < 0; ++attempt) {
                const int pick = draw_mutator();
                if (mutate(pick, c)) m = pick;
            }
            if (m < 0) continue;
            children.push_back(std::move(c));
            by.push_back(mutator_list_[static_cast<size_t>(m)].name);
            parent.push_back(p);
            mutator.push_back(m);
        }
        const std::vector<Scored> scored = evaluate(children, by);
        // Mutator success: a child with a plan that its parent does not dominate.
        std::map<std::string, const Scored *> of_key;
        for (const Scored &s : scored) of_key[s.candidate.key()] = &s;
        for (size_t k = 0; k < children.size(); ++k) {
            const auto it = of_key.find(children[k].key());
            if (it == of_key.end()) continue;
            MutatorStats &st = stats_[static_cast<size_t>(mutator[k])];
            ++st.trials;
            const Evaluation &e = it->second->evaluation;
            if (e.ok && !constrained_dominates(population_[parent[k]].evaluation.point, e.point)) ++st.successes;
        }
        std::vector<Scored> pool = population_;
        pool.insert(pool.end(), scored.begin(), scored.end());
        population_ = select(std::move(pool));
        stall = update_front(scored) ? 0 : stall + 1;
        report();
    }
    refresh_weights();
    result.front = front_;
    result.evaluations = evaluations_;
    result.invalid = invalid_;
    result.generations = generation_;
    result.seconds = seconds();
    result.mutators = stats_;
    return result;
}

}  // namespace

Expected<SearchResult, std::string> optimize(const Evaluator &evaluator, const SearchOptions &options,
                                             const SearchHooks &hooks) {
    if (options.population < 2) return unexpected(std::string("the population needs at least 2 candidates"));
    Search s(evaluator, options, hooks);
    return s.run();
}

}  // namespace tapestry::search
