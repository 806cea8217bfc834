// Unit tests of the index algebra: ZPoint, ZRange, AffineMap, IndexProjection
// (engine/index/zspace.cpp) and the exact ISL layer (engine/index/index_set.cpp).
#include <QtTest/QtTest>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "index/index_set.h"

using namespace tapestry;

using Ranges = std::vector<ZRange>;
using Rows = std::vector<std::vector<Coord>>;
using IndexPair = std::pair<size_t, size_t>;
using Pairs = std::vector<IndexPair>;
using Indices = std::vector<size_t>;

Q_DECLARE_METATYPE(tapestry::ZPoint)
Q_DECLARE_METATYPE(tapestry::ZRange)
Q_DECLARE_METATYPE(tapestry::IndexProjection)
Q_DECLARE_METATYPE(Ranges)
Q_DECLARE_METATYPE(Pairs)
Q_DECLARE_METATYPE(Indices)

namespace tapestry {
// Readable QCOMPARE failures.
char *toString(const ZPoint &p) {
    return qstrdup(p.to_string().c_str());
}
char *toString(const ZRange &r) {
    return qstrdup(r.to_string().c_str());
}
}  // namespace tapestry

namespace {

ZRange R(std::initializer_list<Coord> start, std::initializer_list<Coord> end) {
    return ZRange(ZPoint(start), ZPoint(end));
}

IndexProjection P(const Rows &a, int cols, std::vector<Coord> b, std::vector<Coord> window) {
    return IndexProjection(AffineMap(ZMatrix::from_rows(a, cols), ZPoint(std::move(b))), ZPoint(std::move(window)));
}

std::string join(const Ranges &rs) {
    std::string s;
    for (const ZRange &r : rs) s += (s.empty() ? "" : " ") + r.to_string();
    return s;
}

// A witness is real when both points lie in the domain, differ, and touch a
// common tensor element.
bool witness_is_real(const IndexProjection &p, const ZRange &domain, const std::pair<ZPoint, ZPoint> &w) {
    return domain.contains(w.first) && domain.contains(w.second) && w.first != w.second &&
           p.apply(w.first).intersects(p.apply(w.second));
}

}  // namespace

class TestIndex : public QObject {
    Q_OBJECT

private slots:
    // ---- ZPoint ----
    void zpoint_arithmetic();
    void zpoint_inline_and_heap_storage();

    // ---- ZRange ----
    void range_size_data();
    void range_size();
    void range_half_open_containment();
    void range_intersect_and_bounding();
    void range_split_data();
    void range_split();
    void range_split_at_and_grid();
    void range_points_and_linear_index();
    void range_to_string();

    // ---- AffineMap / IndexProjection ----
    void affine_apply();
    void projection_to_string();
    void projection_image_data();
    void projection_image();
    void linear_example_shard_selections();
    void mixed_sign_row_regression();

    // ---- IndexSet ----
    void set_operations();
    void set_box_form_agrees_with_isl();
    void set_zero_rank();
    void set_as_boxes_disjoint();
    void set_strided_image();
    void set_mixed_sign_image();
    void set_large_coordinates();
    void set_to_string();
    void set_bounding_box_and_sample_of_empty();
    void set_per_thread_contexts();

    // ---- partitions ----
    void partition_data();
    void partition();
    void partition_cancelling_gap_and_overlap();
    void partition_of_a_thousand_parts();

    // ---- injectivity ----
    void injective_data();
    void injective();
};

// ---- ZPoint ---------------------------------------------------------------------------

void TestIndex::zpoint_arithmetic() {
    const ZPoint a{1, -2, 3}, b{4, 5, -6};
    QCOMPARE(a + b, (ZPoint{5, 3, -3}));
    QCOMPARE(a - b, (ZPoint{-3, -7, 9}));
    QCOMPARE(a.product(), Coord{-6});
    QCOMPARE(ZPoint{}.product(), Coord{1});
    QCOMPARE(ZPoint::zeros(2), (ZPoint{0, 0}));
    QCOMPARE(ZPoint::filled(3, 7), (ZPoint{7, 7, 7}));
    QVERIFY((ZPoint{1, 2}).all_less_equal(ZPoint{1, 3}));
    QVERIFY(!(ZPoint{1, 2}).all_less(ZPoint{1, 3}));
    QVERIFY((ZPoint{0, 2}).all_less(ZPoint{1, 3}));
    QCOMPARE(a.to_string(), std::string("[1, -2, 3]"));
    QCOMPARE(ZPoint{}.to_string(), std::string("[]"));
}

// Points keep up to seven coordinates inline and larger ones on the heap; copies,
// moves, assignment across the two and ordering behave as for a vector.
void TestIndex::zpoint_inline_and_heap_storage() {
    std::vector<Coord> big(32);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<Coord>(i) - 5;
    const ZPoint heap(big), small{1, 2, 3, 4, 5, 6, 7};
    QCOMPARE(heap.rank(), 32);
    QCOMPARE(heap.to_vector(), big);
    QCOMPARE(small.to_vector(), (std::vector<Coord>{1, 2, 3, 4, 5, 6, 7}));
    ZPoint a = heap;          // heap copy
    QCOMPARE(a, heap);
    a[31] = 99;
    QCOMPARE(heap[31], Coord{26});  // the copy owns its coordinates
    ZPoint b = std::move(a);  // heap move
    QCOMPARE(b[31], Coord{99});
    QCOMPARE(a.rank(), 0);
    b = small;                // heap → inline
    QCOMPARE(b, small);
    b = heap;                 // inline → heap
    QCOMPARE(b, heap);
    b = ZPoint{4};            // move-assign inline over heap
    QCOMPARE(b, (ZPoint{4}));
    QCOMPARE(ZPoint::filled(9, 2).product(), Coord{512});
    QCOMPARE(ZPoint::zeros(8), ZPoint(std::vector<Coord>(8, 0)));
    // Lexicographic order, a prefix before its extensions (as std::vector).
    QVERIFY((ZPoint{1, 2}) < (ZPoint{1, 3}));
    QVERIFY((ZPoint{1, 2}) < (ZPoint{1, 2, 0}));
    QVERIFY(!((ZPoint{2}) < (ZPoint{1, 9})));
    QVERIFY(small < ZPoint(std::vector<Coord>{1, 2, 3, 4, 5, 6, 7, 0}));
    const std::span<const Coord> c = small.coords();
    QCOMPARE(std::vector<Coord>(c.begin(), c.end()), small.to_vector());
}

