#include "installer/verify_guard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "util/fs.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

bool is_bytecode(const fs::path& p) {
  return p.extension() == ".pyc" || p.filename() == "__pycache__" || p.parent_path().filename() == "__pycache__";
}

// The roots less those inside another (the data scheme is often the prefix, which holds the others).
std::vector<fs::path> outermost(std::vector<fs::path> roots) {
  for (auto& r : roots) r = r.lexically_normal();
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  std::vector<fs::path> out;
  for (const auto& r : roots)
    if (std::none_of(out.begin(), out.end(), [&](const fs::path& o) { return util::is_within(r, o); })) out.push_back(r);
  return out;
}

// Calls fn(path, stat) for every entry under the roots, directories before what they hold, never
// following a symlink; fn returns false to skip a directory's contents.
template <class Fn>
void walk(const std::vector<fs::path>& roots, const fs::path& state_dir, Fn fn) {
  for (const auto& root : roots) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
      const fs::path& p = it->path();
      if (p == state_dir || p.filename().string().starts_with(".envfix-txn-")) {
        it.disable_recursion_pending();
        continue;
      }
      struct stat st = {};
      if (::lstat(p.c_str(), &st) != 0) continue;
      if (!fn(p, st)) it.disable_recursion_pending();
    }
  }
}

} // namespace

VerifyGuard::Entry VerifyGuard::Entry::of(const struct stat& st) {
  return {st.st_mode & S_IFMT, st.st_dev, st.st_ino, st.st_size,
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

VerifyGuard VerifyGuard::take(const std::vector<fs::path>& roots, const fs::path& state_dir) {
  VerifyGuard g;
  g.m_roots = outermost(roots);
  g.m_state_dir = state_dir.lexically_normal();
  walk(g.m_roots, g.m_state_dir, [&](const fs::path& p, const struct stat& st) {
    g.m_entries[p.string()] = Entry::of(st);
    return true;
  });
  return g;
}

VerifyGuard::Aftermath VerifyGuard::clean_up(const std::set<std::string>& installed) const {
  Aftermath out;
  std::set<std::string> seen;
  std::vector<fs::path> created;
  walk(m_roots, m_state_dir, [&](const fs::path& p, const struct stat& st) {
    const auto key = p.string();
    seen.insert(key);
    auto it = m_entries.find(key);
    if (it == m_entries.end()) {
      created.push_back(p);
      return false; // removed whole, with whatever it holds
    }
    const Entry now = Entry::of(st);
    // A directory's own times change when an entry is added or removed: its entries tell.
    if (now == it->second || S_ISDIR(st.st_mode) || installed.contains(key)) return true;
    if (is_bytecode(p))
      ::unlink(p.c_str());
    else
      out.changed.push_back(key);
    return true;
  });
  for (const auto& p : created) {
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec)
      out.failed.push_back(fmt::format("{}: {}", p.string(), ec.message()));
    else if (!is_bytecode(p))
      out.removed.push_back(p.string());
  }
  for (const auto& [path, e] : m_entries)
    if (!seen.contains(path) && !installed.contains(path) && !is_bytecode(path) &&
        std::none_of(out.failed.begin(), out.failed.end(), [&](const std::string& f) { return f.starts_with(path); }))
      // Inside a directory the verify step removed whole, only the directory is named.
      if (std::none_of(out.vanished.begin(), out.vanished.end(), [&](const std::string& v) { return util::is_within(path, v); }))
        out.vanished.push_back(path);
  return out;
}

} // namespace envfix::installer
