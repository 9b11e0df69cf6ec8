#include "installer/uninstall.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <system_error>

#include "installer/wheel_install.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"
#include "wheel/record.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

bool exists_nofollow(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec;
}

bool is_under(const fs::path& p, const fs::path& root) {
  auto pi = p.begin();
  for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi) {
    if (ri->empty()) continue; // trailing separator
    if (pi == p.end() || *pi != *ri) return false;
  }
  return true;
}

std::string header_value(std::string_view text, std::string_view key) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto eol = text.find('\n', pos);
    auto line = text.substr(pos, eol == std::string_view::npos ? text.size() - pos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto k = line.substr(0, colon);
    if (k.size() == key.size() && std::equal(k.begin(), k.end(), key.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      auto v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return std::string(v);
    }
  }
  return {};
}

// Name and version of a dist-info: METADATA first, the folder name as a fallback (R7.1).
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

// Absolute, normalized paths named by a dist-info's RECORD (no existence check).
Expected<std::vector<fs::path>> record_paths(const fs::path& dist_info) {
  auto text = ENVFIX_TRY(util::read_file(dist_info / "RECORD"));
  auto rec = ENVFIX_TRY(wheel::Record::parse(text, (dist_info / "RECORD").string()));
  std::vector<fs::path> out;
  const auto base = dist_info.parent_path();
  for (const auto& e : rec.entries) {
    fs::path p(e.path);
    out.push_back((p.is_absolute() ? p : base / p).lexically_normal());
  }
  return out;
}

} // namespace