// ---- ZRange ---------------------------------------------------------------------------

void TestIndex::range_size_data() {
    QTest::addColumn<ZRange>("range");
    QTest::addColumn<qint64>("size");
    QTest::addColumn<bool>("empty");
    QTest::newRow("shape 10x5") << ZRange::of_shape({10, 5}) << qint64(50) << false;
    QTest::newRow("negative origin") << R({-40, 20}, {60, 32}) << qint64(1200) << false;
    QTest::newRow("empty along one dim") << R({3, 0}, {3, 9}) << qint64(0) << true;
    QTest::newRow("end below start clamps to empty") << R({5}, {2}) << qint64(0) << true;
    QTest::newRow("0-dim range has one point") << ZRange() << qint64(1) << false;
    QTest::newRow("from start and shape")
        << ZRange::from_start_shape(ZPoint{-3, 2}, ZPoint{4, 2}) << qint64(8) << false;
}

void TestIndex::range_size() {
    QFETCH(ZRange, range);
    QFETCH(qint64, size);
    QFETCH(bool, empty);
    QCOMPARE(qint64(range.size()), size);
    QCOMPARE(range.empty(), empty);
    QCOMPARE(qint64(IndexSet::of_range(range).count()), size);
}

void TestIndex::range_half_open_containment() {
    const ZRange r = R({-2, 0}, {2, 3});
    QVERIFY(r.contains(ZPoint{-2, 0}));
    QVERIFY(r.contains(ZPoint{1, 2}));
    QVERIFY(!r.contains(ZPoint{2, 2}));   // end is exclusive
    QVERIFY(!r.contains(ZPoint{-3, 0}));  // before start
    QVERIFY(r.contains(R({-1, 1}, {2, 3})));
    QVERIFY(!r.contains(R({-1, 1}, {3, 3})));
    QVERIFY(r.contains(R({100, 100}, {100, 200})));  // an empty range lies anywhere
    QVERIFY(ZRange().contains(ZRange()));
    QVERIFY(ZRange().contains(ZPoint{}));
    QCOMPARE(R({5}, {2}).end(), ZPoint{5});  // clamped to its start
}

void TestIndex::range_intersect_and_bounding() {
    const ZRange a = R({0, 0}, {4, 4}), b = R({2, -1}, {6, 3});
    QCOMPARE(a.intersect(b), R({2, 0}, {4, 3}));
    QVERIFY(a.intersects(b));
    QVERIFY(a.intersect(R({4, 0}, {5, 4})).empty());  // touching is not meeting
    QVERIFY(!a.intersects(R({4, 0}, {5, 4})));
    QCOMPARE(a.bounding(b), R({0, -1}, {6, 4}));
    QCOMPARE(a.bounding(R({9, 9}, {9, 9})), a);  // an empty operand adds nothing
    QCOMPARE(R({9, 9}, {9, 9}).bounding(b), b);
    QCOMPARE(a.translated(ZPoint{-1, 10}), R({-1, 10}, {3, 14}));
    QVERIFY(!ZRange().intersect(ZRange()).empty());  // the single 0-dim point meets itself
}

void TestIndex::range_split_data() {
    QTest::addColumn<ZRange>("range");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("parts");
    QTest::addColumn<Ranges>("expected");
    QTest::newRow("10 in 3 is 4,3,3") << ZRange::of_shape({10}) << 0 << 3
                                      << Ranges{R({0}, {4}), R({4}, {7}), R({7}, {10})};
    QTest::newRow("negative origin, 10 in 4")
        << R({-5}, {5}) << 0 << 4 << Ranges{R({-5}, {-2}), R({-2}, {1}), R({1}, {3}), R({3}, {5})};
    QTest::newRow("second dim of 2-d") << R({0, 20}, {2, 32}) << 1 << 2
                                       << Ranges{R({0, 20}, {2, 26}), R({0, 26}, {2, 32})};
    QTest::newRow("more parts than points")
        << ZRange::of_shape({2}) << 0 << 3 << Ranges{R({0}, {1}), R({1}, {2}), R({2}, {2})};
    QTest::newRow("one part is the range") << R({-3, 1}, {4, 2}) << 0 << 1 << Ranges{R({-3, 1}, {4, 2})};
}

void TestIndex::range_split() {
    QFETCH(ZRange, range);
    QFETCH(int, dim);
    QFETCH(int, parts);
    QFETCH(Ranges, expected);
    const Ranges got = range.split(dim, parts);
    QCOMPARE(join(got), join(expected));
    QVERIFY(check_partition(got, range).is_partition());
}

void TestIndex::range_split_at_and_grid() {
    const ZRange r = R({-4, 0}, {6, 7});
    const Ranges cuts = r.split_at(0, {-1, 0, 6});
    QCOMPARE(join(cuts), std::string("[-4:-1, 0:7] [-1:0, 0:7] [0:6, 0:7] [6:6, 0:7]"));
    QVERIFY(check_partition(cuts, r).is_partition());

    const Ranges cells = r.grid({2, 3});
    QCOMPARE(cells.size(), size_t(6));
    QCOMPARE(cells.front(), R({-4, 0}, {1, 3}));
    QCOMPARE(cells.back(), R({1, 5}, {6, 7}));
    QVERIFY(check_partition(cells, r).is_partition());
    QCOMPARE(ZRange().grid({}).size(), size_t(1));
}

