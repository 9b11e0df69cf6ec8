#pragma once
// What every api/ call is asked about (docs/architecture.md, Modules): the environment to act on,
// where builds come from and the host to plan for. A value the caller fills; cli/ maps its global
// options onto it, tests build it directly. Environment variables (ENVFIX_GPU, ENVFIX_DRIVER,
// ENVFIX_INDEX_URL, …; docs/environment.md) are read by api/ where a field is empty.
#include <optional>
#include <string>
#include <vector>

namespace envfix::api {

struct Options {
  std::string python; // target interpreter; "" = $VIRTUAL_ENV, $CONDA_PREFIX, python3
  std::string framework = "torch";
  // No --framework given (cli): act on the framework(s) installed in the target (resolver/frameworks.hpp);
  // `framework` is the fallback when none is.
  bool detect_framework = false;
  std::string channel = "auto"; // auto | stable | test | nightly
  std::string variant;          // cu128 …
  std::string mirror;
  // --index-url: with a framework, its index for the channel/variant it serves, host checks applied;
  // without one, exactly this index (README.md, "Index options").
  std::string index_url;
  // --extra-index-url (repeatable): searched for projects that are not the framework's, the first
  // index that has a project serves all of it (resolver/index_provider.hpp, FirstIndexProvider).
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links;
  std::string matrices_dir;
  std::string cache_dir;
  bool offline = false;
  // Extra attempts after a failed request (index/http_client.hpp); unset: the client's default. doctor
  // asks once when it proves its fix, so that an unreachable index costs no retry waits.
  std::optional<int> http_retries;
  bool allow_cpu = false;
  std::string lockfile = "envfix.lock";
  // --no-config: read no envfix.toml, uv.toml or pip.conf (project/settings.hpp).
  bool no_config = false;
  // The index pip or uv is configured with, where envfix's own settings name none (configure()):
  // it serves the packages that are not the framework's, and plain requests in place of PyPI.
  std::string tool_index;
  std::string tool_index_from; // the file or variable it was read from
  std::vector<std::string> tool_extra_indexes;
  std::vector<std::string> config_files; // the envfix.toml files read
  // Planning for a machine you are not on.
  std::vector<std::string> gpus; // sm_120, 12.0, "RTX 5090", none
  std::string driver;
  std::string python_version;
  std::string platform;
};

} // namespace envfix::api
