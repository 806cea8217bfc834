// Reading a file a user named, with bounds: only regular files are read (a FIFO,
// a device, a directory or a socket is refused by what it is, and opening never
// blocks), and never more bytes than the caller allows. Every file the engine
// reads goes through here (docs/formats.md, "Files Tapestry refuses to read").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/expected.h"

namespace tapestry {

inline constexpr std::uint64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

// Why `path` cannot be read as a regular file, or "" when it can (it exists and
// is a regular file, following symbolic links). The reason does not start with
// the path: callers put their own name for the file in front. A directory reads
// "is a directory, not <what>" (e.g. what = "a project file"); anything else
// that is not a regular file "is a FIFO, not a regular file" (a character
// device, a block device, a socket). A missing file reads "cannot open: <errno text>".
std::string regular_file_refusal(const std::filesystem::path &path, std::string_view what);

// An open regular file, read by offset. Never blocks on open; refuses, as
// regular_file_refusal says, anything that is not a regular file.
class RegularFile {
public:
    // The reason (without the path) on failure.
    static Expected<RegularFile, std::string> open(const std::filesystem::path &path, std::string_view what);
    RegularFile(RegularFile &&other) noexcept;
    RegularFile &operator=(RegularFile &&) = delete;
    RegularFile(const RegularFile &) = delete;
    ~RegularFile();

    // The size when it was opened. Files such as those under /proc report 0.
    std::uint64_t size() const { return size_; }

    // Up to `count` bytes from `offset`: fewer only at the end of the file.
    // The reason on a read error.
    Expected<std::string, std::string> read(std::uint64_t offset, std::uint64_t count) const;

private:
    explicit RegularFile(int fd, std::uint64_t size) : fd_(fd), size_(size) {}
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

// The whole of the regular file `path` if it holds at most `max_bytes` bytes:
// its size is checked before anything is read, and the read stops after
// `max_bytes` (a file that grows, or one that reports size 0, cannot go past
// it). Refusals (without the path): as RegularFile::open, or "is N bytes,
// larger than the <limit> limit for <what>".
Expected<std::string, std::string> read_regular_file(const std::filesystem::path &path, std::uint64_t max_bytes,
                                                     std::string_view what);

// "1 GiB", "64 MiB", "12345 bytes": a byte limit as a user reads it.
std::string byte_limit_text(std::uint64_t bytes);

}  // namespace tapestry
