#include "installer/wheel_install.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <system_error>

#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "wheel/record.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

namespace {

using util::current_umask;
using util::trim;

// Writes a new file (never replacing one) with exactly `mode`.
Expected<void> write_new(const fs::path& path, std::string_view content, unsigned mode) {
  ENVFIX_TRY_VOID(util::create_directories(path.parent_path()));
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return fail_errno(errno, ErrorCode::io, "cannot create {}: {}", path.string(), std::strerror(errno));
  if (int err = util::write_all(fd.get(), content); err != 0)
    return fail_errno(err, ErrorCode::io, "writing {}: {}", path.string(), std::strerror(err));
  if (::fchmod(fd.get(), mode) != 0) return fail_errno(errno, ErrorCode::io, "chmod {}: {}", path.string(), std::strerror(errno));
  return {};
}

// RECORD paths are relative to the directory holding .dist-info, with '/' (recording installed
// packages spec, "The RECORD file").
std::string record_path(const fs::path& file, const fs::path& root) {
  return file.lexically_normal().lexically_relative(root.lexically_normal()).generic_string();
}

} // namespace

Expected<std::vector<EntryPoint>> parse_entry_points(std::string_view text, std::string_view where) {
  std::vector<EntryPoint> out;
  std::string section;
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    auto eol = text.find('\n', pos);
    auto raw = text.substr(pos, eol == std::string_view::npos ? text.size() - pos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    ++line_no;
    auto line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') return fail(ErrorCode::invalid_input, "{}:{}: bad section header '{}'", where, line_no, line);
      section = trim(std::string_view(line).substr(1, line.size() - 2));
      continue;
    }
    if (section != "console_scripts" && section != "gui_scripts") continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      return fail(ErrorCode::invalid_input, "{}:{}: expected 'name = module:attr', got '{}'", where, line_no, line);
    EntryPoint ep;
    ep.gui = section == "gui_scripts";
    ep.name = trim(std::string_view(line).substr(0, eq));
    auto value = trim(std::string_view(line).substr(eq + 1));
    if (auto br = value.find('['); br != std::string::npos) value = trim(std::string_view(value).substr(0, br));
    auto colon = value.find(':');
    if (colon == std::string::npos)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}:{}: entry point '{}' = '{}' names no callable", where, line_no, ep.name, value),
                        util::msg("a script entry point must look like 'module:function'"));
    ep.module = trim(std::string_view(value).substr(0, colon));
    ep.attr = trim(std::string_view(value).substr(colon + 1));
    if (ep.name.empty() || ep.module.empty() || ep.attr.empty() || ep.name.find('/') != std::string::npos || ep.name == "." ||
        ep.name == "..")
      return fail(ErrorCode::invalid_input, "{}:{}: bad entry point '{}'", where, line_no, line);
    out.push_back(std::move(ep));
  }
  return out;
}

std::string shebang_for(const fs::path& python) {
  auto p = python.string();
  if (p.size() + 3 <= 127 && p.find(' ') == std::string::npos) return "#!" + p + "\n";
  // uv's trampoline: sh re-execs the interpreter on this very file.
  return "#!/bin/sh\n'''exec' '" + p + "' \"$0\" \"$@\"\n' '''\n";
}

std::string launcher_script(const EntryPoint& ep, const fs::path& python) {
  auto dot = ep.attr.find('.');
  std::string import_name = ep.attr.substr(0, dot);
  return shebang_for(python) +
         "# -*- coding: utf-8 -*-\n"
         "import re\n"
         "import sys\n"
         "from " +
         ep.module + " import " + import_name +
         "\n"
         "if __name__ == '__main__':\n"
         "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
         "    sys.exit(" +
         ep.attr + "())\n";
}

