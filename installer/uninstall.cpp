#include "installer/uninstall.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_set>
#include <system_error>

#include "installer/wheel_install.hpp"
#include "specs/name.hpp"
#include "specs/rfc822.hpp"
#include "util/fs.hpp"
#include "wheel/record.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

// Paths here are absolute and lexically normal, kept as plain strings: a removal plan has one
// per file (12,000 for torch) and a std::filesystem::path also stores its component list.
std::string normal(const fs::path& p) {
  auto s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// p is root or below it (both normal).
bool is_under(std::string_view p, std::string_view root) {
  if (root == "/") return !p.empty() && p.front() == '/';
  return p.starts_with(root) && (p.size() == root.size() || p[root.size()] == '/');
}

// "/a/b/c" → "/a/b"; "/a" → "/"; "/" → "".
std::string_view parent_of(std::string_view p) {
  if (p.size() <= 1) return {};
  auto slash = p.rfind('/');
  if (slash == std::string_view::npos) return {};
  return slash == 0 ? p.substr(0, 1) : p.substr(0, slash);
}

// The first value of a METADATA header (the one RFC 822 reader, specs/rfc822.hpp); "" when absent.
std::string header_value(std::string_view text, std::string_view key) {
  auto block = specs::read_headers(text);
  const auto* h = block ? block->find(key) : nullptr;
  return h ? h->value : std::string();
}

// Name and version of a dist-info: METADATA first, the folder name (possibly unnormalized) as a
// fallback.
std::pair<std::string, std::string> dist_identity(const fs::path& dist_info) {
  std::string name, version;
  if (auto md = util::read_file(dist_info / "METADATA")) {
    name = header_value(*md, "Name");
    version = header_value(*md, "Version");
  }
  if (name.empty()) {
    auto stem = dist_info.filename().string();
    stem = stem.substr(0, stem.size() - std::string_view(".dist-info").size());
    auto dash = stem.find('-');
    name = stem.substr(0, dash);
    if (version.empty() && dash != std::string::npos) version = stem.substr(dash + 1);
  }
  return {name, version};
}

// What no RECORD may make envfix remove: the interpreter (any name of the same file) and pyvenv.cfg.
// InstallTarget::is_interpreter with the interpreter's inode looked up once per plan.
struct Protected {
  std::string cfg, cfg_resolved;
  bool have_python = false;
  dev_t dev = 0;
  ino_t ino = 0;
  static Protected of(const InstallTarget& t) {
    Protected k;
    if (!t.prefix.empty()) {
      k.cfg = normal(t.prefix / "pyvenv.cfg");
      k.cfg_resolved = util::resolve_parent(k.cfg);
    }
    struct stat st;
    if (!t.python.empty() && ::stat(t.python.c_str(), &st) == 0) {
      k.have_python = true;
      k.dev = st.st_dev;
      k.ino = st.st_ino;
    }
    return k;
  }
  // `st` is lstat(p); a symlink is followed to see whether it names the interpreter.
  [[nodiscard]] bool is_interpreter(const std::string& p, const std::string& rp, struct stat st) const {
    if (!cfg.empty() && (p == cfg || rp == cfg_resolved)) return true;
    if (S_ISLNK(st.st_mode) && ::stat(p.c_str(), &st) != 0) return false;
    return have_python && st.st_dev == dev && st.st_ino == ino;
  }
};

// Absolute, normalized paths named by a dist-info's RECORD (no existence check).
Expected<std::vector<std::string>> record_paths(const fs::path& dist_info) {
  auto text = ENVFIX_TRY(util::read_file(dist_info / "RECORD"));
  auto rec = ENVFIX_TRY(wheel::Record::parse(text, (dist_info / "RECORD").string(), wheel::RecordSource::installed));
  std::vector<std::string> out;
  out.reserve(rec.entries.size());
  const auto base = dist_info.parent_path();
  for (const auto& e : rec.entries) {
    fs::path p(e.path);
    out.push_back(normal(p.is_absolute() ? p : base / p));
  }
  return out;
}

} // namespace

