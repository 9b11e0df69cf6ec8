#include "probe/installed.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/text.hpp"
#include "specs/metadata.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "wheel/wheel_info.hpp"

namespace envfix::probe {

namespace fs = std::filesystem;

std::string InstalledDist::normalized_name() const { return specs::normalize_name(name); }

namespace {

bool is_shared_object(std::string_view path) {
  auto slash = path.rfind('/');
  auto base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.ends_with(".so") || base.find(".so.") != std::string_view::npos;
}

std::string read_trimmed(const fs::path& p) {
  auto t = util::read_file(p);
  return t ? std::string(trim(*t)) : std::string();
}

} // namespace

Expected<DistInfoName> parse_dist_info_dirname(std::string_view dirname) {
  std::string_view stem = dirname;
  if (!stem.ends_with(".dist-info")) return fail(ErrorCode::invalid_input, "not a .dist-info folder name: '{}'", dirname);
  stem.remove_suffix(10);
  auto dash = stem.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == stem.size())
    return fail(ErrorCode::invalid_input, "dist-info folder name lacks '<name>-<version>': '{}'", dirname);
  return DistInfoName{std::string(stem.substr(0, dash)), std::string(stem.substr(dash + 1))};
}

Expected<InstalledDist> read_dist_info(const fs::path& dir, std::vector<util::Message>* notes) {
  InstalledDist d;
  d.dist_info = dir;
  auto dn = parse_dist_info_dirname(dir.filename().string());
  auto meta_text = util::read_file(dir / "METADATA");
  bool from_metadata = false;
  if (meta_text) {
    auto fields = specs::parse_rfc822(*meta_text);
    if (fields) {
      std::string name, version;
      for (auto& [k, v] : *fields) {
        auto key = util::lower(k);
        if (key == "name" && name.empty())
          name = v;
        else if (key == "version" && version.empty())
          version = v;
        else if (key == "requires-dist") {
          auto r = specs::Requirement::parse(v);
          if (r)
            d.requires_dist.push_back(std::move(*r));
          else if (notes)
            notes->push_back(
                util::msg("{}: Requires-Dist '{}' skipped: {}", (dir / "METADATA").string(), v, r.error().said_message()));
        }
      }
      if (auto ver = specs::Version::parse(version); ver && !name.empty()) {
        d.name = name;
        d.version = *ver;
        from_metadata = true;
      }
    }
  }
  if (!from_metadata) {
    if (!dn)
      return std::unexpected(Error::made(
          ErrorCode::invalid_input, util::msg("{}: no readable METADATA and no version in the folder name", dir.string()),
          {dn.error().said_message()}, util::msg("reinstall the package: pip install --force-reinstall <name>")));
    auto ver = specs::Version::parse(dn->version);
    if (!ver) return std::unexpected(std::move(ver.error()).context(util::msg("{}: bad version", dir.string())));
    d.name = dn->name;
    d.version = *ver;
    if (notes) notes->push_back(util::msg("{}: METADATA missing or unreadable; name and version from the folder", dir.string()));
  }
  d.installer = read_trimmed(dir / "INSTALLER");
  std::error_code ec;
  d.requested = fs::exists(dir / "REQUESTED", ec);
  d.has_record = fs::is_regular_file(dir / "RECORD", ec);
  if (auto du = util::read_file(dir / "direct_url.json")) d.direct_url = *du;
  return d;
}

std::vector<InstalledDist> scan_site_directory(const fs::path& site_dir, std::vector<util::Message>* notes) {
  std::vector<InstalledDist> out;
  std::error_code ec;
  fs::directory_iterator it(site_dir, ec), end;
  if (ec) {
    if (notes) notes->push_back(util::msg("cannot list {}: {}", site_dir.string(), ec.message()));
    return out;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    auto name = it->path().filename().string();
    if (!name.ends_with(".dist-info") || !it->is_directory(ec)) continue;
    auto d = read_dist_info(it->path(), notes);
    if (d)
      out.push_back(std::move(*d));
    else if (notes)
      notes->push_back(d.error().said_message());
  }
  std::sort(out.begin(), out.end(), [](const InstalledDist& a, const InstalledDist& b) {
    auto na = a.normalized_name(), nb = b.normalized_name();
    if (na != nb) return na < nb;
    if (a.version != b.version) return a.version < b.version;
    return a.dist_info < b.dist_info;
  });
  return out;
}