namespace {

// A script from the wheel's .data/scripts, rewritten into `rewritten`: #!python → the target
// interpreter (binary distribution format spec, "Installing a wheel"); scripts always get +x (uv's
// behaviour).
struct Rewritten {
  std::string path, hash;
  std::uint64_t size = 0;
};
Expected<Rewritten> rewrite_script(const std::string& staged, const fs::path& rewritten, const fs::path& python,
                                   unsigned exec_mode) {
  auto text = ENVFIX_TRY(util::read_file(staged));
  std::string content;
  if (text.starts_with("#!python")) {
    auto eol = text.find('\n');
    content = shebang_for(python) + (eol == std::string::npos ? "" : text.substr(eol + 1));
  } else {
    content = std::move(text);
  }
  ENVFIX_TRY_VOID(write_new(rewritten, content, exec_mode));
  return Rewritten{rewritten.string(), wheel::RecordEntry::for_content("", content).hash_field(), content.size()};
}

// Metadata written at install time (INSTALLER, REQUESTED, PEP 610 direct_url.json, RECORD: the
// recording installed packages spec), RECORD last, listing every file installed.
Expected<void> write_install_metadata(WheelInstallPlan& plan, std::vector<wheel::RecordEntry> record, const fs::path& gen,
                                      const fs::path& root, unsigned file_mode, const InstallOptions& options) {
  auto add_generated = [&](const std::string& name, const std::string& content) -> Expected<void> {
    fs::path g = gen / "dist-info" / name;
    ENVFIX_TRY_VOID(write_new(g, content, file_mode));
    fs::path dest = plan.dist_info / name;
    plan.moves.push_back({g.string(), dest.lexically_normal().string()});
    record.push_back(wheel::RecordEntry::for_content(record_path(dest, root), content));
    return {};
  };
  ENVFIX_TRY_VOID(add_generated("INSTALLER", options.installer + "\n"));
  if (options.requested) ENVFIX_TRY_VOID(add_generated("REQUESTED", ""));
  if (options.direct_url) ENVFIX_TRY_VOID(add_generated("direct_url.json", *options.direct_url));
  wheel::RecordEntry self;
  self.path = record_path(plan.dist_info / "RECORD", root);
  record.push_back(self);
  std::sort(record.begin(), record.end(),
            [](const wheel::RecordEntry& a, const wheel::RecordEntry& b) { return a.path < b.path; });
  wheel::Record rec{record};
  fs::path g = gen / "dist-info" / "RECORD";
  ENVFIX_TRY_VOID(write_new(g, rec.to_string(), file_mode));
  plan.moves.push_back({g.string(), (plan.dist_info / "RECORD").lexically_normal().string()});
  return {};
}

// The names a console script's wrapper may have in a wheel's .data/scripts (setuptools writes them;
// envfix generates the launcher instead).
std::set<std::string> launcher_names(const std::vector<EntryPoint>& eps) {
  std::set<std::string> names;
  for (const auto& ep : eps) {
    names.insert(ep.name);
    names.insert(ep.name + ".exe");
    names.insert(ep.name + "-script.py");
    names.insert(ep.name + ".pya");
  }
  return names;
}

// Where a .data/<key>/ member goes (the binary distribution format spec); scripts are handled apart.
Expected<fs::path> data_scheme_dir(const wheel::StagedWheel& sw, const InstallTarget& target, std::string_view key,
                                   const std::string& member) {
  if (key == "purelib") return target.purelib;
  if (key == "platlib") return target.platlib;
  if (key == "data") return target.data;
  if (key == "headers") return target.headers_for(sw.name);
  return fail(ErrorCode::invalid_input, "{}: unknown .data scheme in '{}'", sw.wheel.filename().string(), member);
}

// A RECORD row from a staged file's "algo=digest" hash and size.
wheel::RecordEntry record_entry(std::string path, const std::string& hash, std::uint64_t size) {
  wheel::RecordEntry re;
  re.path = std::move(path);
  auto eq = hash.find('=');
  re.hash_algo = hash.substr(0, eq);
  re.hash_b64 = eq == std::string::npos ? "" : hash.substr(eq + 1);
  re.size = size;
  return re;
}

// Where one staged member goes and with which bytes; nullopt for a member not installed as it is (a
// setuptools wrapper of an entry point, the metadata files write_install_metadata regenerates).
struct Placement {
  fs::path dest;
  std::string from, hash;
  std::uint64_t size = 0;
};
Expected<std::optional<Placement>> place(const wheel::StagedWheel& sw, const wheel::StagedFile& f, const InstallTarget& target,
                                         const fs::path& root, const std::set<std::string>& ep_names, const fs::path& gen,
                                         unsigned exec_mode) {
  Placement out{{}, f.staged, f.hash, f.size};
  if (f.member.starts_with(sw.data_dir + "/")) {
    auto rest = std::string_view(f.member).substr(sw.data_dir.size() + 1);
    auto slash = rest.find('/');
    auto key = rest.substr(0, slash);
    auto sub = std::string(rest.substr(slash + 1));
    if (key != "scripts") {
      out.dest = ENVFIX_TRY(data_scheme_dir(sw, target, key, f.member)) / sub;
      return out;
    }
    if (sub.find('/') != std::string::npos)
      return fail(ErrorCode::invalid_input, "{}: '{}': scripts may not be in subdirectories", sw.wheel.filename().string(),
                  f.member);
    if (ep_names.contains(sub)) return std::nullopt; // setuptools wrapper; we generate the launcher
    out.dest = target.scripts / sub;
    auto script = ENVFIX_TRY(rewrite_script(f.staged, gen / "scripts" / sub, target.python, exec_mode));
    out.from = std::move(script.path);
    out.hash = std::move(script.hash);
    out.size = script.size;
    return out;
  }
  out.dest = root / f.member;
  if (f.member.starts_with(sw.dist_info + "/")) {
    auto name = f.member.substr(sw.dist_info.size() + 1);
    if (name == "INSTALLER" || name == "REQUESTED" || name == "direct_url.json") return std::nullopt;
  }
  return out;
}

} // namespace

