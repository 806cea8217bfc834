// IndexSet and the exact questions of the index algebra, on ISL 0.25's C API.
// Every ISL object lives in an RAII handle (isl_handles.h); nothing raw leaves
// this file.
#include "index/index_set.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/check.h"
#include "index/isl_handles.h"

namespace tapestry {

using isl::copy;
using isl::must;

// A set is held in one of two forms. Most sets the passes make are a few disjoint
// boxes — a shard's range, its image through a projection (one box through unit
// coefficients, a box per head through a strided head split), where two such
// images meet — and for those every question has a direct answer: the box form
// keeps the boxes (disjoint, sorted) and never touches ISL. Anything else — a
// union of overlapping boxes, a lattice, a difference — is an ISL set. A box-form
// operand of an ISL operation is turned into the ISL set `of_ranges` would build,
// on the spot and without changing the operand (so a const set is never written).
namespace {
struct SetForms {
    std::optional<std::vector<ZRange>> boxes;  // the box form: disjoint, non-empty, sorted
    std::shared_ptr<isl::Context> context;     // the ISL form: keeps the thread's isl_ctx alive
    isl::Set set;
};
}  // namespace
struct IndexSet::Impl : SetForms {};

namespace {

// ---- building ISL objects from boxes and projections ----------------------------

struct Term {
    isl_dim_type type;
    int pos;
    Coord coef;
};

// sum(terms) + constant >= 0, or == 0 when `equality`.
isl_constraint *make_constraint(isl_ctx *ctx, isl_local_space *ls, bool equality, const std::vector<Term> &terms,
                                Coord constant) {
    isl_local_space *space = isl_local_space_copy(ls);
    isl_constraint *c = equality ? isl_constraint_alloc_equality(space) : isl_constraint_alloc_inequality(space);
    for (const Term &t : terms)
        if (t.coef != 0) c = isl_constraint_set_coefficient_val(c, t.type, t.pos, isl_val_int_from_si(ctx, t.coef));
    c = isl_constraint_set_constant_val(c, isl_val_int_from_si(ctx, constant));
    return must(ctx, c, "building a constraint");
}

// A set of Z^rank cut out by constraints over its set dimensions.
class SetBuilder {
public:
    SetBuilder(isl_ctx *ctx, int rank) : ctx_(ctx) {
        isl_space *space = must(ctx, isl_space_set_alloc(ctx, 0, static_cast<unsigned>(rank)), "set space");
        bset_ = isl_basic_set_universe(isl_space_copy(space));
        ls_ = isl_local_space_from_space(space);
    }
    ~SetBuilder() {
        isl_basic_set_free(bset_);
        isl_local_space_free(ls_);
    }
    SetBuilder(const SetBuilder &) = delete;
    SetBuilder &operator=(const SetBuilder &) = delete;