void TestIndex::range_points_and_linear_index() {
    const ZRange r = R({-1, 5}, {1, 8});
    std::vector<ZPoint> seen;
    r.for_each_point([&](const ZPoint &p) { seen.push_back(p); });
    QCOMPARE(seen.size(), size_t(6));
    QCOMPARE(seen[0], (ZPoint{-1, 5}));
    QCOMPARE(seen[1], (ZPoint{-1, 6}));  // last dim fastest
    QCOMPARE(seen[3], (ZPoint{0, 5}));
    for (size_t k = 0; k < seen.size(); ++k) QCOMPARE(r.linear_index(seen[k]), Coord(k));

    int calls = 0;
    ZRange().for_each_point([&](const ZPoint &p) { calls += p.rank() == 0 ? 1 : 100; });
    QCOMPARE(calls, 1);
    R({0, 3}, {4, 3}).for_each_point([&](const ZPoint &) { ++calls; });
    QCOMPARE(calls, 1);
    QCOMPARE(ZRange().linear_index(ZPoint{}), Coord{0});
}

void TestIndex::range_to_string() {
    QCOMPARE(ZRange::of_shape({10, 5}).to_string(), std::string("[0:10, 0:5]"));
    QCOMPARE(R({-40, 20}, {60, 32}).to_string(), std::string("[-40:60, 20:32]"));
    QCOMPARE(R({3}, {1}).to_string(), std::string("[3:3]"));
    QCOMPARE(ZRange().to_string(), std::string("[]"));
}

// ---- AffineMap / IndexProjection ----------------------------------------------------------

void TestIndex::affine_apply() {
    const AffineMap m(ZMatrix{{1, 0, 2}, {0, -1, 0}}, ZPoint{10, 20});
    QCOMPARE(m.in_rank(), 3);
    QCOMPARE(m.out_rank(), 2);
    QCOMPARE(m.apply(ZPoint{1, 2, 3}), (ZPoint{17, 18}));
    QCOMPARE(m.translated(ZPoint{-10, 0}).apply(ZPoint{0, 0, 0}), (ZPoint{0, 20}));
    QCOMPARE(AffineMap::identity(2).apply(ZPoint{-4, 9}), (ZPoint{-4, 9}));
    QCOMPARE(m.matrix().row(0), (std::vector<Coord>{1, 0, 2}));
    QCOMPARE(ZMatrix::identity(2), (ZMatrix{{1, 0}, {0, 1}}));
}

void TestIndex::projection_to_string() {
    QCOMPARE(P({{1, 0}, {0, 0}}, 2, {0, 0}, {1, 32}).to_string(), std::string("[1 0 | 0 | 1; 0 0 | 0 | 32]"));
    QCOMPARE(P({{0, 1}}, 2, {-3}, {1}).to_string(), std::string("[0 1 | -3 | 1]"));
    QCOMPARE(IndexProjection::identity(1).to_string(), std::string("[1 | 0 | 1]"));
    QCOMPARE(P({{}}, 0, {5}, {3}).to_string(), std::string("[| 5 | 3]"));
    QCOMPARE(IndexProjection::identity(0).to_string(), std::string("[]"));
}

void TestIndex::projection_image_data() {
    QTest::addColumn<IndexProjection>("projection");
    QTest::addColumn<ZRange>("index");
    QTest::addColumn<ZRange>("expected");
    QTest::newRow("identity") << IndexProjection::identity(2) << R({1, 2}, {3, 5}) << R({1, 2}, {3, 5});
    QTest::newRow("mixed-sign row [1,-1]") << P({{1, -1}}, 2, {0}, {1}) << R({0, 0}, {2, 2}) << R({-1}, {2});
    QTest::newRow("negative coefficient") << P({{-1}}, 1, {3}, {1}) << R({0}, {4}) << R({0}, {4});
    QTest::newRow("stride 2") << P({{2}}, 1, {0}, {1}) << R({0}, {5}) << R({0}, {9});
    QTest::newRow("window on a zero row")
        << P({{1, 0}, {0, 0}}, 2, {-40, 20}, {1, 12}) << R({50, 16}, {100, 32}) << R({10, 20}, {60, 32});
    QTest::newRow("conv: o + k") << P({{1, 1}}, 2, {-1}, {1}) << R({0, 0}, {8, 3}) << R({-1}, {9});
    QTest::newRow("0-dim index space") << P({{}}, 0, {5}, {3}) << ZRange() << R({5}, {8});
    QTest::newRow("0-dim tensor") << IndexProjection(AffineMap(ZMatrix(0, 2), ZPoint{}), ZPoint{}) << R({0, 0}, {3, 3})
                                  << ZRange();
    QTest::newRow("empty index range is empty at A·start+b")
        << P({{2, 0}, {0, 1}}, 2, {1, 1}, {1, 4}) << R({3, 0}, {3, 5}) << R({7, 1}, {7, 1});
    QTest::newRow("window 0 is empty") << P({{1, 0}, {0, 1}}, 2, {0, 0}, {0, 2}) << R({0, 0}, {4, 4})
                                       << R({0, 0}, {0, 5});
}

void TestIndex::projection_image() {
    QFETCH(IndexProjection, projection);
    QFETCH(ZRange, index);
    QFETCH(ZRange, expected);
    const ZRange got = projection.image(index);
    QCOMPARE(got, expected);
    // The box fast path is the bounding box of ISL's exact image.
    const IndexSet exact = IndexSet::of_range(index).image(projection);
    QCOMPARE(exact.empty(), got.empty());
    if (!got.empty()) {
        QCOMPARE(isl_image_bounding_box(projection, index), got);
        QVERIFY(exact.is_subset_of(IndexSet::of_range(got)));
    }
}

