#include "io/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace tapestry {

std::string write_file_atomically(const std::filesystem::path &path, std::string_view contents) {
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    auto discard = [&] {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
    };
    try {
        {
            std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
            if (!out) return path.string() + ": cannot write " + temporary.string() + ": " + std::strerror(errno);
            out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
            out.flush();
            if (!out) {
                const std::string why = std::strerror(errno);
                out.close();
                discard();
                return path.string() + ": cannot write " + temporary.string() + ": " + why;
            }
        }
        std::error_code ec;
        std::filesystem::rename(temporary, path, ec);
        if (ec) {
            discard();
            return path.string() + ": cannot replace the file: " + ec.message();
        }
        return "";
    } catch (const std::exception &e) {
        discard();
        return path.string() + ": cannot write: " + e.what();
    }
}

}  // namespace tapestry
