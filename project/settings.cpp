#include "project/settings.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::project {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The first `name` in `dir` or a folder above it, as uv finds its project files.
std::optional<fs::path> find_upwards(fs::path dir, const std::string& name) {
  for (int depth = 0; !dir.empty() && depth < 64; ++depth) {
    if (is_file(dir / name)) return dir / name;
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

Expected<toml::table> parse_toml(const fs::path& file) {
  auto text = ENVFIX_TRY(util::read_file(file));
  try {
    return toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    return make_error(ErrorCode::invalid_input,
                      util::msg("{} is not valid TOML: {}", file.string(), std::string(e.description())),
                      util::msg("fix the file, or run with --no-config to read no configuration file"));
  }
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& w : util::split(s, ' '))
    for (const auto& part : util::split(w, '\n'))
      if (auto t = util::trim(part); !t.empty()) out.emplace_back(t);
  return out;
}

// A string, or an array of strings, of `table[key]`; an error naming the file for anything else.
Expected<std::vector<std::string>> strings_of(const toml::table& table, std::string_view key, const fs::path& file) {
  const auto* node = table.get(key);
  std::vector<std::string> out;
  if (!node) return out;
  if (auto s = node->value<std::string>()) return std::vector<std::string>{*s};
  if (const auto* a = node->as_array()) {
    for (const auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s) break;
      out.push_back(*s);
    }
    if (out.size() == a->size()) return out;
  }
  return make_error(ErrorCode::invalid_input, util::msg("{}: {} must be a string or a list of strings", file.string(), key));
}

// --- envfix.toml ---

Expected<void> merge_envfix(const fs::path& file, EnvfixConfig& into) {
  const auto doc = ENVFIX_TRY(parse_toml(file));
  const std::map<std::string, std::optional<Setting> EnvfixConfig::*> single = {{"index-url", &EnvfixConfig::index_url},
                                                                                {"mirror", &EnvfixConfig::mirror},
                                                                                {"cache-dir", &EnvfixConfig::cache_dir},
                                                                                {"channel", &EnvfixConfig::channel},
                                                                                {"variant", &EnvfixConfig::variant}};
  const std::map<std::string, std::vector<Setting> EnvfixConfig::*> lists = {{"extra-index-url", &EnvfixConfig::extra_index_urls},
                                                                             {"find-links", &EnvfixConfig::find_links}};
  for (const auto& [key, node] : doc) {
    const std::string k(key.str());
    const auto values = ENVFIX_TRY(strings_of(doc, k, file));
    if (auto s = single.find(k); s != single.end()) {
      if (values.size() != 1)
        return make_error(ErrorCode::invalid_input, util::msg("{}: {} must be one string", file.string(), k));
      auto& slot = into.*(s->second);
      if (!slot) slot = Setting{values.front(), file.string()}; // the project's file is read first and wins
    } else if (auto l = lists.find(k); l != lists.end()) {
      auto& slot = into.*(l->second);
      if (slot.empty())
        for (const auto& v : values) slot.push_back({v, file.string()});
    } else {
      return make_error(ErrorCode::invalid_input, util::msg("{}: unknown setting {}", file.string(), k),
                        util::msg("envfix.toml takes index-url, extra-index-url, mirror, find-links, cache-dir, "
                                  "channel and variant (README.md, Configuration)"));
    }
  }
  into.files.push_back(file.string());
  return {};
}

// --- uv ---

// uv's index settings of one table (uv.toml's top level or its [pip] table, pyproject's [tool.uv]).
Expected<void> uv_table(const toml::table& t, const fs::path& file, ToolIndexes& into) {
  const auto set_index = [&](const std::string& url) {
    if (!into.index) into.index = Setting{url, file.string()};
  };
  for (const auto& url : ENVFIX_TRY(strings_of(t, "index-url", file))) set_index(url);
  if (const auto* indexes = t.get("index") ? t.get("index")->as_array() : nullptr)
    for (const auto& e : *indexes)
      if (const auto* idx = e.as_table()) {
        const auto url = (*idx)["url"].value<std::string>();
        if (!url) continue;
        if ((*idx)["default"].value_or(false))
          set_index(*url);
        else
          into.extra.push_back({*url, file.string()});
      }
  for (const auto& url : ENVFIX_TRY(strings_of(t, "extra-index-url", file))) into.extra.push_back({url, file.string()});
  return {};
}

Expected<void> uv_file(const fs::path& file, ToolIndexes& into) {
  auto parsed = parse_toml(file);
  // A project's pyproject.toml is its own business: one envfix cannot read holds no uv settings for
  // it, and stops no command (a broken uv.toml does, as it stops uv).
  if (!parsed && file.filename() == "pyproject.toml") return {};
  const auto doc = ENVFIX_TRY(std::move(parsed));
  const toml::table* root = &doc;
  if (file.filename() == "pyproject.toml") {
    root = doc["tool"]["uv"].as_table();
    if (!root) return {};
  }
  if (const auto* pip = root->get("pip") ? root->get("pip")->as_table() : nullptr) ENVFIX_TRY_VOID(uv_table(*pip, file, into));
  return uv_table(*root, file, into);
}