// BACKGROUND §2, `linear`: x lives at [-40:60, 20:32] (batch 100, features 12);
// the index space is [b, o] = [0:100, 0:32]. Shard [50:100, 16:32] reads the
// second half of x's rows and all its features, W's columns 16:32, bias 16:32.
void TestIndex::linear_example_shard_selections() {
    const ZRange index = ZRange::of_shape({100, 32});
    const ZRange x_range = R({-40, 20}, {60, 32});
    const IndexProjection p_x = P({{1, 0}, {0, 0}}, 2, {-40, 20}, {1, 12});
    const IndexProjection p_w = P({{0, 0}, {0, 1}}, 2, {0, 0}, {12, 1});
    const IndexProjection p_bias = P({{0, 1}}, 2, {0}, {1});
    const IndexProjection p_y = IndexProjection::identity(2);

    QCOMPARE(p_x.image(index), x_range);  // the whole op reads exactly the tensor
    const ZRange shard = R({50, 16}, {100, 32});
    QCOMPARE(p_x.image(shard), R({10, 20}, {60, 32}));
    QCOMPARE(p_w.image(shard), R({0, 16}, {12, 32}));
    QCOMPARE(p_bias.image(shard), R({16}, {32}));
    QCOMPARE(p_y.image(shard), shard);
    QCOMPARE(p_x.apply(ZPoint{50, 16}), R({10, 20}, {11, 32}));

    // Four shards: y partitions, x is re-read by the shards that share a row block.
    const Ranges shards = index.grid({2, 2});
    Ranges y_parts, x_parts;
    for (const ZRange &s : shards) {
        y_parts.push_back(p_y.image(s));
        x_parts.push_back(p_x.image(s));
    }
    QVERIFY(check_partition(y_parts, index).is_partition());
    const PartitionReport xr = check_partition(x_parts, x_range);
    QVERIFY(xr.gaps.empty() && xr.outside.empty());
    QCOMPARE(xr.overlaps.size(), size_t(2));  // shards (0,1) and (2,3) read the same rows
    QCOMPARE(xr.overlaps[0].region, R({-40, 20}, {10, 32}));
    QVERIFY(check_injective(p_y, index).injective);
    QVERIFY(!check_injective(p_x, index).injective);
}

// The Java prototype takes only the images of start and inclusive end, giving
// [0:1) here; every corner must count.
void TestIndex::mixed_sign_row_regression() {
    const IndexProjection p = P({{1, -1}}, 2, {0}, {1});
    const ZRange box = ZRange::of_shape({2, 2});
    QCOMPARE(p.image(box), R({-1}, {2}));
    QVERIFY(p.image(box) != R({0}, {1}));
    QCOMPARE(IndexSet::of_range(box).image(p).count(), std::int64_t{3});
}

// ---- IndexSet ---------------------------------------------------------------------------

// A set made from one box answers from the box; the same set built as a union of
// that box with itself is an ISL set. On random boxes and projections (unit and
// larger coefficients, negative ones, windows, strides), both forms give the same
// image, counts, bounds, boxes tiling the set, and the same results of every set
// operation; one box prints as ISL prints it. (ISL's text is not canonical: a union's
// disjuncts come in an order of its own, a strided image keeps its mod constraints.)
void TestIndex::set_box_form_agrees_with_isl() {
    std::mt19937 rng(20261125);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto box = [&](int rank) {
        std::vector<Coord> lo(static_cast<size_t>(rank)), hi(static_cast<size_t>(rank));
        for (size_t d = 0; d < lo.size(); ++d) {
            lo[d] = pick(-3, 3);
            hi[d] = lo[d] + pick(0, 4);  // empty now and then
        }
        return ZRange(ZPoint(lo), ZPoint(hi));
    };
    auto isl_form = [](const ZRange &r) { return IndexSet::of_ranges(r.rank(), {r, r}); };
    // Both forms' boxes tile the set (the ISL form may cut it into more boxes).
    auto tiles = [](const IndexSet &s) {
        const auto boxes = s.as_boxes();
        if (!boxes) return false;
        std::int64_t total = 0;
        for (const ZRange &r : *boxes) total += r.size();
        return total == s.count() && IndexSet::of_ranges(s.rank(), *boxes).equals(s);
    };
    auto same = [&](const IndexSet &a, const IndexSet &b) {
        const bool ok = a.equals(b) && b.equals(a) && a.count() == b.count() && a.bounding_box() == b.bounding_box() &&
                        tiles(a) && tiles(b) && a.empty() == b.empty();
        if (!ok) qWarning("box form %s\nISL form %s", a.to_string().c_str(), b.to_string().c_str());
        return ok;
    };
    int images = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const int in = pick(1, 3), out = pick(1, 3);
        Rows a(static_cast<size_t>(out), std::vector<Coord>(static_cast<size_t>(in), 0));
        std::vector<Coord> b(static_cast<size_t>(out)), w(static_cast<size_t>(out));
        for (size_t r = 0; r < a.size(); ++r) {
            for (size_t c = 0; c < a[r].size(); ++c) a[r][c] = pick(0, 2) == 0 ? pick(-3, 3) : 0;
            b[r] = pick(-2, 2);
            w[r] = pick(1, 4);
        }
        const IndexProjection p = P(a, in, b, w);
        const ZRange index = box(in);
        const IndexSet fast = IndexSet::of_range(index).image(p), exact = isl_form(index).image(p);
        QVERIFY2(same(fast, exact), qPrintable(QString::fromStdString(p.to_string() + " on " + index.to_string())));
        images += fast.count() > 0 ? 1 : 0;

        const ZRange x = box(out), y = box(out);
        QCOMPARE(IndexSet::of_range(x).to_string(), isl_form(x).to_string());
        const IndexSet bx = IndexSet::of_range(x), by = IndexSet::of_range(y), ix = isl_form(x), iy = isl_form(y);
        const std::string what = x.to_string() + " and " + y.to_string();
        QVERIFY2(same(bx.intersect(by), ix.intersect(iy)), qPrintable("intersect " + QString::fromStdString(what)));
        QVERIFY2(same(bx.unite(by), ix.unite(iy)), qPrintable("unite " + QString::fromStdString(what)));
        QVERIFY2(same(bx.subtract(by), ix.subtract(iy)), qPrintable("subtract " + QString::fromStdString(what)));
        QVERIFY2(same(bx.unite(fast.intersect(by)), ix.unite(exact.intersect(iy))), qPrintable(QString::fromStdString(what)));
        QCOMPARE(bx.is_subset_of(by), ix.is_subset_of(iy));
        QCOMPARE(bx.is_subset_of(iy), ix.is_subset_of(by));
        QCOMPARE(bx.equals(by), ix.equals(iy));
        QCOMPARE(bx.sample_point().has_value(), ix.sample_point().has_value());
        // Sets of several boxes, cut differently: the image's boxes against a union.
        const IndexSet u = bx.unite(by), iu = ix.unite(iy);
        QCOMPARE(u.is_subset_of(bx), iu.is_subset_of(ix));
        QCOMPARE(fast.is_subset_of(u), exact.is_subset_of(iu));
        QCOMPARE(u.is_subset_of(fast), iu.is_subset_of(exact));
        QCOMPARE(u.equals(fast), iu.equals(exact));
        QVERIFY(by.unite(bx).equals(u) && bx.is_subset_of(u) && by.is_subset_of(u));
        QVERIFY2(same(u.subtract(bx), iu.subtract(ix)), qPrintable("subtract from a union " + QString::fromStdString(what)));
        QVERIFY2(same(fast.subtract(u), exact.subtract(iu)), qPrintable("image minus a union " + QString::fromStdString(what)));
    }
    QVERIFY(images > 100);  // the property was exercised on non-empty images
    // Two boxes side by side along one dim unite into one box.
    const IndexSet row = IndexSet::of_range(R({0, 0}, {2, 4})).unite(IndexSet::of_range(R({2, 0}, {5, 4})));
    QCOMPARE(row.as_boxes().value(), Ranges{R({0, 0}, {5, 4})});
    QVERIFY(row.equals(isl_form(R({0, 0}, {5, 4}))));
}

