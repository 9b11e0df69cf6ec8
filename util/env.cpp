#include "util/env.hpp"

#include <cassert>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

namespace envfix::util {

const std::vector<EnvVar>& known_env_vars() {
  static const std::vector<EnvVar> vars = {
      {Env::cache_dir, "ENVFIX_CACHE_DIR", "cache directory (default $XDG_CACHE_HOME/envfix)"},
      {Env::matrices, "ENVFIX_MATRICES", "directory of YAML files that override/extend the embedded matrices"},
      {Env::gpu, "ENVFIX_GPU", "comma-separated GPU archs to plan for instead of probing (sm_120,sm_86)"},
      {Env::driver, "ENVFIX_DRIVER", "driver version to plan for instead of probing (570.86.10)"},
      {Env::python, "ENVFIX_PYTHON", "target interpreter (like --python)"},
      {Env::offline, "ENVFIX_OFFLINE", "1: serve only from the cache"},
      {Env::page_deadline, "ENVFIX_PAGE_DEADLINE",
       "seconds one index page (or metadata file) may take, retries included (default 300)"},
      {Env::download_deadline, "ENVFIX_DOWNLOAD_DEADLINE",
       "seconds one download may take, retries and resumes included (default 3600)"},
      {Env::link_mode, "ENVFIX_LINK_MODE",
       "how apply places files from the unpacked cache: auto|clone|hardlink|copy (like --link-mode)"},
      {Env::early_unpack, "ENVFIX_EARLY_UNPACK",
       "0: apply unpacks no wheel while others download, all of it in the transaction (for comparisons)"},
      {Env::threads, "ENVFIX_THREADS", "threads for unpacking, linking and hashing (default: one per core)"},
      {Env::index_url, "ENVFIX_INDEX_URL", "use exactly this index (like --index-url)"},
      {Env::extra_index_url, "ENVFIX_EXTRA_INDEX_URL",
       "space-separated extra indexes (like --extra-index-url, as PIP_EXTRA_INDEX_URL)"},
      {Env::mirror, "ENVFIX_MIRROR", "replace the official base URL in every index template"},
      {Env::no_nvml, "ENVFIX_NO_NVML", "1: do not load NVML/libcuda (probe GPUs as absent); for tests"},
      {Env::sysfs_root, "ENVFIX_SYSFS_ROOT",
       "root prefix for host files (/proc, /sys, /dev/dxg, /usr/lib/wsl, /.dockerenv); for tests"},
      {Env::xdg_cache_home, "XDG_CACHE_HOME", "base of the default cache directory"},
      {Env::virtual_env, "VIRTUAL_ENV", "active venv: default target interpreter"},
      {Env::conda_prefix, "CONDA_PREFIX", "active conda env: target interpreter when no venv is active"},
      {Env::cuda_visible_devices, "CUDA_VISIBLE_DEVICES", "which GPUs the framework will see"},
      {Env::no_color, "NO_COLOR", "disable colour"},
      {Env::language, "LANGUAGE",
       "language list for messages (gettext's; used unless the locale is C/POSIX): zh_CN gives Chinese"},
      {Env::lc_all, "LC_ALL", "locale; its language picks the messages' language (zh_CN.UTF-8: Chinese), like --lang"},
      {Env::lc_messages, "LC_MESSAGES", "locale of messages, when LC_ALL is unset"},
      {Env::lc_ctype, "LC_CTYPE",
       "the terminal's character set, when LC_ALL is unset (zh_CN.GB18030: human output in GB18030; JSON stays UTF-8)"},
      {Env::lang, "LANG", "default locale, when LC_ALL and LC_MESSAGES are unset"},
      {Env::home, "HOME", "~/.netrc, ~/.pyenv and ~/.local/share/uv/python lookup"},
      {Env::netrc, "NETRC", "path of the netrc file"},
      {Env::ssl_cert_file, "SSL_CERT_FILE", "CA bundle for HTTPS"},
      {Env::requests_ca_bundle, "REQUESTS_CA_BUNDLE", "CA bundle for HTTPS (pip/requests convention)"},
      {Env::https_proxy, "https_proxy", "proxy for HTTPS"},
      {Env::http_proxy, "http_proxy", "proxy for HTTP"},
      {Env::no_proxy, "no_proxy", "hosts that bypass the proxy"},
      {Env::path, "PATH", "finding python3, pip, nvcc and nvidia-smi"},
      {Env::pyenv_root, "PYENV_ROOT", "pyenv's root (default ~/.pyenv): its versions/ serve a --python version request"},
      {Env::uv_python_install_dir, "UV_PYTHON_INSTALL_DIR",
       "uv's managed interpreters (default $XDG_DATA_HOME/uv/python): they serve a --python version request"},
      {Env::xdg_data_home, "XDG_DATA_HOME", "base of uv's default interpreter directory (default ~/.local/share)"},
      {Env::xdg_state_home, "XDG_STATE_HOME",
       "base of envfix's evidence key, $XDG_STATE_HOME/envfix/evidence-key (default ~/.local/state)"},
      {Env::evidence_key, "ENVFIX_EVIDENCE_KEY",
       "the secret that signs kernel evidence in the cache, instead of the key file (a CI secret, so a restored cache is trusted)"},
      {Env::cuda_home, "CUDA_HOME", "the local CUDA toolkit (doctor reports its nvcc)"},
      {Env::cuda_path, "CUDA_PATH", "the local CUDA toolkit, when CUDA_HOME is unset"},
      {Env::container, "container", "set by podman and systemd-nspawn inside a container (doctor reports it)"},
      {Env::kubernetes_service_host, "KUBERNETES_SERVICE_HOST", "set inside a Kubernetes pod (doctor reports a container)"},
      {Env::no_config, "ENVFIX_NO_CONFIG", "1: read no configuration file (envfix.toml, uv.toml, pip.conf), like --no-config"},
      {Env::xdg_config_home, "XDG_CONFIG_HOME",
       "base of the user's envfix.toml, uv.toml and pip.conf ($XDG_CONFIG_HOME/envfix/envfix.toml; default ~/.config)"},
      {Env::pip_config_file, "PIP_CONFIG_FILE", "pip's configuration file, read for its index settings (/dev/null: none)"},
      {Env::pip_index_url, "PIP_INDEX_URL", "pip's index: used for the packages that are not the framework's, said so"},
      {Env::pip_extra_index_url, "PIP_EXTRA_INDEX_URL", "pip's space-separated extra indexes, used as envfix's extra indexes"},
      {Env::uv_default_index, "UV_DEFAULT_INDEX", "uv's default index, taken like PIP_INDEX_URL (before pip's settings)"},
      {Env::uv_index_url, "UV_INDEX_URL", "uv's older name for UV_DEFAULT_INDEX"},
      {Env::uv_index, "UV_INDEX", "uv's space-separated extra indexes ([name=]url)"},
      {Env::uv_extra_index_url, "UV_EXTRA_INDEX_URL", "uv's older space-separated extra indexes"},
      {Env::uv_no_config, "UV_NO_CONFIG", "set: envfix reads no uv.toml, as uv reads none"},
  };
  return vars;
}

std::string_view env_name(Env e) {
  const auto& vars = known_env_vars();
  const auto i = static_cast<std::size_t>(e);
  assert(i < vars.size() && vars[i].id == e && "known_env_vars() is in Env's order");
  return vars[i].name;
}

std::optional<std::string> get_env(Env e) {
  const char* v = std::getenv(std::string(env_name(e)).c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

Expected<std::optional<std::chrono::milliseconds>> seconds_from_env(Env e) {
  const auto v = get_env(e);
  if (!v || v->empty()) return std::nullopt;
  const auto name = env_name(e);
  unsigned long long s = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), s);
  if (ec != std::errc{} || end != v->data() + v->size() || s == 0 || s > 1'000'000'000ull)
    return make_error(ErrorCode::invalid_input, util::msg("{}={:?} is not a number of seconds", name, *v),
                      util::msg("set {} to a whole number of seconds, e.g. 600, or unset it", name));
  return std::chrono::milliseconds(s * 1000);
}

} // namespace envfix::util
