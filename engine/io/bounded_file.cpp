// Regular files only, bounded reads. The path is stat()ed before it is opened, so
// that a device is never opened at all (opening some has effects), and the open
// descriptor is fstat()ed again, so that a path swapped in between is caught too.
// O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer.
#include "io/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace tapestry {
namespace {

// What a file that is not regular is, for a message; "" for a regular file.
std::string kind_of(mode_t mode) {
    if (S_ISREG(mode)) return "";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string refusal_of(mode_t mode, std::string_view what) {
    const std::string kind = kind_of(mode);
    if (kind.empty()) return "";
    if (S_ISDIR(mode)) return "is a directory, not " + std::string(what);
    if (kind == "not a regular file") return "is not a regular file";
    return "is " + kind + ", not a regular file";
}

}  // namespace

std::string byte_limit_text(std::uint64_t bytes) {
    if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
    if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
    if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
    return std::to_string(bytes) + " bytes";
}

std::string regular_file_refusal(const std::filesystem::path &path, std::string_view what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::string("cannot open: ") + std::strerror(errno);
    return refusal_of(st.st_mode, what);
}

Expected<RegularFile, std::string> RegularFile::open(const std::filesystem::path &path, std::string_view what) {
    if (std::string why = regular_file_refusal(path, what); !why.empty()) return unexpected(std::move(why));
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return unexpected(std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return unexpected(std::string("cannot read: ") + std::strerror(err));
    }
    if (std::string why = refusal_of(st.st_mode, what); !why.empty()) {
        ::close(fd);
        return unexpected(std::move(why));
    }
    return RegularFile(fd, static_cast<std::uint64_t>(st.st_size));
}

RegularFile::RegularFile(RegularFile &&other) noexcept : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

Expected<std::string, std::string> RegularFile::read(std::uint64_t offset, std::uint64_t count) const {
    std::string out;
    // Grow as bytes arrive rather than trusting `count`: a caller bounds it, but
    // a file that is shorter than it says costs nothing extra this way.
    constexpr std::uint64_t kChunk = 1 << 20;
    while (out.size() < count) {
        const std::uint64_t want = std::min<std::uint64_t>(kChunk, count - out.size());
        const size_t at = out.size();
        out.resize(at + static_cast<size_t>(want));
        const ssize_t got = ::pread(fd_, out.data() + at, static_cast<size_t>(want), static_cast<off_t>(offset + at));
        if (got < 0) {
            if (errno == EINTR) {
                out.resize(at);
                continue;
            }
            return unexpected(std::string("cannot read: ") + std::strerror(errno));
        }
        out.resize(at + static_cast<size_t>(got));
        if (got == 0) break;
    }
    return out;
}

Expected<std::string, std::string> read_regular_file(const std::filesystem::path &path, std::uint64_t max_bytes,
                                                     std::string_view what) {
    auto file = RegularFile::open(path, what);
    if (!file) return unexpected(file.error());
    auto too_large = [&](std::uint64_t size, bool at_least) {
        return unexpected("is " + std::string(at_least ? "more than " : "") + std::to_string(size) +
                          " bytes, larger than the " + byte_limit_text(max_bytes) + " limit for " + std::string(what));
    };
    if (file->size() > max_bytes) return too_large(file->size(), false);
    try {
        // One byte past the limit tells a file that grew (or reported size 0) from one that fits.
        auto bytes = file->read(0, max_bytes + 1);
        if (bytes && bytes->size() > max_bytes) return too_large(max_bytes, true);
        return bytes;
    } catch (const std::bad_alloc &) {
        return unexpected("cannot read: out of memory for its " + std::to_string(file->size()) + " bytes");
    }
}

}  // namespace tapestry