void TestIndex::set_operations() {
    const IndexSet a = IndexSet::of_range(R({0, 0}, {4, 4}));
    const IndexSet b = IndexSet::of_range(R({2, 2}, {6, 6}));
    QCOMPARE(a.rank(), 2);
    QCOMPARE(a.count(), std::int64_t{16});
    QCOMPARE(a.unite(b).count(), std::int64_t{28});
    QCOMPARE(a.intersect(b).count(), std::int64_t{4});
    QVERIFY(a.intersect(b).equals(IndexSet::of_range(R({2, 2}, {4, 4}))));
    QCOMPARE(a.subtract(b).count(), std::int64_t{12});
    QVERIFY(a.subtract(b).intersect(b).empty());
    QVERIFY(a.intersect(b).is_subset_of(a));
    QVERIFY(!a.is_subset_of(b));
    QVERIFY(!a.equals(b));
    QVERIFY(IndexSet(2).empty());
    QCOMPARE(IndexSet(2).count(), std::int64_t{0});
    QVERIFY(IndexSet::of_range(R({3, 0}, {3, 9})).empty());
    // Two touching boxes are the same set as their bounding box.
    QVERIFY(IndexSet::of_ranges(2, {R({0, 0}, {2, 4}), R({2, 0}, {4, 4})}).equals(a));
    QCOMPARE(a.unite(b).bounding_box(), R({0, 0}, {6, 6}));

    // Copies are independent values.
    IndexSet c = a;
    c = c.subtract(b);
    QCOMPARE(a.count(), std::int64_t{16});
    QCOMPARE(c.count(), std::int64_t{12});
    IndexSet moved = std::move(c);
    QCOMPARE(moved.count(), std::int64_t{12});
    moved = a;
    QVERIFY(moved.equals(a));

    const auto p = a.subtract(b).sample_point();
    QVERIFY(p.has_value());
    QVERIFY(R({0, 0}, {4, 4}).contains(*p) && !R({2, 2}, {4, 4}).contains(*p));
}

void TestIndex::set_zero_rank() {
    const IndexSet point = IndexSet::of_range(ZRange());
    QCOMPARE(point.rank(), 0);
    QVERIFY(!point.empty());
    QCOMPARE(point.count(), std::int64_t{1});
    QCOMPARE(point.to_string(), std::string("{ [] }"));
    QCOMPARE(point.sample_point(), std::optional<ZPoint>(ZPoint{}));
    QVERIFY(IndexSet(0).empty());
    QCOMPARE(IndexSet(0).count(), std::int64_t{0});
    QVERIFY(point.subtract(point).empty());
    const auto boxes = point.as_boxes();
    QVERIFY(boxes && boxes->size() == 1 && boxes->front() == ZRange());

    // A 0-dim index space (one application) reading a box.
    const IndexProjection bias = P({{}}, 0, {5}, {3});
    QVERIFY(point.image(bias).equals(IndexSet::of_range(R({5}, {8}))));
    // Reading a 0-dim tensor (a scalar) from a 2-d index space.
    const IndexProjection scalar(AffineMap(ZMatrix(0, 2), ZPoint{}), ZPoint{});
    QVERIFY(IndexSet::of_range(R({0, 0}, {3, 3})).image(scalar).equals(point));
    QVERIFY(IndexSet::of_range(R({0, 0}, {0, 3})).image(scalar).empty());
}

