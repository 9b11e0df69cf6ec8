#pragma once
// Configuration files and the index settings of the tools a user already has (issue 36; README.md,
// Configuration). Precedence, highest first: the command line, ENVFIX_* variables, envfix.toml (the
// project's, found from the current folder upwards, over the user's), then the index settings of uv
// (UV_* variables, uv.toml) and of pip (PIP_* variables, pip.conf), which name the index for the
// packages that are not the framework's.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace envfix::project {

// Where a setting was read: a file's path or a variable's name.
struct Setting {
  std::string value;
  std::string from; // "/home/u/.config/pip/pip.conf", "PIP_INDEX_URL"
};

// envfix.toml: envfix's own options, each as its command-line option names it.
struct EnvfixConfig {
  std::optional<Setting> index_url, mirror, cache_dir, channel, variant;
  std::vector<Setting> extra_index_urls, find_links;
  std::vector<std::string> files; // the files read, the project's first
};

enum class Tool { uv, pip };

// The index a pip or uv user has configured (a PyPI mirror, typically), and the extra indexes.
struct ToolIndexes {
  Tool tool = Tool::pip;
  std::optional<Setting> index;
  std::vector<Setting> extra;
  [[nodiscard]] bool empty() const { return !index && extra.empty(); }
};

// Where configuration is looked for. from_environment() fills it as envfix runs: the current folder,
// HOME, XDG_CONFIG_HOME, VIRTUAL_ENV, and whether files are read at all (ENVFIX_NO_CONFIG).
struct Places {
  std::filesystem::path cwd;
  std::filesystem::path config_home; // $XDG_CONFIG_HOME or ~/.config; empty: none
  std::filesystem::path home;
  std::filesystem::path virtual_env;
  bool read_files = true;
  [[nodiscard]] static Places from_environment(bool no_config);
};

// envfix.toml; invalid_input names the file and the key it does not know or cannot take.
[[nodiscard]] Expected<EnvfixConfig> read_envfix_config(const Places& at);

// uv's settings when it has any index setting, else pip's; empty when neither has one.
[[nodiscard]] Expected<ToolIndexes> read_tool_indexes(const Places& at);

} // namespace envfix::project
