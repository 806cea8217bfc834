// Host boxes (launch/host_boxes.h): walks of row-major runs.
#include "launch/host_boxes.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "runtime/cpu/float_formats.h"

namespace tapestry::launch {
namespace {

// Calls f(src_ptr, dst_ptr, count) for every contiguous run of the flat elements
// [lo, hi) of two boxes of the same element count (runs along each one's last dim).
template <typename F>
void for_each_run(const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi, F &&f) {
    const std::int64_t ls = src.shape.back(), ld = dst.shape.back();
    const int es = dtype_bytes(src.dtype), ed = dtype_bytes(dst.dtype);
    auto element = [](const HostBox &b, std::int64_t flat, int esize) {
        std::int64_t offset = 0;
        for (int d = static_cast<int>(b.shape.size()) - 1; d >= 0; --d) {
            const std::int64_t e = b.shape[static_cast<size_t>(d)];
            offset += (flat % e) * b.strides[static_cast<size_t>(d)];
            flat /= e;
        }
        return offset * esize;
    };
    std::int64_t i = lo;
    while (i < hi) {
        // The run ends at the end of the current row of either box.
        const std::int64_t n = std::min({hi - i, ls - i % ls, ld - i % ld});
        f(src.data + element(src, i, es), dst.data + element(dst, i, ed), n);
        i += n;
    }
}

template <typename T> void add_run(const std::byte *s, std::byte *d, std::int64_t n) {
    const T *a = reinterpret_cast<const T *>(s);
    T *b = reinterpret_cast<T *>(d);
    for (std::int64_t k = 0; k < n; ++k) b[k] = static_cast<T>(b[k] + a[k]);
}

template <float (*Decode)(std::uint16_t), std::uint16_t (*Encode)(float)>
void add_run16(const std::byte *s, std::byte *d, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) {
        std::uint16_t a, b;
        std::memcpy(&a, s + 2 * k, 2);
        std::memcpy(&b, d + 2 * k, 2);
        const std::uint16_t r = Encode(Decode(b) + Decode(a));
        std::memcpy(d + 2 * k, &r, 2);
    }
}

// One element of `dtype` at p, as a double (exact for every dtype but i64 past 2^53).
double load(DType dtype, const std::byte *p) {
    switch (dtype) {
        case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
        case DType::f16: { std::uint16_t v; std::memcpy(&v, p, 2); return cpu::f16_to_float(v); }
        case DType::bf16: { std::uint16_t v; std::memcpy(&v, p, 2); return cpu::bf16_to_float(v); }
        case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
        case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
        case DType::boolean: return *p != std::byte{0} ? 1.0 : 0.0;
    }
    return 0;
}

void store(DType dtype, std::byte *p, double v) {
    switch (dtype) {
        case DType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
        case DType::f16: { const std::uint16_t h = cpu::float_to_f16(static_cast<float>(v)); std::memcpy(p, &h, 2); return; }
        case DType::bf16: { const std::uint16_t h = cpu::float_to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); return; }
        case DType::i32: { const auto i = static_cast<std::int32_t>(v); std::memcpy(p, &i, 4); return; }
        case DType::i64: { const auto i = static_cast<std::int64_t>(v); std::memcpy(p, &i, 8); return; }
        case DType::boolean: *p = std::byte{v != 0 ? std::uint8_t{1} : std::uint8_t{0}}; return;
    }
}

}  // namespace

void pack_elements(const HostBox &box, std::int64_t lo, std::int64_t hi, std::byte *out) {
    if (lo >= hi) return;
    const int e = dtype_bytes(box.dtype);
    std::int64_t done = 0;
    for_each_run(box, box, lo, hi, [&](const std::byte *s, std::byte *, std::int64_t n) {
        std::memcpy(out + done * e, s, static_cast<size_t>(n * e));
        done += n;
    });
}

void unpack_elements(const std::byte *in, const HostBox &dst, std::int64_t lo, std::int64_t hi, bool add) {
    if (lo >= hi) return;
    const int e = dtype_bytes(dst.dtype);
    std::int64_t done = 0;
    HostBox run;  // each contiguous run of dst, read from the dense input
    run.dtype = dst.dtype;
    run.strides = {1};
    for_each_run(dst, dst, lo, hi, [&](const std::byte *, std::byte *d, std::int64_t n) {
        run.shape = {n};
        run.data = const_cast<std::byte *>(in + done * e);  // read only
        HostBox target = run;
        target.data = d;
        if (add) add_elements(run, target, 0, n);
        else std::memcpy(d, in + done * e, static_cast<size_t>(n * e));
        done += n;
    });
}