void TestIndex::set_as_boxes_disjoint() {
    const Ranges input{R({0, 0}, {4, 4}), R({2, 2}, {6, 6}), R({-3, 1}, {1, 2}), R({5, 5}, {5, 9})};
    const IndexSet s = IndexSet::of_ranges(2, input);
    const auto boxes = s.as_boxes();
    QVERIFY(boxes.has_value());
    Coord total = 0;
    for (size_t i = 0; i < boxes->size(); ++i) {
        QVERIFY(!(*boxes)[i].empty());
        total += (*boxes)[i].size();
        for (size_t j = i + 1; j < boxes->size(); ++j) QVERIFY(!(*boxes)[i].intersects((*boxes)[j]));
    }
    QCOMPARE(total, Coord{16 + 16 - 4 + 3});
    QCOMPARE(s.count(), std::int64_t{total});
    QVERIFY(IndexSet::of_ranges(2, *boxes).equals(s));
    QVERIFY(IndexSet(3).as_boxes()->empty());
}

// i ↦ 2i: the image is the even numbers only, and counts exactly.
void TestIndex::set_strided_image() {
    const IndexProjection twice = P({{2}}, 1, {0}, {1});
    const IndexSet evens = IndexSet::of_range(R({0}, {10000})).image(twice);
    QCOMPARE(evens.count(), std::int64_t{10000});
    QCOMPARE(evens.bounding_box(), R({0}, {19999}));
    QVERIFY(!IndexSet::of_range(R({999}, {1000})).is_subset_of(evens));
    QVERIFY(IndexSet::of_range(R({998}, {999})).unite(IndexSet::of_range(R({1000}, {1001}))).is_subset_of(evens));
    QVERIFY(evens.intersect(IndexSet::of_range(R({1}, {2}))).empty());
    QCOMPARE(evens.intersect(IndexSet::of_range(R({10}, {20}))).count(), std::int64_t{5});
    QVERIFY(!evens.as_boxes().has_value());  // a lattice is no union of a few boxes
    const auto sample = evens.sample_point();
    QVERIFY(sample && (*sample)[0] % 2 == 0 && (*sample)[0] >= 0 && (*sample)[0] < 19999);

    // A small lattice still decomposes, point by point.
    const auto few = IndexSet::of_range(R({0}, {3})).image(twice).as_boxes();
    QVERIFY(few.has_value());
    QCOMPARE(join(*few), std::string("[0:1] [2:3] [4:5]"));

    // Windows of 2 at stride 2 tile the line: one box.
    const IndexSet tiles = IndexSet::of_range(R({0}, {1000})).image(P({{2}}, 1, {0}, {2}));
    QCOMPARE(tiles.count(), std::int64_t{2000});
    QCOMPARE(join(*tiles.as_boxes()), std::string("[0:2000]"));

    // 2-d: (2i, 3j + i) over [0:10, 0:10] is injective, so 100 points.
    const IndexSet skew = IndexSet::of_range(ZRange::of_shape({10, 10})).image(P({{2, 0}, {1, 3}}, 2, {0, 0}, {1, 1}));
    QCOMPARE(skew.count(), std::int64_t{100});
}

void TestIndex::set_mixed_sign_image() {
    const IndexSet diff = IndexSet::of_range(ZRange::of_shape({2, 2})).image(P({{1, -1}}, 2, {0}, {1}));
    QVERIFY(diff.equals(IndexSet::of_range(R({-1}, {2}))));
    QCOMPARE(join(*diff.as_boxes()), std::string("[-1:2]"));
    // Window 0 touches nothing; an empty index range touches nothing.
    QVERIFY(IndexSet::of_range(ZRange::of_shape({4})).image(P({{1}}, 1, {0}, {0})).empty());
    QVERIFY(IndexSet::of_range(R({2}, {2})).image(P({{1}}, 1, {0}, {3})).empty());
}

void TestIndex::set_large_coordinates() {
    const Coord big = kMaxCoordinate;
    QCOMPARE(IndexSet::of_range(R({-big}, {big})).count(), std::int64_t{2 * big});
    const Coord side = Coord{1} << 20;
    const IndexSet square = IndexSet::of_range(R({0, -side}, {side, side}));
    QCOMPARE(square.count(), std::int64_t{2 * side * side});
    const auto t0 = std::chrono::steady_clock::now();
    const PartitionReport r = check_partition(R({0, -side}, {side, side}).grid({4, 4}), R({0, -side}, {side, side}));
    QVERIFY(r.is_partition());
    // A gap of one element in a huge range is found exactly.
    Ranges parts = R({0}, {big}).split(0, 8);
    parts[3] = ZRange(parts[3].start() + ZPoint{1}, parts[3].end());
    const PartitionReport gap = check_partition(parts, R({0}, {big}));
    QCOMPARE(join(gap.gaps), ZRange(parts[3].start() - ZPoint{1}, parts[3].start()).to_string());
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    // Stride-2 image of a 2^40-wide range: counted by ISL, not by enumeration.
    const IndexSet evens = IndexSet::of_range(R({0}, {big})).image(P({{2}}, 1, {-big}, {1}));
    QCOMPARE(evens.bounding_box(), R({-big}, {big - 1}));
    QVERIFY(check_injective(P({{2}}, 1, {-big}, {1}), R({0}, {big})).injective);
}

void TestIndex::set_to_string() {
    QCOMPARE(IndexSet::of_range(R({0}, {4})).to_string(), std::string("{ [i0] : 0 <= i0 <= 3 }"));
    QCOMPARE(IndexSet::of_ranges(1, {R({0}, {2}), R({2}, {4})}).to_string(), std::string("{ [i0] : 0 <= i0 <= 3 }"));
    QCOMPARE(IndexSet(2).to_string(), std::string("{ [i0, i1] : false }"));
    const std::string two = IndexSet::of_range(R({-1, 5}, {1, 6})).to_string();
    QVERIFY2(two == "{ [i0, 5] : -1 <= i0 <= 0 }", two.c_str());
}

void TestIndex::set_bounding_box_and_sample_of_empty() {
    QCOMPARE(IndexSet(2).bounding_box(), R({0, 0}, {0, 0}));
    QVERIFY(IndexSet(2).bounding_box().empty());
    QVERIFY(!IndexSet(2).sample_point().has_value());
    QCOMPARE(IndexSet::of_range(R({-7, 3}, {-2, 4})).bounding_box(), R({-7, 3}, {-2, 4}));
}

