// NCCL communicators for the cuda backend (runtime/cuda/nccl.h).
#include "runtime/cuda/nccl.h"

#if TAPESTRY_HAVE_NCCL

#include <nccl.h>

#include <cstring>
#include <thread>
#include <tuple>

namespace tapestry::cuda {
namespace {

using Clock = std::chrono::steady_clock;

ncclComm_t comm_of(void *c) { return static_cast<ncclComm_t>(c); }

std::string nccl_text(const char *what, ncclResult_t r, ncclComm_t comm = nullptr) {
    std::string out = std::string(what) + ": NCCL " + ncclGetErrorString(r);
    if (comm)
        if (const char *last = ncclGetLastError(comm); last && *last) out += " (" + std::string(last) + ")";
    return out;
}

// Polls a non-blocking communicator until its calls have settled or `deadline`
// passes: ncclSuccess, the error it reports, or ncclInProgress past the deadline.
ncclResult_t settle(ncclComm_t c, Clock::time_point deadline) {
    for (int polls = 0;; ++polls) {
        ncclResult_t state = ncclSuccess;
        if (ncclResult_t r = ncclCommGetAsyncError(c, &state); r != ncclSuccess) return r;
        if (state != ncclInProgress || Clock::now() >= deadline) return state;
        // Most calls settle within microseconds: spin a little before sleeping.
        if (polls < 1000) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

std::string millis_text(std::chrono::milliseconds limit) {
    const auto ms = limit.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

bool nccl_built() { return true; }

std::string nccl_version() {
    int v = 0;
    if (ncclResult_t r = ncclGetVersion(&v); r != ncclSuccess) return nccl_text("ncclGetVersion", r);
    // NCCL_VERSION(X,Y,Z) = X·10000 + Y·100 + Z since 2.9.
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

Expected<std::string, std::string> nccl_unique_id() {
    ncclUniqueId id;
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return unexpected(nccl_text("ncclGetUniqueId", r));
    return std::string(id.internal, sizeof id.internal);
}

Expected<std::unique_ptr<NcclComms>, std::string> NcclComms::make(const std::vector<int> &ordinals,
                                                                  std::chrono::milliseconds limit,
                                                                  const NcclBootstrap *bootstrap) {
    if (ordinals.empty()) return unexpected(std::string("NCCL: no GPU to make a communicator for"));
    std::unique_ptr<NcclComms> out(new NcclComms());
    out->ordinals_ = ordinals;
    out->comms_.assign(ordinals.size(), nullptr);
    const int n = static_cast<int>(ordinals.size());
    out->ranks_ = bootstrap ? bootstrap->ranks : n;
    out->first_ = bootstrap ? bootstrap->first : 0;
    if (out->first_ < 0 || out->first_ + n > out->ranks_)
        return unexpected("NCCL: ranks " + std::to_string(out->first_) + "…" + std::to_string(out->first_ + n - 1) +
                          " outside the " + std::to_string(out->ranks_) + " ranks");
    ncclUniqueId id;
    if (bootstrap) {
        if (bootstrap->id.size() != sizeof id.internal)
            return unexpected("NCCL: a unique id of " + std::to_string(bootstrap->id.size()) + " bytes, not " +
                              std::to_string(sizeof id.internal));
        std::memcpy(id.internal, bootstrap->id.data(), sizeof id.internal);
    } else if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
        return unexpected(nccl_text("ncclGetUniqueId", r));
    }
    // Every rank of this process in one group: their set-ups wait for each other.
    ncclGroupStart();
    for (int i = 0; i < n; ++i) {
        cudaSetDevice(ordinals[static_cast<size_t>(i)]);
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        ncclComm_t c = nullptr;
        const ncclResult_t r = ncclCommInitRankConfig(&c, out->ranks_, id, out->first_ + i, &config);
        out->comms_[static_cast<size_t>(i)] = c;
        if (r != ncclSuccess && r != ncclInProgress) {
            ncclGroupEnd();
            out->abort();
            return unexpected(nccl_text(("making the communicator of GPU " + std::to_string(ordinals[static_cast<size_t>(i)])).c_str(), r));
        }
    }
    if (ncclResult_t r = ncclGroupEnd(); r != ncclSuccess && r != ncclInProgress) {
        out->abort();
        return unexpected(nccl_text("making the communicators (ncclGroupEnd)", r));
    }
    const auto deadline = Clock::now() + limit;
    for (int i = 0; i < n; ++i) {
        ncclComm_t c = comm_of(out->comms_[static_cast<size_t>(i)]);
        const ncclResult_t state = settle(c, deadline);
        if (state == ncclSuccess) continue;
        const std::string why =
            state == ncclInProgress
                ? "NCCL did not set up the communicators of " + std::to_string(n) + " GPU" + (n == 1 ? "" : "s") +
                      " within " + millis_text(limit) + (out->ranks_ > n ? " (another process's ranks did not come)" : "") +
                      ": aborted"
                : nccl_text(("making the communicator of GPU " + std::to_string(ordinals[static_cast<size_t>(i)])).c_str(), state, c);
        out->abort();
        return unexpected(why);
    }
    return out;
}

NcclComms::~NcclComms() {
    if (aborted_) return;
    if (async_error()) {
        abort();
        return;
    }
    // Finalize flushes what is in flight; a communicator that does not settle within
    // a few seconds is aborted rather than waited for.
    for (void *c : comms_)
        if (c) ncclCommFinalize(comm_of(c));
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (void *c : comms_)
        if (c && settle(comm_of(c), deadline) != ncclSuccess) {
            abort();
            return;
        }
    for (void *c : comms_)
        if (c) ncclCommDestroy(comm_of(c));
}

Status NcclComms::exchange(int from, const void *src, cudaStream_t from_stream, int to, void *dst, cudaStream_t to_stream,
                           std::int64_t bytes, std::chrono::milliseconds limit) {
    if (aborted_) return unexpected(std::string("NCCL: the communicators were aborted after an earlier failure"));
    if (from < 0 || to < 0 || from >= ranks() || to >= ranks())
        return unexpected("NCCL: rank " + std::to_string(from) + " → " + std::to_string(to) + " outside the " +
                          std::to_string(ranks()) + " ranks");
    if (bytes <= 0) return std::monostate{};
    auto where = [&](int r) {
        return local(r) ? " (GPU " + std::to_string(ordinals_[static_cast<size_t>(r - first_)]) + ")" : std::string(" (another process)");
    };
    const std::string what = "NCCL message of " + std::to_string(bytes) + " bytes from rank " + std::to_string(from) +
                             where(from) + " to rank " + std::to_string(to) + where(to);
    ncclComm_t cf = local(from) ? comm_of(comms_[static_cast<size_t>(from - first_)]) : nullptr;
    ncclComm_t ct = local(to) ? comm_of(comms_[static_cast<size_t>(to - first_)]) : nullptr;
    if (!cf && !ct) return std::monostate{};
    const size_t count = static_cast<size_t>(bytes);
    ncclGroupStart();
    ncclResult_t rs = cf ? ncclSend(src, count, ncclUint8, to, cf, from_stream) : ncclSuccess;
    ncclResult_t rr = ct ? ncclRecv(dst, count, ncclUint8, from, ct, to_stream) : ncclSuccess;
    ncclResult_t rg = ncclGroupEnd();
    ncclComm_t any = cf ? cf : ct;
    for (auto [r, c, call] : {std::tuple{rs, cf, "ncclSend"}, std::tuple{rr, ct, "ncclRecv"}, std::tuple{rg, any, "ncclGroupEnd"}})
        if (r != ncclSuccess && r != ncclInProgress) return unexpected(nccl_text((what + ": " + call).c_str(), r, c));
    // Non-blocking communicators: the calls may still be in progress on the host.
    const auto deadline = Clock::now() + limit;
    for (ncclComm_t c : {cf, ct}) {
        if (!c) continue;
        const ncclResult_t state = settle(c, deadline);
        if (state == ncclSuccess) continue;
        const std::string why = state == ncclInProgress
                                    ? what + ": NCCL did not take it within " + millis_text(limit) + ": aborted"
                                    : nccl_text(what.c_str(), state, c);
        abort();
        return unexpected(why);
    }
    return std::monostate{};
}

std::optional<std::string> NcclComms::async_error() const {
    if (aborted_) return std::string("NCCL: the communicators were aborted");
    for (size_t i = 0; i < comms_.size(); ++i) {
        if (!comms_[i]) continue;
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(comm_of(comms_[i]), &state) != ncclSuccess) continue;
        if (state != ncclSuccess && state != ncclInProgress)
            return nccl_text(("NCCL rank " + std::to_string(first_ + static_cast<int>(i)) + " (GPU " + std::to_string(ordinals_[i]) + ")").c_str(),
                             state, comm_of(comms_[i]));
    }
    return std::nullopt;
}

void NcclComms::abort() {
    if (aborted_) return;
    aborted_ = true;
    for (void *&c : comms_)
        if (c) {
            ncclCommAbort(comm_of(c));
            c = nullptr;
        }
}

}  // namespace tapestry::cuda

#else  // no NCCL in this build

namespace tapestry::cuda {

namespace {
const char *kNoNccl = "this build has no NCCL (CMake found no nccl.h and libnccl: install NCCL and rebuild)";
}

bool nccl_built() { return false; }
std::string nccl_version() { return kNoNccl; }

Expected<std::string, std::string> nccl_unique_id() { return unexpected(std::string(kNoNccl)); }
Expected<std::unique_ptr<NcclComms>, std::string> NcclComms::make(const std::vector<int> &, std::chrono::milliseconds,
                                                                  const NcclBootstrap *) {
    return unexpected(std::string(kNoNccl));
}
NcclComms::~NcclComms() = default;
Status NcclComms::exchange(int, const void *, cudaStream_t, int, void *, cudaStream_t, std::int64_t,
                           std::chrono::milliseconds) {
    return unexpected(std::string(kNoNccl));
}
std::optional<std::string> NcclComms::async_error() const { return std::nullopt; }
void NcclComms::abort() { aborted_ = true; }

}  // namespace tapestry::cuda

#endif