Expected<ToolIndexes> uv_indexes(const Places& at) {
  ToolIndexes out{Tool::uv, {}, {}};
  for (const auto e : {util::Env::uv_default_index, util::Env::uv_index_url})
    if (auto v = util::get_env(e); v && !v->empty() && !out.index) out.index = Setting{*v, std::string(util::env_name(e))};
  for (const auto e : {util::Env::uv_index, util::Env::uv_extra_index_url})
    for (auto& w : split_words(util::get_env(e).value_or(""))) {
      // UV_INDEX entries may be named: "pytorch=https://…".
      const auto eq = w.find('=');
      if (eq != std::string::npos && w.find("://") > eq) w = w.substr(eq + 1);
      out.extra.push_back({w, std::string(util::env_name(e))});
    }
  if (!at.read_files || util::get_env(util::Env::uv_no_config)) return out;
  // The project's file (uv.toml before a pyproject.toml with [tool.uv] in the same folder), the user's,
  // then the system's: a setting read first stays.
  std::vector<fs::path> files;
  for (fs::path dir = at.cwd; !dir.empty(); dir = dir.parent_path()) {
    if (is_file(dir / "uv.toml")) {
      files.push_back(dir / "uv.toml");
      break;
    }
    if (is_file(dir / "pyproject.toml")) {
      files.push_back(dir / "pyproject.toml");
      break;
    }
    if (dir == dir.root_path()) break;
  }
  if (!at.config_home.empty() && is_file(at.config_home / "uv/uv.toml")) files.push_back(at.config_home / "uv/uv.toml");
  if (is_file("/etc/uv/uv.toml")) files.emplace_back("/etc/uv/uv.toml");
  for (const auto& f : files) ENVFIX_TRY_VOID(uv_file(f, out));
  return out;
}

// --- pip ---

// pip.conf as configparser reads it: [sections], `key = value` or `key: value`, indented lines going
// on with the value, `#`/`;` comments. Keys as pip compares them (`index_url` is `index-url`).
std::map<std::string, std::map<std::string, std::string>> read_ini(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::string section, key;
  for (const auto& raw : util::split(text, '\n')) {
    const std::string line = std::string(util::trim(raw));
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool continued = (raw.front() == ' ' || raw.front() == '\t') && !key.empty();
    if (continued) {
      out[section][key] += "\n" + line;
    } else if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      key.clear();
    } else if (const auto sep = line.find_first_of("=:"); sep != std::string::npos) {
      key = util::lower(util::trim(line.substr(0, sep)));
      std::ranges::replace(key, '_', '-');
      out[section][key] = std::string(util::trim(line.substr(sep + 1)));
    }
  }
  return out;
}

// pip's files, lowest priority first (pip's configuration.py: global, user, site, then
// PIP_CONFIG_FILE; PIP_CONFIG_FILE=/dev/null reads none, an existing one stands in for the user's).
std::vector<fs::path> pip_files(const Places& at) {
  const auto env_file = util::get_env(util::Env::pip_config_file);
  if (env_file && *env_file == "/dev/null") return {};
  std::vector<fs::path> files = {"/etc/xdg/pip/pip.conf", "/etc/pip.conf"};
  if (!(env_file && is_file(*env_file))) {
    if (!at.home.empty()) files.push_back(at.home / ".pip/pip.conf");
    if (!at.config_home.empty()) files.push_back(at.config_home / "pip/pip.conf");
  }
  if (!at.virtual_env.empty()) files.push_back(at.virtual_env / "pip.conf");
  if (env_file) files.emplace_back(*env_file);
  return files;
}

Expected<ToolIndexes> pip_indexes(const Places& at) {
  ToolIndexes out{Tool::pip, {}, {}};
  std::optional<Setting> index;
  std::vector<Setting> extra;
  if (at.read_files)
    for (const auto& f : pip_files(at)) {
      if (!is_file(f)) continue;
      const auto ini = read_ini(ENVFIX_TRY(util::read_file(f)));
      for (const auto* section : {"global", "install"}) {
        const auto s = ini.find(section);
        if (s == ini.end()) continue;
        if (auto i = s->second.find("index-url"); i != s->second.end()) index = Setting{i->second, f.string()};
        if (auto e = s->second.find("extra-index-url"); e != s->second.end()) {
          extra.clear();
          for (const auto& w : split_words(e->second)) extra.push_back({w, f.string()});
        }
      }
    }
  if (auto v = util::get_env(util::Env::pip_index_url); v && !v->empty()) index = Setting{*v, "PIP_INDEX_URL"};
  if (auto v = util::get_env(util::Env::pip_extra_index_url); v && !v->empty()) {
    extra.clear();
    for (const auto& w : split_words(*v)) extra.push_back({w, "PIP_EXTRA_INDEX_URL"});
  }
  out.index = std::move(index);
  out.extra = std::move(extra);
  return out;
}

} // namespace

Places Places::from_environment(bool no_config) {
  Places p;
  std::error_code ec;
  p.cwd = fs::current_path(ec);
  p.home = util::get_env(util::Env::home).value_or("");
  const auto xdg = util::get_env(util::Env::xdg_config_home).value_or("");
  p.config_home = !xdg.empty() ? fs::path(xdg) : p.home.empty() ? fs::path() : p.home / ".config";
  p.virtual_env = util::get_env(util::Env::virtual_env).value_or("");
  const auto off = util::get_env(util::Env::no_config).value_or("");
  p.read_files = !no_config && (off.empty() || off == "0");
  return p;
}

Expected<EnvfixConfig> read_envfix_config(const Places& at) {
  EnvfixConfig out;
  if (!at.read_files) return out;
  if (auto project = find_upwards(at.cwd, "envfix.toml")) ENVFIX_TRY_VOID(merge_envfix(*project, out));
  if (!at.config_home.empty())
    if (const auto user = at.config_home / "envfix/envfix.toml"; is_file(user) && (out.files.empty() || out.files[0] != user))
      ENVFIX_TRY_VOID(merge_envfix(user, out));
  return out;
}

Expected<ToolIndexes> read_tool_indexes(const Places& at) {
  auto uv = ENVFIX_TRY(uv_indexes(at));
  if (!uv.empty()) return uv;
  return pip_indexes(at);
}

} // namespace envfix::project