// Each thread has its own ISL context; sets made on different threads at the same
// time do not interfere.
void TestIndex::set_per_thread_contexts() {
    std::vector<std::int64_t> counts(4, -1);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t, &counts] {
            std::int64_t total = 0;
            for (int k = 0; k < 50; ++k) {
                const IndexSet s = IndexSet::of_range(ZRange::of_shape({t + 1, k + 1}));
                total += s.unite(IndexSet::of_range(R({0, 0}, {1, 100}))).count();
            }
            counts[static_cast<size_t>(t)] = total;
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < 4; ++t) {
        std::int64_t expected = 0;
        for (int k = 0; k < 50; ++k) expected += 100 + std::int64_t{t} * (k + 1);
        QCOMPARE(counts[static_cast<size_t>(t)], expected);
    }
}

// ---- partitions -------------------------------------------------------------------------

void TestIndex::partition_data() {
    QTest::addColumn<Ranges>("parts");
    QTest::addColumn<ZRange>("whole");
    QTest::addColumn<Ranges>("gaps");
    QTest::addColumn<Pairs>("overlap_pairs");
    QTest::addColumn<Ranges>("overlap_regions");
    QTest::addColumn<Indices>("outside");

    const ZRange w = ZRange::of_shape({4});
    QTest::newRow("exact grid, negative origin") << R({-40, 20}, {60, 32}).grid({4, 3}) << R({-40, 20}, {60, 32})
                                                 << Ranges{} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("uneven split") << ZRange::of_shape({10}).split(0, 3) << ZRange::of_shape({10}) << Ranges{} << Pairs{}
                                  << Ranges{} << Indices{};
    QTest::newRow("gap and overlap cancel in size")
        << Ranges{R({0}, {2}), R({1}, {2}), R({3}, {4})} << w << Ranges{R({2}, {3})} << Pairs{{0, 1}}
        << Ranges{R({1}, {2})} << Indices{};
    QTest::newRow("part reaching outside")
        << Ranges{R({0}, {4}), R({4}, {5})} << w << Ranges{} << Pairs{} << Ranges{} << Indices{1};
    QTest::newRow("outside and overlapping")
        << Ranges{R({-2}, {1}), R({0}, {4})} << w << Ranges{} << Pairs{{0, 1}} << Ranges{R({0}, {1})} << Indices{0};
    QTest::newRow("empty parts are harmless")
        << Ranges{R({2}, {2}), R({0}, {4}), R({10}, {10})} << w << Ranges{} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("no parts leave the whole as a gap")
        << Ranges{} << w << Ranges{w} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("empty whole, no parts") << Ranges{} << R({3}, {3}) << Ranges{} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("empty whole, one part")
        << Ranges{R({3}, {4})} << R({3}, {3}) << Ranges{} << Pairs{} << Ranges{} << Indices{0};
    QTest::newRow("L-shaped gap in 2-d") << Ranges{R({0, 0}, {2, 4}), R({2, 0}, {4, 2})} << ZRange::of_shape({4, 4})
                                         << Ranges{R({2, 2}, {4, 4})} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("duplicate part") << Ranges{R({0}, {2}), R({2}, {4}), R({0}, {2})} << w << Ranges{} << Pairs{{0, 2}}
                                    << Ranges{R({0}, {2})} << Indices{};
    QTest::newRow("three-way overlap") << Ranges{R({0}, {3}), R({1}, {4}), R({2}, {3})} << w << Ranges{}
                                       << Pairs{{0, 1}, {0, 2}, {1, 2}} << Ranges{R({1}, {3}), R({2}, {3}), R({2}, {3})}
                                       << Indices{};
    QTest::newRow("0-dim, one part") << Ranges{ZRange()} << ZRange() << Ranges{} << Pairs{} << Ranges{} << Indices{};
    QTest::newRow("0-dim, two parts overlap")
        << Ranges{ZRange(), ZRange()} << ZRange() << Ranges{} << Pairs{{0, 1}} << Ranges{ZRange()} << Indices{};
    QTest::newRow("0-dim, no part") << Ranges{} << ZRange() << Ranges{ZRange()} << Pairs{} << Ranges{} << Indices{};
}

void TestIndex::partition() {
    QFETCH(Ranges, parts);
    QFETCH(ZRange, whole);
    QFETCH(Ranges, gaps);
    QFETCH(Pairs, overlap_pairs);
    QFETCH(Ranges, overlap_regions);
    QFETCH(Indices, outside);

    const PartitionReport r = check_partition(parts, whole);
    QCOMPARE(join(r.gaps), join(gaps));
    Pairs pairs;
    Ranges regions;
    for (const auto &o : r.overlaps) {
        pairs.emplace_back(o.first, o.second);
        regions.push_back(o.region);
    }
    QCOMPARE(pairs, overlap_pairs);
    QCOMPARE(join(regions), join(overlap_regions));
    QCOMPARE(r.outside, outside);
    QCOMPARE(r.is_partition(), gaps.empty() && overlap_pairs.empty() && outside.empty());
}

// The Java prototype's "bounding box + sum of sizes" accepts this: sizes add up
// to 4 and the bounding box is [0:4). It is not a partition.
void TestIndex::partition_cancelling_gap_and_overlap() {
    const Ranges parts{R({0}, {2}), R({1}, {2}), R({3}, {4})};
    const ZRange whole = ZRange::of_shape({4});
    Coord sum = 0;
    ZRange bound = R({0}, {0});
    for (const ZRange &p : parts) {
        sum += p.size();
        bound = bound.bounding(p);
    }
    QCOMPARE(sum, whole.size());
    QCOMPARE(bound, whole);

    const PartitionReport r = check_partition(parts, whole);
    QVERIFY(!r.is_partition());
    QCOMPARE(join(r.gaps), std::string("[2:3]"));
    QCOMPARE(r.overlaps.size(), size_t(1));
    QCOMPARE(r.overlaps[0].first, size_t(0));
    QCOMPARE(r.overlaps[0].second, size_t(1));
    QCOMPARE(r.overlaps[0].region, R({1}, {2}));
    QVERIFY(r.outside.empty());
}

