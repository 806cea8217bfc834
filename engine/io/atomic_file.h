// Writing a file so that readers see either the old contents or the new, never a
// torn one: write "<path>.tmp", flush, then rename over the target.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tapestry {

// Returns an error message that starts with the path ("<path>: cannot write …"),
// or "" on success. The temporary file is removed on failure. Never throws.
std::string write_file_atomically(const std::filesystem::path &path, std::string_view contents);

}  // namespace tapestry
