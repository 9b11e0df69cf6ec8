#pragma once
// Test support: real wheels written by Python's zipfile (tests/installer/gen_wheel.py, through
// tests/support/wheel_writer.py), and a manifest of a directory tree (path → type, mode, sha256)
// for byte-identical comparisons.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"

namespace envfix::test {

namespace fs = std::filesystem;

struct Member {
  std::string name;
  std::string content;
  unsigned mode = 0644;
  bool symlink = false;
  bool in_record = true;
  bool dup = false;
  bool utf8 = false;
  std::optional<std::string> record_hash;
  std::optional<std::uint64_t> zeros;
};

struct WheelSpec {
  std::string name, version;
  std::string filename; // default {name_}-{version}-py3-none-any.whl
  std::optional<std::string> dist_info;
  bool root_is_purelib = true;
  std::string wheel_version = "1.0";
  std::string entry_points;
  std::vector<std::string> requires_dist;
  std::vector<Member> members;
  std::vector<std::string> record_extra;
  bool no_record = false;
  std::optional<std::pair<std::string, std::string>> utf8_patch;

  [[nodiscard]] std::string stem() const {
    std::string n = name;
    for (auto& c : n)
      if (c == '-') c = '_';
    return n + "-" + version;
  }
  [[nodiscard]] std::string data_dir() const { return stem() + ".data"; }
};

inline fs::path temp_dir(const std::string& prefix) {
  auto d = util::make_temp_dir({}, prefix);
  REQUIRE(d);
  return *d;
}

inline fs::path make_wheel(const WheelSpec& spec, const fs::path& outdir) {
  nlohmann::json j;
  j["name"] = spec.name;
  j["version"] = spec.version;
  if (spec.dist_info) j["dist_info"] = *spec.dist_info;
  j["root_is_purelib"] = spec.root_is_purelib;
  j["wheel_version"] = spec.wheel_version;
  j["entry_points"] = spec.entry_points;
  j["requires"] = spec.requires_dist;
  j["record_extra"] = spec.record_extra;
  j["no_record"] = spec.no_record;
  if (spec.utf8_patch) j["utf8_patch"] = {spec.utf8_patch->first, spec.utf8_patch->second};
  j["members"] = nlohmann::json::array();
  for (const auto& m : spec.members) {
    nlohmann::json jm{{"name", m.name},           {"content", m.content}, {"mode", m.mode}, {"symlink", m.symlink},
                      {"in_record", m.in_record}, {"dup", m.dup},         {"utf8", m.utf8}};
    if (m.record_hash) jm["record_hash"] = *m.record_hash;
    if (m.zeros) jm["zeros"] = *m.zeros;
    j["members"].push_back(jm);
  }
  std::string filename = spec.filename.empty() ? spec.stem() + "-py3-none-any.whl" : spec.filename;
  auto out = outdir / filename;
  auto spec_file = outdir / (filename + ".json");
  REQUIRE(util::write_file_atomic(spec_file, j.dump()));
  auto script = fs::path(ENVFIX_SOURCE_DIR) / "tests" / "installer" / "gen_wheel.py";
  auto r = util::run_process({"python3", script.string(), spec_file.string(), out.string()});
  REQUIRE(r);
  INFO(r->err);
  REQUIRE(r->ok());
  fs::remove(spec_file);
  return out;
}

// A wheel with every kind of content the installer handles: nested packages, an executable file,
// a top-level module, .data/{scripts,data,headers,purelib}, console and GUI entry points.
inline WheelSpec demo_spec(int i, const std::string& version = "1.0", int extra_files = 0) {
  WheelSpec s;
  s.name = "demo-pkg-" + std::to_string(i);
  s.version = version;
  auto pkg = "demo_pkg_" + std::to_string(i);
  auto mod = "demo_mod_" + std::to_string(i);
  s.members = {
      {pkg + "/__init__.py", "VERSION = '" + version + "'\n"},
      {pkg + "/cli.py", "def main():\n    print('hello from " + pkg + " " + version + "')\n    return 0\n"},
      {pkg + "/sub/__init__.py", ""},
      {pkg + "/sub/deep/__init__.py", "X = 1\n"},
      {pkg + "/sub/deep/data.json", "{\"v\": \"" + version + "\"}\n"},
      {pkg + "/tool.sh", "#!/bin/sh\necho tool " + version + "\n", 0755},
      {mod + ".py", "NAME = '" + mod + "'\n"},
      {s.data_dir() + "/scripts/" + pkg + "-script", "#!python\nimport " + pkg + "\nprint('script', " + pkg + ".VERSION)\n",
       0755},
      {s.data_dir() + "/data/share/" + pkg + "/readme.txt", "readme " + version + "\n"},
      {s.data_dir() + "/headers/" + pkg + ".h", "#define DEMO " + std::to_string(i) + "\n"},
      {s.data_dir() + "/purelib/" + pkg + "_extra/__init__.py", "EXTRA = True\n"},
  };
  if (version != "1.0")
    s.members.push_back({pkg + "/only_in_" + version + ".py", "NEW = 1\n"});
  else
    s.members.push_back({pkg + "/only_in_1.py", "OLD = 1\n"});
  for (int k = 0; k < extra_files; ++k)
    s.members.push_back({pkg + "/many/f" + std::to_string(k) + ".py", "K = " + std::to_string(k) + "  # " + version + "\n"});
  s.entry_points = "[console_scripts]\ndemo-" + std::to_string(i) + " = " + pkg + ".cli:main\n\n[gui_scripts]\ndemo-gui-" +
                   std::to_string(i) + " = " + pkg + ".cli:main\n";
  return s;
}

// path (relative, generic) → "f <mode> <sha256>", "d <mode>" or "l <target>"; `skip` names
// top-level entries to leave out (".envfix").
inline std::map<std::string, std::string> manifest(const fs::path& root, const std::vector<std::string>& skip = {".envfix"}) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    auto rel = it->path().lexically_relative(root).generic_string();
    auto top = rel.substr(0, rel.find('/'));
    if (std::find(skip.begin(), skip.end(), top) != skip.end()) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    struct stat st;
    REQUIRE(::lstat(it->path().c_str(), &st) == 0);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    if (S_ISLNK(st.st_mode)) {
      out[rel] = "l " + fs::read_symlink(it->path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      out[rel] = std::string("d ") + mode;
    } else {
      auto h = util::sha256_file_hex(it->path());
      REQUIRE(h);
      out[rel] = std::string("f ") + mode + " " + *h;
    }
  }
  return out;
}

// Differences between two manifests, for failure messages.
inline std::string manifest_diff(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::string out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out += "- " + k + " " + v + "\n";
    else if (it->second != v)
      out += "~ " + k + " " + v + " -> " + it->second + "\n";
  }
  for (const auto& [k, v] : b)
    if (!a.contains(k)) out += "+ " + k + " " + v + "\n";
  return out;
}

} // namespace envfix::test
