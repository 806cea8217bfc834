// Pareto fronts (docs/search.md): dominance between candidates' objective
// vectors (every objective minimised), constraint domination for infeasible
// candidates (Deb's rule: a feasible one beats any infeasible one; two infeasible
// ones compare by their violation), non-dominated sorting into ranks, crowding
// distance inside a rank, and the exact hypervolume a front dominates.
#pragma once

#include <cstddef>
#include <vector>

namespace tapestry::search {

// One candidate's figures: its objectives (to minimise) and how far it is outside
// the constraints (0: feasible; else the sum of the relative excesses).
struct Point {
    std::vector<double> objectives;
    double violation = 0;
    bool feasible() const { return violation <= 0; }
};

// a ≤ b on every objective and < on one.
bool dominates(const std::vector<double> &a, const std::vector<double> &b);
// Deb's constraint domination: feasible beats infeasible; two infeasible compare by
// violation (the smaller wins); two feasible by `dominates`.
bool constrained_dominates(const Point &a, const Point &b);

// Ranks by repeated non-dominated fronts (0: the first front), constraint
// domination deciding; rank[i] for points[i].
std::vector<int> nondominated_ranks(const std::vector<Point> &points);
// Indices of the first front (rank 0), ascending.
std::vector<std::size_t> first_front(const std::vector<Point> &points);
// Crowding distance of each point among `members` (indices into points) — the sum
// over objectives of the normalised gap between its neighbours; the extremes get
// infinity. Returned in the order of `members`.
std::vector<double> crowding(const std::vector<Point> &points, const std::vector<std::size_t> &members);

// The volume dominated by `front` (objective vectors, 1 to 3 objectives) and
// bounded by `reference` (every objective of the reference worse than the points';
// points not strictly better than it on every objective add nothing). Exact.
double hypervolume(const std::vector<std::vector<double>> &front, const std::vector<double> &reference);

}  // namespace tapestry::search