Expected<std::vector<fs::path>> list_dist_infos(const InstallTarget& target) {
  std::vector<fs::path> out;
  // One directory under two names (lib64 -> lib) is listed once: compared by device and inode.
  std::set<std::pair<dev_t, ino_t>> dirs;
  for (const auto& d : {target.purelib, target.platlib}) {
    struct stat st;
    if (d.empty() || (::stat(d.c_str(), &st) == 0 && !dirs.insert({st.st_dev, st.st_ino}).second)) continue;
    std::error_code ec;
    fs::directory_iterator it(d, ec), end;
    if (ec) {
      if (ec == std::errc::no_such_file_or_directory) continue;
      return fail_errno(ec.value(), ErrorCode::io, "listing {}: {}", d.string(), ec.message());
    }
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      auto name = it->path().filename().string();
      if (name.ends_with(".dist-info") && it->is_directory(ec)) out.push_back(it->path().lexically_normal());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::vector<fs::path>> find_dist_infos(const InstallTarget& target, std::string_view name) {
  auto all = ENVFIX_TRY(list_dist_infos(target));
  std::vector<fs::path> out;
  auto want = specs::normalize_name(name);
  for (const auto& d : all)
    if (specs::normalize_name(dist_identity(d).first) == want) out.push_back(d);
  return out;
}

std::vector<fs::path> dirs_left_empty(const std::vector<std::string>& removed, const std::vector<fs::path>& roots,
                                      const std::vector<std::string>& keep) {
  std::unordered_set<std::string_view> gone(removed.begin(), removed.end());
  std::unordered_set<std::string_view> kept_dirs; // views into `keep`
  for (const auto& k : keep)
    for (auto p = parent_of(k); p.size() > 1; p = parent_of(p))
      if (!kept_dirs.insert(p).second) break;
  std::vector<std::string> root_strs;
  for (const auto& r : roots) root_strs.push_back(normal(r));
  std::unordered_set<std::string_view> candidates; // views into `removed`
  for (const auto& r : removed) {
    const std::string* root = nullptr;
    for (const auto& rt : root_strs)
      if (is_under(r, rt) && (!root || rt.size() > root->size())) root = &rt;
    if (!root) continue;
    for (auto p = parent_of(r); p.size() > root->size() && is_under(p, *root); p = parent_of(p))
      if (!candidates.insert(p).second) break;
  }
  // Deepest first, then by name (the output order is part of the journal: keep it stable).
  std::vector<std::string_view> ordered(candidates.begin(), candidates.end());
  auto depth = [](std::string_view s) { return std::count(s.begin(), s.end(), '/'); };
  std::sort(ordered.begin(), ordered.end(), [&](std::string_view a, std::string_view b) {
    auto da = depth(a), db = depth(b);
    return da != db ? da > db : a < b;
  });
  std::vector<fs::path> out;
  std::unordered_set<std::string> emptied;
  for (const auto d : ordered) {
    if (kept_dirs.contains(d)) continue;
    std::error_code ec;
    fs::directory_iterator it(fs::path(d), ec), end;
    if (ec) continue;
    bool empty = true;
    for (; it != end; it.increment(ec)) {
      if (ec) {
        empty = false;
        break;
      }
      auto p = it->path().string(); // d is normal and a listing adds one name: still normal
      if (!gone.contains(p) && !emptied.contains(p)) {
        empty = false;
        break;
      }
    }
    if (!empty) continue;
    emptied.emplace(d);
    out.emplace_back(d);
  }
  return out;
}

// The error for a dist-info without RECORD: the hint names the tool that installed it.
std::unexpected<Error> missing_record(const UninstallPlan& plan) {
  auto installer = util::read_file(plan.dist_info / "INSTALLER");
  std::string who = installer ? std::string(installer->substr(0, installer->find_first_of("\r\n"))) : "";
  std::string hint = who.empty() || who == "pip" ? fmt::format("you might be able to recover with 'pip install --force-reinstall "
                                                               "--no-deps {}=={}'",
                                                               plan.name, plan.version)
                                                 : fmt::format("the package was installed by {}; remove it with that tool", who);
  return make_error(
      ErrorCode::invalid_input,
      fmt::format("cannot uninstall {} {}: RECORD file not found in {}", plan.name, plan.version, plan.dist_info.string()),
      std::move(hint));
}

// Files other installed distributions list (namespace packages, nvidia/ subpackages), each as
// written and with its parent resolved.
Expected<std::unordered_set<std::string>> files_of_others(const fs::path& dist_info, const InstallTarget& target,
                                                          const UninstallOptions& options, util::ParentResolver& resolve) {
  std::set<fs::path> skip_dists{dist_info};
  for (const auto& d : options.also_removing) skip_dists.insert(d.lexically_normal());
  std::unordered_set<std::string> others;
  for (const auto& d : ENVFIX_TRY(list_dist_infos(target))) {
    if (skip_dists.contains(d)) continue;
    if (auto rp = record_paths(d))
      for (auto& p : *rp) {
        others.insert(resolve(p));
        others.insert(std::move(p));
      }
  }
  return others;
}

Expected<UninstallPlan> plan_uninstall(const fs::path& dist_info_in, const InstallTarget& target,
                                       const UninstallOptions& options) {
  UninstallPlan plan;
  plan.dist_info = dist_info_in.lexically_normal();
  std::tie(plan.name, plan.version) = dist_identity(plan.dist_info);
  std::error_code ec;
  if (!fs::is_directory(plan.dist_info, ec))
    return fail(ErrorCode::not_found, "{} is not an installed distribution (no such directory)", plan.dist_info.string());
  if (!fs::exists(plan.dist_info / "RECORD", ec)) return missing_record(plan);
  auto paths = ENVFIX_TRY(record_paths(plan.dist_info));
  std::vector<std::string> roots, resolved_roots;
  for (const auto& r : target.roots()) {
    roots.push_back(normal(r));
    resolved_roots.push_back(normal(fs::weakly_canonical(r, ec)));
  }
  const auto prefix = target.prefix.empty() ? std::string() : normal(target.prefix);
  // Every decision below is also made on the path with its parent resolved: a RECORD row below a
  // symlinked directory (site-packages/demo/vendored -> /elsewhere) names a file elsewhere.
  util::ParentResolver resolve;
  const Protected keep = Protected::of(target);

  const auto others = ENVFIX_TRY(files_of_others(plan.dist_info, target, options, resolve));

  std::set<std::string> files;
  const std::string dist_name = plan.dist_info.filename().string();
  auto add = [&](std::string p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return;
    const std::string rp = resolve(p);
    auto refuse = [&](util::Message why) { plan.warnings.push_back(util::msg("{}: not removing {} ({})", dist_name, p, why)); };
    if (S_ISDIR(st.st_mode)) return refuse(util::msg("a directory, not a file"));
    if (target.is_envfix_state(p, rp)) return refuse(util::msg("envfix's own state"));
    if (keep.is_interpreter(p, rp, st)) return refuse(util::msg("the environment's interpreter or pyvenv.cfg"));
    if (!std::any_of(resolved_roots.begin(), resolved_roots.end(), [&](const std::string& r) { return is_under(rp, r); }))
      return refuse(util::msg("it resolves to {}, outside the install scheme", rp));
    if (others.contains(p) || others.contains(rp)) {
      plan.shared.push_back(p);
      return;
    }
    files.insert(std::move(p));
  };
  for (auto& p : paths) {
    bool inside = std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return is_under(p, r); });
    if (!inside || (target.is_venv && !prefix.empty() && !is_under(p, prefix))) {
      plan.warnings.push_back(
          util::msg("{}: not removing {} (outside the install scheme)", plan.dist_info.filename().string(), p));
      continue;
    }
    // Byte-code of every optimization level and interpreter, plus legacy x.pyc/x.pyo (the recording
    // installed packages spec asks for all of them; pip removes only the current interpreter's).
    if (p.ends_with(".py")) {
      const std::string dir(parent_of(p));
      const std::string stem = p.substr(dir.size() + 1, p.size() - dir.size() - 4);
      add(dir + "/" + stem + ".pyc");
      add(dir + "/" + stem + ".pyo");
      fs::directory_iterator it(dir + "/__pycache__", ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        auto n = it->path().filename().string();
        if (n.starts_with(stem + ".") && n.ends_with(".pyc")) add(normal(it->path()));
      }
    }
    add(std::move(p));
  }
  paths.clear();
  // Everything inside the dist-info goes, listed or not (pip removes the folder).
  for (fs::recursive_directory_iterator it(plan.dist_info, ec), end; !ec && it != end; it.increment(ec))
    if (!it->is_directory(ec)) add(normal(it->path()));
  // Launchers even when RECORD omits them.
  if (auto ep_text = util::read_file(plan.dist_info / "entry_points.txt"); ep_text && !target.scripts.empty()) {
    if (auto eps = parse_entry_points(*ep_text, (plan.dist_info / "entry_points.txt").string()))
      for (const auto& ep : *eps) add(normal(target.scripts / ep.name));
  }
  plan.files.assign(std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
  plan.dirs = dirs_left_empty(plan.files, target.prune_stops());
  return plan;
}

Expected<UninstallPlan> uninstall(const fs::path& dist_info, const InstallTarget& target) {
  auto plan = ENVFIX_TRY(plan_uninstall(dist_info, target));
  for (const auto& f : plan.files)
    if (::unlink(f.c_str()) != 0 && errno != ENOENT)
      return fail_errno(errno, ErrorCode::io, "uninstalling {}: cannot remove {}: {}", plan.name, f, std::strerror(errno));
  for (const auto& d : plan.dirs)
    if (::rmdir(d.c_str()) != 0 && errno != ENOENT)
      return fail_errno(errno, ErrorCode::io, "uninstalling {}: cannot remove directory {}: {}", plan.name, d.string(),
                        std::strerror(errno));
  return plan;
}

} // namespace envfix::installer