Expected<WheelInstallPlan> plan_wheel_install(const wheel::StagedWheel& sw, const InstallTarget& target,
                                              const InstallOptions& options) {
  WheelInstallPlan plan;
  plan.name = sw.name;
  plan.version = sw.version;
  const fs::path root = sw.root_is_purelib ? target.purelib : target.platlib;
  if (root.empty())
    return fail(ErrorCode::invalid_input, "install target has no {} directory", sw.root_is_purelib ? "purelib" : "platlib");
  plan.dist_info = root / sw.dist_info;
  const fs::path gen = fs::path(sw.tree.string() + ".gen");
  const unsigned umask_bits = current_umask();
  const unsigned file_mode = 0666 & ~umask_bits;
  const unsigned exec_mode = (0777 & ~umask_bits) | 0111;

  auto eps =
      ENVFIX_TRY(parse_entry_points(sw.entry_points, sw.wheel.filename().string() + ":" + sw.dist_info + "/entry_points.txt"));
  const std::set<std::string> ep_names = launcher_names(eps);

  std::vector<wheel::RecordEntry> record;
  util::ParentResolver resolve;
  std::unordered_map<std::string, std::string> dest_owner; // destination → member, to catch collisions
  std::vector<FileMove> metadata_moves;                    // dist-info files go after the payload
  auto add_move = [&](std::string from, const fs::path& to_path, const std::string& member,
                      std::vector<FileMove>& moves) -> Expected<void> {
    std::string to = to_path.lexically_normal().string();
    // A wheel that writes into .envfix/ could plant a journal (whose cleanup deletes what it names)
    // or replace the environment lock (docs/reliability.md, security model).
    if (target.is_envfix_state(to, resolve(to)))
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("{}: member '{}' would install into envfix's own state ({})", sw.wheel.filename().string(), member, to),
          "the wheel is broken or hostile; nothing was installed");
    auto [it, inserted] = dest_owner.emplace(to, member);
    if (!inserted)
      return fail(ErrorCode::invalid_input, "{}: members '{}' and '{}' both install to {}", sw.wheel.filename().string(),
                  it->second, member, to);
    moves.push_back({std::move(from), std::move(to)});
    return {};
  };

  for (const auto& f : sw.files) {
    auto placed = ENVFIX_TRY(place(sw, f, target, root, ep_names, gen, exec_mode));
    if (!placed) continue;
    record.push_back(record_entry(record_path(placed->dest, root), placed->hash, placed->size));
    const bool metadata = f.member.starts_with(sw.dist_info + "/");
    ENVFIX_TRY_VOID(add_move(std::move(placed->from), placed->dest, f.member, metadata ? metadata_moves : plan.moves));
  }

  // Launchers (the entry points spec,
  // https://packaging.python.org/en/latest/specifications/entry-points/).
  for (const auto& ep : eps) {
    auto text = launcher_script(ep, target.python);
    fs::path g = gen / "launchers" / ep.name;
    ENVFIX_TRY_VOID(write_new(g, text, file_mode | 0555));
    fs::path dest = target.scripts / ep.name;
    const std::string dest_norm = dest.lexically_normal().string();
    dest_owner.erase(dest_norm); // a launcher clobbers a same-named script
    plan.moves.erase(std::remove_if(plan.moves.begin(), plan.moves.end(), [&](const FileMove& m) { return m.to == dest_norm; }),
                     plan.moves.end());
    record.erase(std::remove_if(record.begin(), record.end(),
                                [&](const wheel::RecordEntry& r) { return r.path == record_path(dest, root); }),
                 record.end());
    ENVFIX_TRY_VOID(add_move(g.string(), dest, "entry point " + ep.name, plan.moves));
    record.push_back(wheel::RecordEntry::for_content(record_path(dest, root), text));
  }

  plan.moves.insert(plan.moves.end(), metadata_moves.begin(), metadata_moves.end());
  ENVFIX_TRY_VOID(write_install_metadata(plan, std::move(record), gen, root, file_mode, options));
  // Oddities read from the wheel are facts kept with its unpacked copy (installer/unpacked_cache.hpp), shown as recorded.
  for (const auto& w : sw.warnings) plan.warnings.push_back(util::plain(w));
  return plan;
}

Expected<WheelInstallPlan> install_wheel(const wheel::StagedWheel& staged, const InstallTarget& target,
                                         const InstallOptions& options) {
  auto plan = ENVFIX_TRY(plan_wheel_install(staged, target, options));
  for (const auto& m : plan.moves) {
    ENVFIX_TRY_VOID(util::create_directories(fs::path(m.to).parent_path()));
    // rename() replaces an existing file atomically: processes that mapped the old .so keep it.
    if (::rename(m.from.c_str(), m.to.c_str()) != 0)
      return fail_errno(errno, ErrorCode::io, "installing {}: rename {} → {}: {}", plan.name, m.from, m.to, std::strerror(errno));
  }
  return plan;
}

} // namespace envfix::installer
