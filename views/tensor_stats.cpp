#include "views/tensor_stats.h"

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <limits>

namespace tapestry::views {

namespace {

// Element i as a double, with a fast path for the common f32 case.
class Reader {
public:
    explicit Reader(const TensorData &t) : t_(t) {
        if (t.dtype == DType::f32) f32_ = t.as<float>().data();
    }
    double operator()(std::int64_t i) const { return f32_ ? static_cast<double>(f32_[i]) : t_.get(i); }

private:
    const TensorData &t_;
    const float *f32_ = nullptr;
};

QString formatRange(double lo, double hi) {
    return QStringLiteral("[%1, %2]").arg(lo, 0, 'g', 4).arg(hi, 0, 'g', 4);
}

// The first item of an image-shaped tensor as an image: one channel → grey, three → RGB.
void makePreview(const Reader &at, TensorSummary &s) {
    const std::vector<std::int64_t> &shape = s.shape;
    const bool nchw = shape.size() == 4;
    const std::int64_t channels = nchw ? shape[1] : 1;
    const std::int64_t height = nchw ? shape[2] : shape[0];
    const std::int64_t width = nchw ? shape[3] : shape[1];
    // Previews are for looking at, not for measuring: very large planes are not drawn.
    if (height <= 0 || width <= 0 || height > 4096 || width > 4096) return;
    const std::int64_t plane = height * width;
    const std::int64_t item = channels * plane;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::int64_t i = 0; i < item; ++i) {
        const double v = at(i);
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (lo > hi) lo = hi = 0;
    const double span = hi > lo ? hi - lo : 1.0;
    auto level = [&](double v) { return static_cast<int>(std::lround(std::clamp((v - lo) / span, 0.0, 1.0) * 255.0)); };
    QImage image(static_cast<int>(width), static_cast<int>(height), QImage::Format_RGB32);
    for (std::int64_t y = 0; y < height; ++y) {
        auto *row = reinterpret_cast<QRgb *>(image.scanLine(static_cast<int>(y)));
        for (std::int64_t x = 0; x < width; ++x) {
            const std::int64_t p = y * width + x;
            int rgb[3];
            bool bad = false;
            for (std::int64_t c = 0; c < 3; ++c) {
                const double v = at((channels == 3 ? c : 0) * plane + p);
                if (!std::isfinite(v)) bad = true;
                rgb[c] = level(v);
            }
            row[x] = bad ? qRgb(255, 0, 255) : qRgb(rgb[0], rgb[1], rgb[2]);
        }
    }
    s.preview = image;
    QStringList parts;
    if (nchw) parts << QStringLiteral("item 0 of %1").arg(shape[0]);
    parts << (channels == 3 ? QStringLiteral("3 channels (RGB)") : QStringLiteral("1 channel (grey)"));
    parts << QStringLiteral("%1×%2").arg(width).arg(height);
    s.preview_note = parts.join(QStringLiteral(", ")) + QStringLiteral("; scaled from ") + formatRange(lo, hi);
}

}  // namespace

QString TensorSummary::shapeText() const {
    QStringList dims;
    for (std::int64_t d : shape) dims << QString::number(d);
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

bool is_image_shaped(const std::vector<std::int64_t> &shape) {
    if (shape.size() == 4) return shape[0] >= 1 && (shape[1] == 1 || shape[1] == 3) && shape[2] >= 2 && shape[3] >= 2;
    if (shape.size() == 2) return shape[0] >= 2 && shape[1] >= 2;
    return false;
}

TensorSummary summarize_tensor(const TensorData &t, int bins) {
    TensorSummary s;
    s.dtype = t.dtype;
    s.shape = t.shape.to_vector();
    s.count = t.element_count();
    const Reader at(t);

    // Two passes: range, mean and counts first; then the variance and the
    // histogram (which needs the range). Sums in double are exact enough here.
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
    for (std::int64_t i = 0; i < s.count; ++i) {
        const double v = at(i);
        if (std::isnan(v)) {
            ++s.nan_count;
        } else if (std::isinf(v)) {
            ++s.inf_count;
        } else {
            ++s.finite_count;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            sum += v;
        }
    }
    if (s.finite_count > 0) {
        s.min = lo;
        s.max = hi;
        s.mean = sum / static_cast<double>(s.finite_count);
        bins = std::max(bins, 1);
        s.histogram.assign(static_cast<size_t>(bins), 0);
        const double width = (hi - lo) / bins;
        double squares = 0;
        for (std::int64_t i = 0; i < s.count; ++i) {
            const double v = at(i);
            if (!std::isfinite(v)) continue;
            squares += (v - s.mean) * (v - s.mean);
            const int b = width > 0 ? std::clamp(static_cast<int>((v - lo) / width), 0, bins - 1) : bins / 2;
            ++s.histogram[static_cast<size_t>(b)];
        }
        s.stddev = std::sqrt(squares / static_cast<double>(s.finite_count));
    }
    if (is_image_shaped(s.shape) && s.count > 0) makePreview(at, s);
    return s;
}

}  // namespace tapestry::views