std::vector<std::vector<const InstalledDist*>> find_duplicates(const std::vector<InstalledDist>& dists) {
  std::map<std::string, std::vector<const InstalledDist*>> by_name;
  for (const auto& d : dists) by_name[d.normalized_name()].push_back(&d);
  std::vector<std::vector<const InstalledDist*>> out;
  for (auto& [n, v] : by_name)
    if (v.size() > 1) out.push_back(std::move(v));
  return out;
}

std::set<std::string> requirement_closure(const std::vector<InstalledDist>& dists, const std::vector<std::string>& roots) {
  std::map<std::string, const InstalledDist*> by_name;
  for (const auto& d : dists) by_name.emplace(d.normalized_name(), &d);
  std::set<std::string> seen;
  std::vector<std::string> todo;
  for (const auto& r : roots) todo.push_back(specs::normalize_name(r));
  while (!todo.empty()) {
    auto n = std::move(todo.back());
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    if (auto it = by_name.find(n); it != by_name.end())
      for (const auto& q : it->second->requires_dist) todo.push_back(q.normalized_name());
  }
  return seen;
}

Expected<std::vector<InstalledObject>> installed_shared_objects(const InstalledDist& dist) {
  std::vector<InstalledObject> out;
  if (!dist.has_record && !dist.conda) return out;
  auto text = dist.has_record ? ENVFIX_TRY(util::read_file(dist.dist_info / "RECORD")) : std::string();
  // An installed RECORD is read as uninstall reads it (wheel/record.hpp, RecordSource::installed).
  auto rows = wheel::Record::parse(text, (dist.dist_info / "RECORD").string(), wheel::RecordSource::installed);
  if (!rows) return std::unexpected(std::move(rows.error()));
  auto site = dist.dist_info.parent_path();
  for (auto& r : rows->entries) {
    if (!is_shared_object(r.path)) continue;
    fs::path p = fs::path(r.path).is_absolute() ? fs::path(r.path) : (site / r.path).lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) out.push_back({std::move(p), std::move(r)});
  }
  // conda's kernels live in $PREFIX/lib, listed by its conda-meta record, not by RECORD.
  if (dist.conda)
    for (const auto& p : dist.conda->prefix_objects) {
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) continue;
      wheel::RecordEntry e;
      e.path = p.string();
      e.size = fs::file_size(p, ec);
      out.push_back({p, std::move(e)});
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path == b.path; }), out.end());
  return out;
}

std::vector<std::string> installed_platform_tags(const InstalledDist& dist) {
  std::vector<std::string> out;
  auto text = util::read_file(dist.dist_info / "WHEEL");
  if (!text) return out;
  auto info = wheel::WheelInfo::parse(*text, (dist.dist_info / "WHEEL").string());
  if (!info) return out;
  for (const auto& t : info->tags)
    if (std::find(out.begin(), out.end(), t.platform) == out.end()) out.push_back(t.platform);
  return out;
}

std::string direct_url_of(const InstalledDist& dist) {
  if (!dist.direct_url) return {};
  // Checked, not caught: a damaged direct_url.json (PEP 610) is an unknown origin, never an abort.
  const auto j = nlohmann::json::parse(*dist.direct_url, nullptr, false);
  if (!j.is_object()) return {};
  const auto url = j.find("url");
  return url != j.end() && url->is_string() ? url->get<std::string>() : std::string();
}

} // namespace envfix::probe