void TestIndex::partition_of_a_thousand_parts() {
    const ZRange whole = R({-50, 0, 7}, {50, 100, 107});
    Ranges parts = whole.grid({10, 10, 10});
    QCOMPARE(parts.size(), size_t(1000));
    QVERIFY(check_partition(parts, whole).is_partition());

    // One part shrunk by one plane, another grown into its neighbour.
    const ZRange shrunk = parts[123];
    parts[123] = ZRange(shrunk.start(), shrunk.end() - ZPoint{0, 0, 1});
    const ZRange grown = parts[500];
    parts[500] = ZRange(grown.start(), grown.end() + ZPoint{1, 0, 0});
    const PartitionReport r = check_partition(parts, whole);
    QCOMPARE(join(r.gaps), ZRange(shrunk.start() + ZPoint{0, 0, shrunk.extent(2) - 1}, shrunk.end()).to_string());
    QCOMPARE(r.overlaps.size(), size_t(1));
    QCOMPARE(r.overlaps[0].first, size_t(500));
    QCOMPARE(r.overlaps[0].second, size_t(600));
    QCOMPARE(r.overlaps[0].region.size(), grown.extent(1) * grown.extent(2));
    QVERIFY(r.outside.empty());
}

// ---- injectivity ------------------------------------------------------------------------

void TestIndex::injective_data() {
    QTest::addColumn<IndexProjection>("projection");
    QTest::addColumn<ZRange>("domain");
    QTest::addColumn<bool>("injective");
    const ZRange box = ZRange::of_shape({4, 3});
    QTest::newRow("identity") << IndexProjection::identity(2) << box << true;
    QTest::newRow("identity, negative origin") << IndexProjection::identity(2) << R({-40, 20}, {60, 32}) << true;
    QTest::newRow("zero column") << P({{1, 0}, {0, 0}}, 2, {0, 0}, {1, 1}) << box << false;
    QTest::newRow("zero column with a window (linear x)") << P({{1, 0}, {0, 0}}, 2, {0, 0}, {1, 12}) << box << false;
    QTest::newRow("stride 2, window 1") << P({{2}}, 1, {0}, {1}) << R({0}, {5}) << true;
    QTest::newRow("stride 2, window 2") << P({{2}}, 1, {0}, {2}) << R({0}, {5}) << true;
    QTest::newRow("stride 2, window 3 overlaps") << P({{2}}, 1, {0}, {3}) << R({0}, {5}) << false;
    QTest::newRow("window 2 at stride 1 overlaps") << P({{1}}, 1, {0}, {2}) << R({0}, {3}) << false;
    QTest::newRow("window 2 on one point") << P({{1}}, 1, {0}, {2}) << R({7}, {8}) << true;
    QTest::newRow("[1 2] over extent-1 second dim") << P({{1, 2}}, 2, {0}, {1}) << R({0, 0}, {2, 1}) << true;
    QTest::newRow("[1 2] over [0:2, 0:2]") << P({{1, 2}}, 2, {0}, {1}) << R({0, 0}, {2, 2}) << true;
    QTest::newRow("[1 2] over [0:3, 0:2]") << P({{1, 2}}, 2, {0}, {1}) << R({0, 0}, {3, 2}) << false;
    QTest::newRow("[[1 1] [1 -1]]") << P({{1, 1}, {1, -1}}, 2, {0, 0}, {1, 1}) << box << true;
    QTest::newRow("conv input o + k") << P({{1, 1}}, 2, {0}, {1}) << box << false;
    QTest::newRow("column block writes, window 4") << P({{4}}, 1, {0}, {4}) << R({0}, {8}) << true;
    QTest::newRow("0-dim domain") << P({{}}, 0, {0}, {5}) << ZRange() << true;
    QTest::newRow("empty domain") << P({{0}}, 1, {0}, {1}) << R({0}, {0}) << true;
    QTest::newRow("scalar output, two points")
        << IndexProjection(AffineMap(ZMatrix(0, 1), ZPoint{}), ZPoint{}) << R({0}, {2}) << false;
    QTest::newRow("window 0 touches nothing") << P({{0}}, 1, {0}, {0}) << R({0}, {5}) << true;
    QTest::newRow("3-d permutation") << P({{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}, 3, {1, 2, 3}, {1, 1, 1})
                                     << ZRange::of_shape({3, 4, 5}) << true;
    QTest::newRow("3-d dropping a dim") << P({{0, 0, 1}, {1, 0, 0}}, 3, {0, 0}, {1, 1}) << ZRange::of_shape({3, 4, 5})
                                        << false;
    QTest::newRow("3-d dropping an extent-1 dim")
        << P({{0, 0, 1}, {1, 0, 0}}, 3, {0, 0}, {1, 1}) << R({0, 9, 0}, {3, 10, 5}) << true;
}

void TestIndex::injective() {
    QFETCH(IndexProjection, projection);
    QFETCH(ZRange, domain);
    QFETCH(bool, injective);
    const InjectivityReport r = check_injective(projection, domain);
    QCOMPARE(r.injective, injective);
    QCOMPARE(isl_is_injective(projection, domain), injective);
    QCOMPARE(r.witness.has_value(), !injective);
    if (r.witness)
        QVERIFY2(witness_is_real(projection, domain, *r.witness),
                 (r.witness->first.to_string() + " vs " + r.witness->second.to_string()).c_str());
}

QTEST_GUILESS_MAIN(TestIndex)
#include "test_index.moc"
