// Pareto fronts (see front.h).
#include "search/front.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/check.h"

namespace tapestry::search {

bool dominates(const std::vector<double> &a, const std::vector<double> &b) {
    TAPESTRY_CHECK(a.size() == b.size(), "dominates: objective counts differ");
    bool better = false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] > b[i]) return false;
        if (a[i] < b[i]) better = true;
    }
    return better;
}

bool constrained_dominates(const Point &a, const Point &b) {
    if (a.feasible() != b.feasible()) return a.feasible();
    if (!a.feasible()) return a.violation < b.violation;
    return dominates(a.objectives, b.objectives);
}

std::vector<int> nondominated_ranks(const std::vector<Point> &points) {
    const size_t n = points.size();
    std::vector<int> rank(n, -1);
    std::vector<std::vector<size_t>> beats(n);
    std::vector<int> beaten_by(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            if (constrained_dominates(points[i], points[j])) {
                beats[i].push_back(j);
                ++beaten_by[j];
            } else if (constrained_dominates(points[j], points[i])) {
                beats[j].push_back(i);
                ++beaten_by[i];
            }
        }
    std::vector<size_t> current;
    for (size_t i = 0; i < n; ++i)
        if (beaten_by[i] == 0) current.push_back(i);
    for (int r = 0; !current.empty(); ++r) {
        std::vector<size_t> next;
        for (size_t i : current) {
            rank[i] = r;
            for (size_t j : beats[i])
                if (--beaten_by[j] == 0) next.push_back(j);
        }
        std::sort(next.begin(), next.end());
        current = std::move(next);
    }
    return rank;
}

std::vector<size_t> first_front(const std::vector<Point> &points) {
    const std::vector<int> rank = nondominated_ranks(points);
    std::vector<size_t> out;
    for (size_t i = 0; i < points.size(); ++i)
        if (rank[i] == 0) out.push_back(i);
    return out;
}

std::vector<double> crowding(const std::vector<Point> &points, const std::vector<size_t> &members) {
    const size_t m = members.size();
    std::vector<double> distance(m, 0.0);
    if (m == 0) return distance;
    const size_t objectives = points[members.front()].objectives.size();
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<size_t> order(m);
    for (size_t k = 0; k < objectives; ++k) {
        std::iota(order.begin(), order.end(), size_t{0});
        auto value = [&](size_t o) { return points[members[o]].objectives[k]; };
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value(a) < value(b); });
        const double lo = value(order.front()), hi = value(order.back());
        distance[order.front()] = inf;
        distance[order.back()] = inf;
        if (hi <= lo) continue;
        for (size_t o = 1; o + 1 < m; ++o)
            distance[order[o]] += (value(order[o + 1]) - value(order[o - 1])) / (hi - lo);
    }
    return distance;
}

namespace {

// Hypervolume by slicing along the last objective (exact, any dimension; the
// fronts here are small). Every point is strictly better than `ref` everywhere.
double slice_volume(std::vector<std::vector<double>> pts, const std::vector<double> &ref, size_t dims) {
    if (pts.empty()) return 0;
    if (dims == 1) {
        double best = ref[0];
        for (const auto &p : pts) best = std::min(best, p[0]);
        return ref[0] - best;
    }
    const size_t last = dims - 1;
    std::sort(pts.begin(), pts.end(), [&](const auto &a, const auto &b) { return a[last] < b[last]; });
    double volume = 0;
    std::vector<std::vector<double>> below;
    for (size_t i = 0; i < pts.size(); ++i) {
        below.push_back(pts[i]);
        const double top = i + 1 < pts.size() ? pts[i + 1][last] : ref[last];
        if (top <= pts[i][last]) continue;
        volume += slice_volume(below, ref, last) * (top - pts[i][last]);
    }
    return volume;
}

}  // namespace

double hypervolume(const std::vector<std::vector<double>> &front, const std::vector<double> &reference) {
    std::vector<std::vector<double>> inside;
    for (const auto &p : front) {
        TAPESTRY_CHECK(p.size() == reference.size(), "hypervolume: objective counts differ");
        bool strictly = true;
        for (size_t i = 0; i < p.size(); ++i) strictly = strictly && p[i] < reference[i];
        if (strictly) inside.push_back(p);
    }
    return slice_volume(std::move(inside), reference, reference.size());
}

}  // namespace tapestry::search