std::int64_t HostBox::elements() const {
    std::int64_t n = 1;
    for (std::int64_t e : shape) n *= e;
    return n;
}

HostBox HostBox::slice0(std::int64_t index) const {
    TAPESTRY_CHECK(!shape.empty() && index >= 0 && index < shape[0], "HostBox::slice0: index outside the box");
    HostBox out;
    out.dtype = dtype;
    out.data = data + index * strides[0] * dtype_bytes(dtype);
    out.shape.assign(shape.begin() + 1, shape.end());
    out.strides.assign(strides.begin() + 1, strides.end());
    if (out.shape.empty()) {
        out.shape = {1};
        out.strides = {1};
    }
    return out;
}

std::int64_t box_offset(const ZRange &region, const ZRange &box) {
    std::int64_t stride = 1, offset = 0;
    for (int d = region.rank() - 1; d >= 0; --d) {
        offset += (box.start()[d] - region.start()[d]) * stride;
        stride *= region.extent(d);
    }
    return offset;
}

HostBox host_box(std::byte *base, const ZRange &region, const ZRange &box, DType dtype) {
    TAPESTRY_CHECK(region.rank() == box.rank() && (box.empty() || region.contains(box)),
                   "host_box: the box lies outside the buffer's region");
    HostBox out;
    out.dtype = dtype;
    const int rank = region.rank();
    if (rank == 0) {
        out.data = base;
        out.shape = {1};
        out.strides = {1};
        return out;
    }
    out.shape.resize(static_cast<size_t>(rank));
    out.strides.resize(static_cast<size_t>(rank));
    std::int64_t stride = 1;
    std::int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
        out.strides[static_cast<size_t>(d)] = stride;
        out.shape[static_cast<size_t>(d)] = box.extent(d);
        offset += (box.start()[d] - region.start()[d]) * stride;
        stride *= region.extent(d);
    }
    out.data = base ? base + offset * dtype_bytes(dtype) : nullptr;  // null: memory of another process
    return out;
}

void copy_elements(const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi) {
    TAPESTRY_CHECK(src.elements() == dst.elements(), "copy_elements: boxes of different sizes");
    if (lo >= hi) return;
    if (src.dtype == dst.dtype) {
        const int e = dtype_bytes(src.dtype);
        for_each_run(src, dst, lo, hi, [e](const std::byte *s, std::byte *d, std::int64_t n) {
            std::memmove(d, s, static_cast<size_t>(n * e));
        });
        return;
    }
    const int es = dtype_bytes(src.dtype), ed = dtype_bytes(dst.dtype);
    for_each_run(src, dst, lo, hi, [&](const std::byte *s, std::byte *d, std::int64_t n) {
        for (std::int64_t k = 0; k < n; ++k) store(dst.dtype, d + k * ed, load(src.dtype, s + k * es));
    });
}

void add_elements(const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi) {
    TAPESTRY_CHECK(src.elements() == dst.elements(), "add_elements: boxes of different sizes");
    if (lo >= hi) return;
    if (src.dtype != dst.dtype) {
        const int es = dtype_bytes(src.dtype), ed = dtype_bytes(dst.dtype);
        for_each_run(src, dst, lo, hi, [&](const std::byte *s, std::byte *d, std::int64_t n) {
            for (std::int64_t k = 0; k < n; ++k)
                store(dst.dtype, d + k * ed, load(dst.dtype, d + k * ed) + load(src.dtype, s + k * es));
        });
        return;
    }
    switch (dst.dtype) {
        case DType::f32: for_each_run(src, dst, lo, hi, add_run<float>); return;
        case DType::i32: for_each_run(src, dst, lo, hi, add_run<std::int32_t>); return;
        case DType::i64: for_each_run(src, dst, lo, hi, add_run<std::int64_t>); return;
        case DType::bf16: for_each_run(src, dst, lo, hi, add_run16<cpu::bf16_to_float, cpu::float_to_bf16>); return;
        case DType::f16: for_each_run(src, dst, lo, hi, add_run16<cpu::f16_to_float, cpu::float_to_f16>); return;
        case DType::boolean: TAPESTRY_CHECK(false, "add_elements: booleans are not summed");
    }
}

}  // namespace tapestry::launch
