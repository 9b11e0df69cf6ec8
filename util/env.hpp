#pragma once
// Every environment variable envfix reads is declared here, once, as an `Env` value: code asks for
// Env::python, never for a spelled name (docs/environment.md lists them; a test checks the two
// against each other).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::util {

enum class Env {
  cache_dir,
  matrices,
  gpu,
  driver,
  python,
  offline,
  page_deadline,
  download_deadline,
  link_mode,
  early_unpack,
  threads,
  index_url,
  extra_index_url,
  mirror,
  no_nvml,
  sysfs_root,
  xdg_cache_home,
  virtual_env,
  conda_prefix,
  cuda_visible_devices,
  no_color,
  language,
  lc_all,
  lc_messages,
  lc_ctype,
  lang,
  home,
  netrc,
  ssl_cert_file,
  requests_ca_bundle,
  https_proxy,
  http_proxy,
  no_proxy,
  path,
  pyenv_root,
  uv_python_install_dir,
  xdg_data_home,
  xdg_state_home,
  evidence_key,
  cuda_home,
  cuda_path,
  container,
  kubernetes_service_host,
  no_config,
  xdg_config_home,
  pip_config_file,
  pip_index_url,
  pip_extra_index_url,
  uv_default_index,
  uv_index_url,
  uv_index,
  uv_extra_index_url,
  uv_no_config,
};

struct EnvVar {
  Env id;
  std::string_view name;
  std::string_view meaning;
};

// The documented list, one entry per Env value in declaration order.
const std::vector<EnvVar>& known_env_vars();

// The variable's name as the environment spells it ("ENVFIX_PYTHON").
[[nodiscard]] std::string_view env_name(Env e);

// The variable's value; nullopt when it is unset.
[[nodiscard]] std::optional<std::string> get_env(Env e);

// A number of whole seconds from 1 to 10^9 (ENVFIX_PAGE_DEADLINE, ENVFIX_DOWNLOAD_DEADLINE); nullopt
// when unset or empty, invalid_input naming the variable otherwise.
[[nodiscard]] Expected<std::optional<std::chrono::milliseconds>> seconds_from_env(Env e);

} // namespace envfix::util