    // sum coef[k]·x_k + constant >= 0 (== 0 when equality).
    void add(const std::vector<Coord> &coef, Coord constant, bool equality = false) {
        std::vector<Term> terms;
        for (size_t k = 0; k < coef.size(); ++k) terms.push_back({isl_dim_set, static_cast<int>(k), coef[k]});
        bset_ = isl_basic_set_add_constraint(bset_, make_constraint(ctx_, ls_, equality, terms, constant));
    }
    // lo <= x_dim <= hi
    void bound(int rank, int dim, Coord lo, Coord hi) {
        std::vector<Coord> e(static_cast<size_t>(rank), 0);
        e[static_cast<size_t>(dim)] = 1;
        add(e, -lo);
        e[static_cast<size_t>(dim)] = -1;
        add(e, hi);
    }
    isl::Set finish() {
        isl_basic_set *b = std::exchange(bset_, nullptr);
        return isl::Set(must(ctx_, isl_set_from_basic_set(b), "building a set"));
    }

private:
    isl_ctx *ctx_;
    isl_basic_set *bset_;
    isl_local_space *ls_;
};

isl::Set empty_set(isl_ctx *ctx, int rank) {
    return isl::Set(must(ctx, isl_set_empty(isl_space_set_alloc(ctx, 0, static_cast<unsigned>(rank))), "empty set"));
}

isl::Set box_set(isl_ctx *ctx, const ZRange &r) {
    if (r.empty()) return empty_set(ctx, r.rank());
    SetBuilder b(ctx, r.rank());
    for (int d = 0; d < r.rank(); ++d) b.bound(r.rank(), d, r.start()[d], r.end()[d] - 1);
    return b.finish();
}

// The relation { i -> t : A·i + b <= t < A·i + b + window }: index point to every
// tensor element of its window. A window entry <= 0 makes the relation empty.
isl::Map projection_relation(isl_ctx *ctx, const IndexProjection &p) {
    const int in = p.index_rank(), out = p.tensor_rank();
    const ZMatrix &a = p.map().matrix();
    isl_space *space =
        must(ctx, isl_space_alloc(ctx, 0, static_cast<unsigned>(in), static_cast<unsigned>(out)), "map space");
    isl_basic_map *bmap = isl_basic_map_universe(isl_space_copy(space));
    isl_local_space *ls = isl_local_space_from_space(space);
    for (int r = 0; r < out; ++r) {
        // t_r - A_r·i - b_r >= 0
        std::vector<Term> lower{{isl_dim_out, r, 1}};
        // -t_r + A_r·i + b_r + w_r - 1 >= 0
        std::vector<Term> upper{{isl_dim_out, r, -1}};
        for (int c = 0; c < in; ++c) {
            lower.push_back({isl_dim_in, c, -a.at(r, c)});
            upper.push_back({isl_dim_in, c, a.at(r, c)});
        }
        const Coord b = p.map().offset()[r];
        bmap = isl_basic_map_add_constraint(bmap, make_constraint(ctx, ls, false, lower, -b));
        bmap = isl_basic_map_add_constraint(bmap, make_constraint(ctx, ls, false, upper, b + p.window()[r] - 1));
    }
    isl_local_space_free(ls);
    return isl::Map(must(ctx, isl_map_from_basic_map(bmap), "building a projection relation"));
}

// ---- reading ISL objects back ----------------------------------------------------

bool is_empty(isl_ctx *ctx, const isl::Set &s) {
    return must(ctx, isl_set_is_empty(s.get()), "isl_set_is_empty");
}

// Bounding box of a non-empty bounded set.
ZRange set_bounding_box(isl_ctx *ctx, const isl::Set &s, int rank) {
    ZPoint lo = ZPoint::zeros(rank), hi = ZPoint::zeros(rank);
    for (int d = 0; d < rank; ++d) {
        lo[d] = isl::to_coord(ctx, isl::Val(isl_set_dim_min_val(copy(s), d)), "lower bound of a set dimension");
        hi[d] = isl::to_coord(ctx, isl::Val(isl_set_dim_max_val(copy(s), d)), "upper bound of a set dimension");
    }
    return ZRange(lo, hi + ZPoint::filled(rank, 1));
}

std::vector<isl::BasicSet> basic_pieces(isl_ctx *ctx, const isl::Set &s) {
    std::vector<isl::BasicSet> out;
    auto collect = [](isl_basic_set *b, void *user) -> isl_stat {
        static_cast<std::vector<isl::BasicSet> *>(user)->emplace_back(b);
        return isl_stat_ok;
    };
    if (isl_set_foreach_basic_set(s.get(), collect, &out) != isl_stat_ok) isl::fail(ctx, "isl_set_foreach_basic_set");
    return out;
}

// A basic set without existential variables whose every constraint bounds a single
// coordinate (±x_d + c >= 0, or x_d = c) is exactly the box those bounds describe.
// Read that box without any ILP.
struct BoxForm {
    enum Kind { box, empty, other } kind;
    ZRange range;  // when kind == box
};
BoxForm read_simple_box(isl_ctx *ctx, const isl::BasicSet &b, int rank) {
    const isl_size divs = isl_basic_set_dim(b.get(), isl_dim_div);
    if (divs < 0) isl::fail(ctx, "isl_basic_set_dim");
    if (divs > 0) return {BoxForm::other, {}};
    struct Bounds {
        isl_ctx *ctx;
        int rank;
        std::vector<std::optional<Coord>> lo, hi;
        bool simple = true;
        bool empty = false;
    } bounds{ctx, rank, std::vector<std::optional<Coord>>(static_cast<size_t>(rank)),
             std::vector<std::optional<Coord>>(static_cast<size_t>(rank))};
    auto visit = [](isl_constraint *raw, void *user) -> isl_stat {
        auto &bd = *static_cast<Bounds *>(user);
        std::unique_ptr<isl_constraint, isl::Deleter<&isl_constraint_free>> c(raw);
        const bool equality = must(bd.ctx, isl_constraint_is_equality(c.get()), "isl_constraint_is_equality");
        const Coord constant =
            isl::to_coord(bd.ctx, isl::Val(isl_constraint_get_constant_val(c.get())), "constraint constant");
        int dim = -1;
        Coord coef = 0;
        for (int d = 0; d < bd.rank; ++d) {
            const Coord v = isl::to_coord(bd.ctx, isl::Val(isl_constraint_get_coefficient_val(c.get(), isl_dim_set, d)),
                                          "constraint coefficient");
            if (v == 0) continue;
            if (dim >= 0 || (v != 1 && v != -1)) {
                bd.simple = false;
                return isl_stat_error;  // stop visiting: not a box constraint
            }
            dim = d;
            coef = v;
        }
        if (dim < 0) {  // 0 >= -c or 0 = c
            if (equality ? constant != 0 : constant < 0) bd.empty = true;
            return isl_stat_ok;
        }
        auto &lo = bd.lo[static_cast<size_t>(dim)];
        auto &hi = bd.hi[static_cast<size_t>(dim)];
        // coef·x + constant (>= or ==) 0
        const Coord bound = coef == 1 ? -constant : constant;
        if (equality || coef == 1) lo = lo ? std::max(*lo, bound) : bound;
        if (equality || coef == -1) hi = hi ? std::min(*hi, bound) : bound;
        return isl_stat_ok;
    };
    if (isl_basic_set_foreach_constraint(b.get(), visit, &bounds) != isl_stat_ok && bounds.simple)
        isl::fail(ctx, "isl_basic_set_foreach_constraint");
    if (!bounds.simple) return {BoxForm::other, {}};
    if (bounds.empty) return {BoxForm::empty, {}};
    ZPoint start = ZPoint::zeros(rank), end = ZPoint::zeros(rank);
    for (int d = 0; d < rank; ++d) {
        const auto &lo = bounds.lo[static_cast<size_t>(d)];
        const auto &hi = bounds.hi[static_cast<size_t>(d)];
        if (!lo || !hi) return {BoxForm::other, {}};  // unbounded: not one of our sets, let the caller decide
        if (*lo > *hi) return {BoxForm::empty, {}};
        start[d] = *lo;
        end[d] = *hi + 1;
    }
    return {BoxForm::box, ZRange(start, end)};
}

ZPoint point_coords(isl_ctx *ctx, const isl::Point &pt, int rank) {
    ZPoint p = ZPoint::zeros(rank);
    for (int d = 0; d < rank; ++d)
        p[d] = isl::to_coord(ctx, isl::Val(isl_point_get_coordinate_val(pt.get(), isl_dim_set, d)), "point coordinate");
    return p;
}

std::optional<ZPoint> sample(isl_ctx *ctx, const isl::Set &s, int rank) {
    isl::Point pt(must(ctx, isl_set_sample_point(copy(s)), "isl_set_sample_point"));
    if (must(ctx, isl_point_is_void(pt.get()), "isl_point_is_void")) return std::nullopt;
    return point_coords(ctx, pt, rank);
}

// Splits a bounded basic set into boxes. A piece of box form is read directly; a
// piece whose bounding box lies inside it is that box. Otherwise (a polytope ISL
// simplified out of box form, or a lattice) slice it along its thinnest dimension
// and recurse; every slice fixes one more coordinate, so this ends, and
// `slice_budget` keeps lattice-like sets (evens, say) from being shattered into
// points: they give up and report "not boxes".
bool decompose(isl_ctx *ctx, const isl::BasicSet &piece, int rank, long &slice_budget, std::vector<ZRange> &out) {
    const BoxForm form = read_simple_box(ctx, piece, rank);
    if (form.kind == BoxForm::box) out.push_back(form.range);
    if (form.kind != BoxForm::other) return true;
    const isl::Set set(must(ctx, isl_set_from_basic_set(isl_basic_set_copy(piece.get())), "isl_set_from_basic_set"));
    if (is_empty(ctx, set)) return true;
    const ZRange bb = set_bounding_box(ctx, set, rank);
    const isl::Set bb_set = box_set(ctx, bb);
    if (must(ctx, isl_set_is_subset(bb_set.get(), set.get()), "isl_set_is_subset")) {
        out.push_back(bb);
        return true;
    }
    int dim = -1;
    for (int d = 0; d < rank; ++d)
        if (bb.extent(d) > 1 && (dim < 0 || bb.extent(d) < bb.extent(dim))) dim = d;
    TAPESTRY_CHECK(dim >= 0, "a non-empty set whose bounding box is a single point must contain it");
    if (bb.extent(dim) > slice_budget) return false;
    slice_budget -= bb.extent(dim);
    for (Coord v = bb.start()[dim]; v < bb.end()[dim]; ++v) {
        isl::Set slice(must(ctx,
                            isl_set_make_disjoint(isl_set_fix_val(copy(set), isl_dim_set, static_cast<unsigned>(dim),
                                                                  isl_val_int_from_si(ctx, v))),
                            "slicing a set"));
        for (const isl::BasicSet &p : basic_pieces(ctx, slice))
            if (!decompose(ctx, p, rank, slice_budget, out)) return false;
    }
    return true;
}

// Pairs (i < j) of boxes that share points, with their intersection, found by a
// sweep along the dimension with the most distinct starts, so that a grid of
// 1,000 boxes compares neighbours rather than all pairs. Empty boxes meet nothing.
// With `first_only`, stops at the first pair.
std::vector<PartitionReport::Overlap> find_overlaps(const std::vector<ZRange> &boxes, int rank, bool first_only) {
    std::vector<size_t> live;
    for (size_t i = 0; i < boxes.size(); ++i)
        if (!boxes[i].empty()) live.push_back(i);
    int sweep = -1;
    size_t best = 0;
    for (int d = 0; d < rank; ++d) {
        std::vector<Coord> starts;
        for (size_t i : live) starts.push_back(boxes[i].start()[d]);
        std::sort(starts.begin(), starts.end());
        const size_t distinct = static_cast<size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
        if (sweep < 0 || distinct > best) {
            sweep = d;
            best = distinct;
        }
    }
    if (sweep >= 0)
        std::stable_sort(live.begin(), live.end(),
                         [&](size_t a, size_t b) { return boxes[a].start()[sweep] < boxes[b].start()[sweep]; });
    std::vector<PartitionReport::Overlap> found;
    for (size_t x = 0; x < live.size(); ++x) {
        const ZRange &a = boxes[live[x]];
        for (size_t y = x + 1; y < live.size(); ++y) {
            const ZRange &b = boxes[live[y]];
            if (sweep >= 0 && b.start()[sweep] >= a.end()[sweep]) break;
            ZRange region = a.intersect(b);
            if (region.empty()) continue;
            found.push_back({std::min(live[x], live[y]), std::max(live[x], live[y]), region});
            if (first_only) return found;
        }
    }
    std::sort(found.begin(), found.end(),
              [](const auto &a, const auto &b) { return std::pair(a.first, a.second) < std::pair(b.first, b.second); });
    return found;
}

bool range_less(const ZRange &a, const ZRange &b) {
    if (a.start() != b.start()) return a.start() < b.start();
    return a.end() < b.end();
}

// Size of a box, or nullopt when it does not fit in 64 bits.
std::optional<Coord> checked_size(const ZRange &r) {
    Coord s = 1;
    for (int d = 0; d < r.rank(); ++d)
        if (__builtin_mul_overflow(s, r.extent(d), &s)) return std::nullopt;
    return s;
}

// Disjoint boxes whose union is `set`, sorted; nullopt when slicing non-box pieces
// would take more than `slice_budget` slices (0: no slicing at all).
std::optional<std::vector<ZRange>> disjoint_boxes(isl_ctx *ctx, const isl::Set &set, int rank, long slice_budget) {
    std::vector<ZRange> out;
    // Fast path: a union of disjoint boxes, as sets built from a partition are,
    // needs no isl_set_make_disjoint (quadratic in the number of pieces).
    bool all_boxes = true;
    for (const isl::BasicSet &piece : basic_pieces(ctx, set)) {
        const BoxForm form = read_simple_box(ctx, piece, rank);
        if (form.kind == BoxForm::other) {
            all_boxes = false;
            break;
        }
        if (form.kind == BoxForm::box) out.push_back(form.range);
    }
    if (!all_boxes || !find_overlaps(out, rank, /*first_only=*/true).empty()) {
        out.clear();
        isl::Set disjoint(must(ctx, isl_set_make_disjoint(copy(set)), "isl_set_make_disjoint"));
        for (const isl::BasicSet &piece : basic_pieces(ctx, disjoint))
            if (!decompose(ctx, piece, rank, slice_budget, out)) return std::nullopt;
    }
    std::sort(out.begin(), out.end(), range_less);
    return out;
}

}  // namespace

// ---- IndexSet ----------------------------------------------------------------------

namespace {

ZRange empty_box(int rank) {
    return ZRange(ZPoint::zeros(rank), ZPoint::zeros(rank));
}

// Whether the exact image of the box `index` through `p` is a box (then
// `p.image(index)` is it), and if not, which index dim to cut into slices so that
// the slices' images come closer to boxes. The image is a box when no index dim
// feeds two tensor dims and, along each tensor dim, the values Σ c·x + w (x over
// the box's extents, w over the window) leave no gap: taking the terms by
// increasing |c|, each |c| is at most the length covered so far (a head block
// h·64 + [0, 64) is contiguous; h·2 is not). Returns -1 for a box, the dim to
// slice otherwise, or -2 when boxes cannot describe it here (a window of 0,
// arithmetic past 64 bits): ISL answers then.
int image_gap_dim(const IndexProjection &p, const ZRange &index) {
    const ZMatrix &a = p.map().matrix();
    for (int c = 0; c < a.cols(); ++c) {
        int used = 0;
        for (int r = 0; r < a.rows(); ++r) used += a.at(r, c) != 0 && index.extent(c) > 1 ? 1 : 0;
        if (used > 1) return c;
    }
    struct Summand {
        Coord coef, extent;
        int col;
    };
    std::vector<Summand> terms;
    for (int r = 0; r < a.rows(); ++r) {
        terms.clear();
        for (int c = 0; c < a.cols(); ++c)
            if (a.at(r, c) != 0 && index.extent(c) > 1)
                terms.push_back({a.at(r, c) < 0 ? -a.at(r, c) : a.at(r, c), index.extent(c), c});
        std::sort(terms.begin(), terms.end(), [](const Summand &x, const Summand &y) { return x.coef < y.coef; });
        Coord covered = p.window()[r];
        if (covered <= 0) return -2;
        for (const Summand &t : terms) {
            if (t.coef > covered) return t.col;
            Coord step = 0;
            if (__builtin_mul_overflow(t.coef, t.extent - 1, &step) || __builtin_add_overflow(covered, step, &covered))
                return -2;
        }
    }
    return -1;
}

// The image of the box `index` through `p` as boxes, slicing the index box along
// the dims that leave gaps (a head split's heads, one box each) within
// `slice_budget` slices; false when the budget runs out or some piece is no box.
// The boxes may overlap (windows that overlap between slices); the caller checks.
bool image_boxes(const IndexProjection &p, const ZRange &index, long &slice_budget, std::vector<ZRange> &out) {
    if (index.empty()) return true;
    const int dim = image_gap_dim(p, index);
    if (dim == -1) {
        const ZRange img = p.image(index);
        if (!img.empty()) out.push_back(img);
        return true;
    }
    if (dim < 0 || index.extent(dim) > slice_budget) return false;
    slice_budget -= index.extent(dim);
    for (Coord v = index.start()[dim]; v < index.end()[dim]; ++v) {
        ZPoint start = index.start(), end = index.end();
        start[dim] = v;
        end[dim] = v + 1;
        if (!image_boxes(p, ZRange(start, end), slice_budget, out)) return false;
    }
    return true;
}

// The union of two boxes when it is a box: one holds the other, or they agree on
// every dim but one and meet or touch along it.
std::optional<ZRange> box_union(const ZRange &a, const ZRange &b) {
    if (b.empty() || a.contains(b)) return a;
    if (a.empty() || b.contains(a)) return b;
    int differ = -1;
    for (int d = 0; d < a.rank(); ++d)
        if (a.start()[d] != b.start()[d] || a.end()[d] != b.end()[d]) {
            if (differ >= 0) return std::nullopt;
            differ = d;
        }
    if (differ < 0) return a;
    if (a.end()[differ] < b.start()[differ] || b.end()[differ] < a.start()[differ]) return std::nullopt;
    ZPoint start = a.start(), end = a.end();
    start[differ] = std::min(a.start()[differ], b.start()[differ]);
    end[differ] = std::max(a.end()[differ], b.end()[differ]);
    return ZRange(start, end);
}

// The box form of `boxes` (any order, empties allowed) when they are disjoint;
// nullopt when two share points.
std::optional<std::vector<ZRange>> disjoint_form(std::vector<ZRange> boxes, int rank) {
    std::erase_if(boxes, [](const ZRange &r) { return r.empty(); });
    if (boxes.size() > 1 && !find_overlaps(boxes, rank, /*first_only=*/true).empty()) return std::nullopt;
    std::sort(boxes.begin(), boxes.end(), range_less);
    return boxes;
}

bool any_meet(const std::vector<ZRange> &a, const std::vector<ZRange> &b) {
    for (const ZRange &x : a)
        for (const ZRange &y : b)
            if (x.intersects(y)) return true;
    return false;
}

// a ⊆ b, exactly: `b`'s boxes are disjoint, so a box x of `a` lies inside their
// union when the sizes of its meetings with them add up to its own size.
bool each_inside(const std::vector<ZRange> &a, const std::vector<ZRange> &b) {
    return std::all_of(a.begin(), a.end(), [&](const ZRange &x) {
        Coord met = 0;
        for (const ZRange &y : b) met += x.intersect(y).size();
        return met == x.size();
    });
}

std::int64_t total_size(const std::vector<ZRange> &boxes) {
    Coord total = 0;
    for (const ZRange &b : boxes) {
        auto size = checked_size(b);
        TAPESTRY_CHECK(size && !__builtin_add_overflow(total, *size, &total),
                       "IndexSet::count: more points than fit in 64 bits");
    }
    return total;
}

// The ISL form of a set on `ctx`: a copy of its ISL set, or the union of its boxes
// as `of_ranges` builds it.
isl::Set isl_form(const SetForms &f, int rank, isl_ctx *ctx) {
    if (!f.boxes) return isl::Set(copy(f.set));
    isl::Set s = empty_set(ctx, rank);
    for (const ZRange &r : *f.boxes) s.reset(must(ctx, isl_set_union(s.release(), box_set(ctx, r).release()), "isl_set_union"));
    return s;
}

SetForms box_forms(std::vector<ZRange> boxes) {
    return SetForms{std::move(boxes), nullptr, isl::Set()};
}
SetForms box_forms(const ZRange &r) {
    return box_forms(r.empty() ? std::vector<ZRange>{} : std::vector<ZRange>{r});
}

SetForms isl_forms(std::shared_ptr<isl::Context> context, isl::Set set) {
    return SetForms{std::nullopt, std::move(context), std::move(set)};
}

// A set's Impl holding `f` (a template: IndexSet::Impl is private to the class).
template <class I>
std::unique_ptr<I> held(SetForms f) {
    return std::make_unique<I>(I{std::move(f)});
}

// The context and the ISL forms of one or two sets on it: an ISL-form operand's
// own context when there is one, else the thread's.
struct IslOperands {
    std::shared_ptr<isl::Context> context;
    isl::Set a, b;
    isl_ctx *ctx() const { return context->get(); }
};
IslOperands isl_operands(const SetForms &a, const SetForms *b, int rank) {
    IslOperands o;
    o.context = !a.boxes ? a.context : b && !b->boxes ? b->context : isl::thread_context();
    o.a = isl_form(a, rank, o.ctx());
    if (b) o.b = isl_form(*b, rank, o.ctx());
    return o;
}

}  // namespace

IndexSet::IndexSet(int rank) : rank_(rank) {
    TAPESTRY_CHECK(rank >= 0, "IndexSet: negative rank");
    impl_ = held<Impl>(box_forms(std::vector<ZRange>{}));
}

IndexSet::IndexSet(int rank, std::unique_ptr<Impl> impl) : rank_(rank), impl_(std::move(impl)) {}

IndexSet::IndexSet(const IndexSet &o)
    : rank_(o.rank_),
      impl_(held<Impl>(o.impl_->boxes ? box_forms(*o.impl_->boxes)
                                      : isl_forms(o.impl_->context, isl::Set(copy(o.impl_->set))))) {}
IndexSet::IndexSet(IndexSet &&) noexcept = default;
IndexSet &IndexSet::operator=(const IndexSet &o) {
    if (this != &o) *this = IndexSet(o);
    return *this;
}
IndexSet &IndexSet::operator=(IndexSet &&) noexcept = default;
IndexSet::~IndexSet() = default;

IndexSet IndexSet::of_range(const ZRange &r) {
    return IndexSet(r.rank(), held<Impl>(box_forms(r)));
}

IndexSet IndexSet::of_ranges(int rank, const std::vector<ZRange> &ranges) {
    for (const ZRange &r : ranges)
        TAPESTRY_CHECK(r.rank() == rank, "IndexSet::of_ranges: range rank differs from the set's");
    if (auto boxes = disjoint_form(ranges, rank)) return IndexSet(rank, held<Impl>(box_forms(std::move(*boxes))));
    auto context = isl::thread_context();
    isl::Set s = isl_form(box_forms(ranges), rank, context->get());
    return IndexSet(rank, held<Impl>(isl_forms(std::move(context), std::move(s))));
}

IndexSet IndexSet::image(const IndexProjection &p) const {
    TAPESTRY_CHECK(p.index_rank() == rank_, "IndexSet::image: projection's index rank differs from the set's");
    if (impl_->boxes) {
        std::vector<ZRange> out;
        long slice_budget = 4096;
        bool ok = true;
        for (const ZRange &b : *impl_->boxes)
            if (!(ok = image_boxes(p, b, slice_budget, out))) break;
        if (ok)
            if (auto boxes = disjoint_form(std::move(out), p.tensor_rank()))
                return IndexSet(p.tensor_rank(), held<Impl>(box_forms(std::move(*boxes))));
    }
    IslOperands o = isl_operands(*impl_, nullptr, rank_);
    isl::Map rel = projection_relation(o.ctx(), p);
    isl::Set img(must(o.ctx(), isl_set_apply(o.a.release(), rel.release()), "isl_set_apply"));
    return IndexSet(p.tensor_rank(), held<Impl>(isl_forms(o.context, std::move(img))));
}

bool IndexSet::empty() const {
    if (impl_->boxes) return impl_->boxes->empty();
    return is_empty(impl_->context->get(), impl_->set);
}

std::int64_t IndexSet::count() const {
    if (impl_->boxes) return total_size(*impl_->boxes);
    if (empty()) return 0;
    isl_ctx *ctx = impl_->context->get();
    // A union of boxes counts exactly and fast by box sizes; anything else (a
    // strided image, say) by ISL's own point counting, which is exact too and
    // fast on lattices, but slow on unions of many overlapping boxes.
    if (auto boxes = disjoint_boxes(ctx, impl_->set, rank_, /*slice_budget=*/0)) return total_size(*boxes);
    return isl::to_coord(ctx, isl::Val(isl_set_count_val(impl_->set.get())), "isl_set_count_val");
}

IndexSet IndexSet::unite(const IndexSet &o) const {
    TAPESTRY_CHECK(o.rank_ == rank_, "IndexSet::unite: rank mismatch");
    if (impl_->boxes && o.impl_->boxes) {
        const std::vector<ZRange> &a = *impl_->boxes, &b = *o.impl_->boxes;
        if (each_inside(b, a)) return *this;
        if (each_inside(a, b)) return o;
        if (a.size() == 1 && b.size() == 1)
            if (auto u = box_union(a[0], b[0])) return IndexSet(rank_, held<Impl>(box_forms(*u)));
        if (!any_meet(a, b)) {
            std::vector<ZRange> both = a;
            both.insert(both.end(), b.begin(), b.end());
            std::sort(both.begin(), both.end(), range_less);
            return IndexSet(rank_, held<Impl>(box_forms(std::move(both))));
        }
    }
    IslOperands ops = isl_operands(*impl_, o.impl_.get(), rank_);
    isl::Set s(must(ops.ctx(), isl_set_union(ops.a.release(), ops.b.release()), "isl_set_union"));
    return IndexSet(rank_, held<Impl>(isl_forms(ops.context, std::move(s))));
}

IndexSet IndexSet::intersect(const IndexSet &o) const {
    TAPESTRY_CHECK(o.rank_ == rank_, "IndexSet::intersect: rank mismatch");
    if (impl_->boxes && o.impl_->boxes) {
        // Pieces of disjoint boxes against disjoint boxes are disjoint.
        std::vector<ZRange> out;
        for (const ZRange &x : *impl_->boxes)
            for (const ZRange &y : *o.impl_->boxes)
                if (ZRange m = x.intersect(y); !m.empty()) out.push_back(m);
        std::sort(out.begin(), out.end(), range_less);
        return IndexSet(rank_, held<Impl>(box_forms(std::move(out))));
    }
    IslOperands ops = isl_operands(*impl_, o.impl_.get(), rank_);
    isl::Set s(must(ops.ctx(), isl_set_intersect(ops.a.release(), ops.b.release()), "isl_set_intersect"));
    return IndexSet(rank_, held<Impl>(isl_forms(ops.context, std::move(s))));
}

IndexSet IndexSet::subtract(const IndexSet &o) const {
    TAPESTRY_CHECK(o.rank_ == rank_, "IndexSet::subtract: rank mismatch");
    if (impl_->boxes && o.impl_->boxes) {
        if (!any_meet(*impl_->boxes, *o.impl_->boxes)) return *this;
        if (each_inside(*impl_->boxes, *o.impl_->boxes)) return IndexSet(rank_);
    }
    IslOperands ops = isl_operands(*impl_, o.impl_.get(), rank_);
    isl::Set s(must(ops.ctx(), isl_set_subtract(ops.a.release(), ops.b.release()), "isl_set_subtract"));
    return IndexSet(rank_, held<Impl>(isl_forms(ops.context, std::move(s))));
}

bool IndexSet::is_subset_of(const IndexSet &o) const {
    TAPESTRY_CHECK(o.rank_ == rank_, "IndexSet::is_subset_of: rank mismatch");
    if (impl_->boxes && impl_->boxes->empty()) return true;
    if (impl_->boxes && o.impl_->boxes) return each_inside(*impl_->boxes, *o.impl_->boxes);
    IslOperands ops = isl_operands(*impl_, o.impl_.get(), rank_);
    return must(ops.ctx(), isl_set_is_subset(ops.a.get(), ops.b.get()), "isl_set_is_subset");
}

bool IndexSet::equals(const IndexSet &o) const {
    TAPESTRY_CHECK(o.rank_ == rank_, "IndexSet::equals: rank mismatch");
    if (impl_->boxes && o.impl_->boxes) {
        if (*impl_->boxes == *o.impl_->boxes) return true;
        // As many points and one inside the other.
        return total_size(*impl_->boxes) == total_size(*o.impl_->boxes) && each_inside(*impl_->boxes, *o.impl_->boxes);
    }
    IslOperands ops = isl_operands(*impl_, o.impl_.get(), rank_);
    return must(ops.ctx(), isl_set_is_equal(ops.a.get(), ops.b.get()), "isl_set_is_equal");
}

ZRange IndexSet::bounding_box() const {
    if (impl_->boxes) {
        if (impl_->boxes->empty()) return empty_box(rank_);
        ZRange hull = impl_->boxes->front();
        for (const ZRange &b : *impl_->boxes) hull = hull.bounding(b);
        return hull;
    }
    if (empty()) return empty_box(rank_);
    return set_bounding_box(impl_->context->get(), impl_->set, rank_);
}

std::optional<ZPoint> IndexSet::sample_point() const {
    IslOperands ops = isl_operands(*impl_, nullptr, rank_);
    return sample(ops.ctx(), ops.a, rank_);
}

std::optional<std::vector<ZRange>> IndexSet::as_boxes() const {
    if (impl_->boxes) return *impl_->boxes;
    return disjoint_boxes(impl_->context->get(), impl_->set, rank_, /*slice_budget=*/4096);
}

std::string IndexSet::to_string() const {
    IslOperands ops = isl_operands(*impl_, nullptr, rank_);
    isl_ctx *ctx = ops.ctx();
    // Coalesced for the reader: two touching boxes print as one.
    isl::Set readable(must(ctx, isl_set_coalesce(ops.a.release()), "isl_set_coalesce"));
    char *text = must(ctx, isl_set_to_str(readable.get()), "isl_set_to_str");
    std::string s(text);
    std::free(text);
    return s;
}

// ---- partitions ---------------------------------------------------------------------

namespace {

// The boxes of `region` that no box of `parts` (all meeting `region`) covers, by
// k-d splitting: a region no part meets is a gap, a region some part contains is
// covered; otherwise some part has a face strictly inside the region, so cut
// there (at the median of such faces along the dimension that has the most) and
// recurse on both halves with the parts that meet each. Box-exact, and fast on the
// grids with a few holes that validation meets; ISL agrees in the tests
// (test_isl_agreement), where a plain ISL subtraction of 1,000 boxes takes seconds.
void uncovered_boxes(const ZRange &region, const std::vector<const ZRange *> &parts, std::vector<ZRange> &out) {
    if (parts.empty()) {
        out.push_back(region);
        return;
    }
    for (const ZRange *p : parts)
        if (p->contains(region)) return;
    int cut_dim = -1;
    std::vector<Coord> cuts;
    for (int d = 0; d < region.rank(); ++d) {
        std::vector<Coord> inside;
        for (const ZRange *p : parts)
            for (Coord c : {p->start()[d], p->end()[d]})
                if (c > region.start()[d] && c < region.end()[d]) inside.push_back(c);
        if (inside.size() > cuts.size()) {
            cut_dim = d;
            cuts = std::move(inside);
        }
    }
    TAPESTRY_CHECK(cut_dim >= 0, "a part meeting a region it does not contain has a face inside it");
    std::nth_element(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(cuts.size() / 2), cuts.end());
    const Coord cut = cuts[cuts.size() / 2];
    for (const ZRange &half : region.split_at(cut_dim, {cut})) {
        std::vector<const ZRange *> meeting;
        for (const ZRange *p : parts)
            if (p->intersects(half)) meeting.push_back(p);
        uncovered_boxes(half, meeting, out);
    }
}

// Joins boxes that share a whole face (equal in every dimension but one, and
// touching in that one) until none do, so that a gap reads as one box rather than
// the fragments the splitting left.
void merge_adjacent_boxes(std::vector<ZRange> &boxes) {
    if (boxes.empty()) return;
    const int rank = boxes.front().rank();
    bool merged = true;
    while (merged) {
        merged = false;
        for (int d = 0; d < rank; ++d) {
            // Order by every other dimension first, then along d: face-sharing
            // neighbours along d become consecutive.
            std::sort(boxes.begin(), boxes.end(), [d, rank](const ZRange &a, const ZRange &b) {
                for (int k = 0; k < rank; ++k) {
                    if (k == d) continue;
                    if (a.start()[k] != b.start()[k]) return a.start()[k] < b.start()[k];
                    if (a.end()[k] != b.end()[k]) return a.end()[k] < b.end()[k];
                }
                return a.start()[d] < b.start()[d];
            });
            std::vector<ZRange> joined;
            for (const ZRange &b : boxes) {
                if (!joined.empty()) {
                    ZRange &last = joined.back();
                    bool same_face = last.end()[d] == b.start()[d];
                    for (int k = 0; k < rank && same_face; ++k)
                        if (k != d) same_face = last.start()[k] == b.start()[k] && last.end()[k] == b.end()[k];
                    if (same_face) {
                        ZPoint e = last.end();
                        e[d] = b.end()[d];
                        last = ZRange(last.start(), e);
                        merged = true;
                        continue;
                    }
                }
                joined.push_back(b);
            }
            boxes = std::move(joined);
        }
    }
}

}  // namespace

PartitionReport check_partition(const std::vector<ZRange> &parts, const ZRange &whole) {
    const int rank = whole.rank();
    PartitionReport report;
    std::vector<size_t> live;  // non-empty parts
    for (size_t i = 0; i < parts.size(); ++i) {
        TAPESTRY_CHECK(parts[i].rank() == rank, "check_partition: part rank differs from the whole's");
        if (!whole.contains(parts[i])) report.outside.push_back(i);
        if (!parts[i].empty()) live.push_back(i);
    }
    // Parts are boxes, so box intersection decides overlaps exactly.
    report.overlaps = find_overlaps(parts, rank, /*first_only=*/false);

    // Gaps. Disjoint parts inside the whole cover it exactly when their sizes add
    // up to its size; only otherwise look for the uncovered boxes.
    if (report.outside.empty() && report.overlaps.empty()) {
        std::optional<Coord> total = 0;
        for (size_t i : live) {
            auto size = checked_size(parts[i]);
            if (!size || __builtin_add_overflow(*total, *size, &*total)) {
                total.reset();
                break;
            }
        }
        if (total && total == checked_size(whole)) return report;
    }
    if (whole.empty()) return report;
    std::vector<const ZRange *> meeting;
    for (size_t i : live)
        if (parts[i].intersects(whole)) meeting.push_back(&parts[i]);
    uncovered_boxes(whole, meeting, report.gaps);
    merge_adjacent_boxes(report.gaps);
    std::sort(report.gaps.begin(), report.gaps.end(), range_less);
    return report;
}

// ---- injectivity --------------------------------------------------------------------

namespace {

// Whether the columns of `a` picked by `cols`, restricted to the rows picked by
// `rows`, are linearly independent. Decided modulo a large prime: a non-zero
// maximal minor mod p is non-zero over the integers, so "true" is exact; "false"
// may be a false negative, which only sends the caller to the exact ISL check.
bool full_column_rank_mod_p(const ZMatrix &a, const std::vector<int> &rows, const std::vector<int> &cols) {
    constexpr std::int64_t p = 2147483647;  // 2^31 - 1: products of residues fit in 64 bits
    const size_t n = cols.size();
    if (rows.size() < n) return false;
    std::vector<std::vector<std::int64_t>> m;
    for (int r : rows) {
        std::vector<std::int64_t> row;
        for (int c : cols) row.push_back(((a.at(r, c) % p) + p) % p);
        m.push_back(std::move(row));
    }
    auto inverse = [&](std::int64_t x) {  // Fermat: x^(p-2)
        std::int64_t result = 1, base = x, e = p - 2;
        while (e) {
            if (e & 1) result = result * base % p;
            base = base * base % p;
            e >>= 1;
        }
        return result;
    };
    size_t rank = 0;
    for (size_t c = 0; c < n; ++c) {
        size_t pivot = rank;
        while (pivot < m.size() && m[pivot][c] == 0) ++pivot;
        if (pivot == m.size()) return false;
        std::swap(m[pivot], m[rank]);
        const std::int64_t inv = inverse(m[rank][c]);
        for (size_t r = rank + 1; r < m.size(); ++r) {
            const std::int64_t f = m[r][c] * inv % p;
            for (size_t k = c; k < n; ++k) m[r][k] = ((m[r][k] - f * m[rank][k]) % p + p) % p;
        }
        ++rank;
    }
    return true;
}

}  // namespace

InjectivityReport check_injective(const IndexProjection &p, const ZRange &domain) {
    TAPESTRY_CHECK(p.index_rank() == domain.rank(), "check_injective: domain rank differs from the projection's");
    InjectivityReport report;
    const int in = p.index_rank(), out = p.tensor_rank();
    // Nothing is touched twice when at most one point touches anything.
    if (domain.size() <= 1) return report;
    for (int r = 0; r < out; ++r)
        if (p.window()[r] <= 0) return report;

    // Two points i, j of the box touch a common element exactly when their
    // difference d = i - j satisfies |A_r·d| < window_r for every row. The
    // differences of a box form the box D = [-(extent-1), extent-1], and every
    // d in D is the difference of two points of the domain, so: not injective
    // iff D holds a non-zero such d. Dimensions of extent 1 force d_k = 0.
    const ZMatrix &a = p.map().matrix();
    std::vector<int> free_cols, unit_rows;
    for (int c = 0; c < in; ++c)
        if (domain.extent(c) > 1) free_cols.push_back(c);
    for (int r = 0; r < out; ++r)
        if (p.window()[r] == 1) unit_rows.push_back(r);
    // Fast path: the unit-window rows alone force A·d = 0 ⇒ d = 0.
    if (full_column_rank_mod_p(a, unit_rows, free_cols)) return report;

    auto context = isl::thread_context();
    isl_ctx *ctx = context->get();
    SetBuilder diffs(ctx, in);
    for (int c = 0; c < in; ++c) diffs.bound(in, c, -(domain.extent(c) - 1), domain.extent(c) - 1);
    for (int r = 0; r < out; ++r) {
        std::vector<Coord> row = a.row(r), neg(row.size());
        std::transform(row.begin(), row.end(), neg.begin(), [](Coord v) { return -v; });
        diffs.add(row, p.window()[r] - 1);  // A_r·d >= -(w_r - 1)
        diffs.add(neg, p.window()[r] - 1);  // A_r·d <= w_r - 1
    }
    isl::Set differences = diffs.finish();
    // d is non-zero iff d or -d is lexicographically positive, and the set is
    // symmetric: look for a lexicographically positive d only.
    isl::Set positive = empty_set(ctx, in);
    for (int k = 0; k < in; ++k) {
        SetBuilder piece(ctx, in);
        std::vector<Coord> e(static_cast<size_t>(in), 0);
        for (int m = 0; m < k; ++m) {
            e[static_cast<size_t>(m)] = 1;
            piece.add(e, 0, /*equality=*/true);
            e[static_cast<size_t>(m)] = 0;
        }
        e[static_cast<size_t>(k)] = 1;
        piece.add(e, -1);  // d_k >= 1
        positive.reset(must(ctx, isl_set_union(positive.release(), piece.finish().release()), "isl_set_union"));
    }
    isl::Set witnesses(must(ctx, isl_set_intersect(differences.release(), positive.release()), "isl_set_intersect"));
    std::optional<ZPoint> d = sample(ctx, witnesses, in);
    if (!d) return report;

    ZPoint first = domain.start(), second = domain.start();
    for (int c = 0; c < in; ++c) {
        if ((*d)[c] >= 0)
            second[c] += (*d)[c];
        else
            first[c] -= (*d)[c];
    }
    report.injective = false;
    report.witness = std::pair(first, second);
    return report;
}

bool isl_is_injective(const IndexProjection &p, const ZRange &domain) {
    TAPESTRY_CHECK(p.index_rank() == domain.rank(), "isl_is_injective: domain rank differs from the projection's");
    auto context = isl::thread_context();
    isl_ctx *ctx = context->get();
    isl::Map rel = projection_relation(ctx, p);
    isl::Map on_domain(
        must(ctx, isl_map_intersect_domain(rel.release(), box_set(ctx, domain).release()), "isl_map_intersect_domain"));
    return must(ctx, isl_map_is_injective(on_domain.get()), "isl_map_is_injective");
}

ZRange isl_image_bounding_box(const IndexProjection &p, const ZRange &domain) {
    TAPESTRY_CHECK(p.index_rank() == domain.rank(),
                   "isl_image_bounding_box: domain rank differs from the projection's");
    IndexSet img = IndexSet::of_range(domain).image(p);
    if (img.empty()) {
        const ZPoint at = p.map().apply(domain.start());
        return ZRange(at, at);
    }
    return img.bounding_box();
}

}  // namespace tapestry
