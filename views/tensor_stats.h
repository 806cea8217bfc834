// Summaries of tensor values for the outputs panel: shape, dtype, min/max/mean/std
// over the finite elements, NaN/Inf counts, a histogram, and — for image-shaped
// tensors — a preview of the first item. Computed on the run worker, not the GUI.
#pragma once

#include <QImage>
#include <QString>
#include <cstdint>
#include <vector>

#include "graph/tensor_data.h"

namespace tapestry::views {

struct TensorSummary {
    QString id;
    QString name;
    QString role;  // "input" or "output"
    DType dtype = DType::f32;
    std::vector<std::int64_t> shape;
    std::int64_t count = 0;         // elements
    std::int64_t finite_count = 0;  // elements that are neither NaN nor ±Inf
    std::int64_t nan_count = 0;
    std::int64_t inf_count = 0;
    double min = 0, max = 0, mean = 0, stddev = 0;  // over finite elements (0 when none)
    // Counts of finite elements in equal bins over [min, max]; empty when none.
    std::vector<std::int64_t> histogram;
    QImage preview;        // null unless image-shaped
    QString preview_note;  // "item 0 of 8, 3 channels (RGB), 32×32; scaled from [-1, 1]"

    QString shapeText() const;  // "[8, 3, 32, 32]"
};

// True for [N, C, H, W] with C ∈ {1, 3} and for [H, W] (H, W ≥ 2).
bool is_image_shaped(const std::vector<std::int64_t> &shape);

// Statistics and histogram of `t` (any dtype), plus the image preview when
// image-shaped: the first item normalised so that its finite min..max spans 0..255
// (NaN/Inf drawn in magenta).
TensorSummary summarize_tensor(const TensorData &t, int bins = 48);

}  // namespace tapestry::views