Expected<std::vector<fs::path>> list_dist_infos(const InstallTarget& target) {
  std::vector<fs::path> out;
  std::set<fs::path> dirs;
  for (const auto& d : {target.purelib, target.platlib}) {
    if (d.empty() || !dirs.insert(d.lexically_normal()).second) continue;
    std::error_code ec;
    fs::directory_iterator it(d, ec), end;
    if (ec) {
      if (ec == std::errc::no_such_file_or_directory) continue;
      return fail(ErrorCode::io, "listing {}: {}", d.string(), ec.message());
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

std::vector<fs::path> dirs_left_empty(const std::vector<fs::path>& removed, const std::vector<fs::path>& roots,
                                      const std::vector<fs::path>& keep) {
  std::set<fs::path> gone(removed.begin(), removed.end());
  std::set<fs::path> kept_dirs;
  for (const auto& k : keep)
    for (auto p = k.lexically_normal().parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
      if (!kept_dirs.insert(p).second) break;
  std::set<fs::path> candidates;
  for (const auto& r : removed) {
    const fs::path* root = nullptr;
    for (const auto& rt : roots)
      if (is_under(r, rt) && (!root || rt.native().size() > root->native().size())) root = &rt;
    if (!root) continue;
    for (auto p = r.parent_path(); p.native().size() > root->lexically_normal().native().size() && is_under(p, *root);
         p = p.parent_path())
      if (!candidates.insert(p).second) break;
  }
  std::vector<fs::path> ordered(candidates.begin(), candidates.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  std::vector<fs::path> out;
  std::set<fs::path> emptied;
  for (const auto& d : ordered) {
    if (kept_dirs.contains(d)) continue;
    std::error_code ec;
    fs::directory_iterator it(d, ec), end;
    if (ec) continue;
    bool empty = true;
    for (; it != end; it.increment(ec)) {
      if (ec) { empty = false; break; }
      auto p = it->path().lexically_normal();
      if (!gone.contains(p) && !emptied.contains(p)) { empty = false; break; }
    }
    if (!empty) continue;
    emptied.insert(d);
    out.push_back(d);
  }
  return out;
}

Expected<UninstallPlan> plan_uninstall(const fs::path& dist_info_in, const InstallTarget& target,
                                       const UninstallOptions& options) {
  UninstallPlan plan;
  plan.dist_info = dist_info_in.lexically_normal();
  std::tie(plan.name, plan.version) = dist_identity(plan.dist_info);
  std::error_code ec;
  if (!fs::is_directory(plan.dist_info, ec))
    return fail(ErrorCode::not_found, "{} is not an installed distribution (no such directory)",
                plan.dist_info.string());
  if (!fs::exists(plan.dist_info / "RECORD", ec)) {
    auto installer = util::read_file(plan.dist_info / "INSTALLER");
    std::string who = installer ? std::string(installer->substr(0, installer->find_first_of("\r\n"))) : "";
    std::string hint = who.empty() || who == "pip"
                           ? fmt::format("you might be able to recover with 'pip install --force-reinstall "
                                         "--no-deps {}=={}'", plan.name, plan.version)
                           : fmt::format("the package was installed by {}; remove it with that tool", who);
    return make_error(ErrorCode::invalid_input,
                      fmt::format("cannot uninstall {} {}: RECORD file not found in {}", plan.name,
                                  plan.version, plan.dist_info.string()),
                      hint);
  }
  auto paths = ENVFIX_TRY(record_paths(plan.dist_info));
  const auto roots = target.roots();
  const auto prefix = target.prefix.lexically_normal();

  // Files other installed distributions list (namespace packages, nvidia/ subpackages).
  std::set<fs::path> skip_dists{plan.dist_info};
  for (const auto& d : options.also_removing) skip_dists.insert(d.lexically_normal());
  std::set<fs::path> others;
  for (const auto& d : ENVFIX_TRY(list_dist_infos(target))) {
    if (skip_dists.contains(d)) continue;
    if (auto rp = record_paths(d)) others.insert(rp->begin(), rp->end());
  }

  std::set<fs::path> files;
  auto add = [&](const fs::path& p) {
    if (!exists_nofollow(p)) return;
    if (others.contains(p)) {
      plan.shared.push_back(p);
      return;
    }
    files.insert(p);
  };
  for (const auto& p : paths) {
    bool inside = std::any_of(roots.begin(), roots.end(), [&](const fs::path& r) { return is_under(p, r); });
    if (!inside || (target.is_venv && !prefix.empty() && !is_under(p, prefix))) {
      plan.warnings.push_back(fmt::format("{}: not removing {} (outside the install scheme)",
                                          plan.dist_info.filename().string(), p.string()));
      continue;
    }
    add(p);
    // Byte-code of every optimization level and interpreter, plus legacy x.pyc/x.pyo (R7.3).
    if (p.extension() == ".py") {
      auto stem = p.stem().string();
      add(p.parent_path() / (stem + ".pyc"));
      add(p.parent_path() / (stem + ".pyo"));
      fs::directory_iterator it(p.parent_path() / "__pycache__", ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        auto n = it->path().filename().string();
        if (n.starts_with(stem + ".") && n.ends_with(".pyc")) add(it->path().lexically_normal());
      }
    }
  }
  // Everything inside the dist-info goes, listed or not (pip removes the folder).
  for (fs::recursive_directory_iterator it(plan.dist_info, ec), end; !ec && it != end; it.increment(ec))
    if (!it->is_directory(ec)) add(it->path().lexically_normal());
  // Launchers even when RECORD omits them.
  if (auto ep_text = util::read_file(plan.dist_info / "entry_points.txt"); ep_text && !target.scripts.empty()) {
    if (auto eps = parse_entry_points(*ep_text, (plan.dist_info / "entry_points.txt").string()))
      for (const auto& ep : *eps) add((target.scripts / ep.name).lexically_normal());
  }
  plan.files.assign(files.begin(), files.end());
  plan.dirs = dirs_left_empty(plan.files, target.prune_stops());
  return plan;
}

Expected<UninstallPlan> uninstall(const fs::path& dist_info, const InstallTarget& target) {
  auto plan = ENVFIX_TRY(plan_uninstall(dist_info, target));
  for (const auto& f : plan.files)
    if (::unlink(f.c_str()) != 0 && errno != ENOENT)
      return fail(ErrorCode::io, "uninstalling {}: cannot remove {}: {}", plan.name, f.string(), std::strerror(errno));
  for (const auto& d : plan.dirs)
    if (::rmdir(d.c_str()) != 0 && errno != ENOENT)
      return fail(ErrorCode::io, "uninstalling {}: cannot remove directory {}: {}", plan.name, d.string(),
                  std::strerror(errno));
  return plan;
}

} // namespace envfix::installer
