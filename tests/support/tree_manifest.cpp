#include "tests/support/tree_manifest.hpp"

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

#include "util/sha256.hpp"

namespace envfix::testing {

namespace fs = std::filesystem;

Manifest tree_manifest(const fs::path& root, const std::vector<std::string>& skip) {
  Manifest m;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto rel = it->path().lexically_relative(root).generic_string();
    if (std::find(skip.begin(), skip.end(), rel) != skip.end()) {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0) {
      m[rel] = "vanished";
      continue;
    }
    const auto mode = fmt::format("{:04o}", st.st_mode & 07777);
    if (S_ISLNK(st.st_mode))
      m[rel] = "link " + fs::read_symlink(it->path()).string();
    else if (S_ISDIR(st.st_mode))
      m[rel] = "dir " + mode;
    else if (S_ISREG(st.st_mode))
      m[rel] = "file " + mode + " " + util::sha256_file_hex(it->path()).value_or("unreadable");
    else
      m[rel] = fmt::format("other {:o}", st.st_mode);
  }
  return m;
}

std::string manifest_diff(const Manifest& a, const Manifest& b) {
  std::string out;
  int n = 0;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out += fmt::format("  only before: {} ({})\n", k, v), ++n;
    else if (it->second != v)
      out += fmt::format("  changed: {}: {} -> {}\n", k, v, it->second), ++n;
    if (n > 8) return out + "  …\n";
  }
  for (const auto& [k, v] : b)
    if (!a.contains(k)) {
      out += fmt::format("  only after: {} ({})\n", k, v);
      if (++n > 8) return out + "  …\n";
    }
  return out;
}

} // namespace envfix::testing
