#include "util/env.hpp"

#include <cassert>
#include <cstdlib>

namespace envfix::util {

const std::vector<EnvVar>& known_env_vars() {
  static const std::vector<EnvVar> vars = {
      {"ENVFIX_CACHE_DIR", "cache directory (default $XDG_CACHE_HOME/envfix)"},
      {"ENVFIX_MATRICES", "directory of YAML files that override/extend the embedded matrices"},
      {"ENVFIX_GPU", "comma-separated GPU archs to plan for instead of probing (sm_120,sm_86)"},
      {"ENVFIX_DRIVER", "driver version to plan for instead of probing (570.86.10)"},
      {"ENVFIX_PYTHON", "target interpreter (like --python)"},
      {"ENVFIX_OFFLINE", "1: serve only from the cache"},
      {"ENVFIX_PAGE_DEADLINE", "seconds one index page (or metadata file) may take, retries included (default 300)"},
      {"ENVFIX_DOWNLOAD_DEADLINE", "seconds one download may take, retries and resumes included (default 3600)"},
      {"ENVFIX_LINK_MODE", "how apply places files from the unpacked cache: auto|clone|hardlink|copy (like --link-mode)"},
      {"ENVFIX_EARLY_UNPACK", "0: apply unpacks no wheel while others download, all of it in the transaction (for comparisons)"},
      {"ENVFIX_THREADS", "threads for unpacking, linking and hashing (default: one per core)"},
      {"ENVFIX_INDEX_URL", "use exactly this index (like --index-url)"},
      {"ENVFIX_EXTRA_INDEX_URL", "space-separated extra indexes (like --extra-index-url, as PIP_EXTRA_INDEX_URL)"},
      {"ENVFIX_MIRROR", "replace the official base URL in every index template"},
      {"ENVFIX_NO_NVML", "1: do not load NVML/libcuda (probe GPUs as absent); for tests"},
      {"ENVFIX_SYSFS_ROOT", "root prefix for host files (/proc, /sys, /dev/dxg, /usr/lib/wsl, /.dockerenv); for tests"},
      {"XDG_CACHE_HOME", "base of the default cache directory"},
      {"VIRTUAL_ENV", "active venv: default target interpreter"},
      {"CONDA_PREFIX", "active conda env: target interpreter when no venv is active"},
      {"CUDA_VISIBLE_DEVICES", "which GPUs the framework will see"},
      {"NO_COLOR", "disable colour"},
      {"LANGUAGE", "language list for messages (gettext's; used unless the locale is C/POSIX): zh_CN gives Chinese"},
      {"LC_ALL", "locale; its language picks the messages' language (zh_CN.UTF-8: Chinese), like --lang"},
      {"LC_MESSAGES", "locale of messages, when LC_ALL is unset"},
      {"LANG", "default locale, when LC_ALL and LC_MESSAGES are unset"},
      {"HOME", "~/.netrc lookup"},
      {"NETRC", "path of the netrc file"},
      {"SSL_CERT_FILE", "CA bundle for HTTPS"},
      {"REQUESTS_CA_BUNDLE", "CA bundle for HTTPS (pip/requests convention)"},
      {"https_proxy", "proxy for HTTPS"},
      {"http_proxy", "proxy for HTTP"},
      {"no_proxy", "hosts that bypass the proxy"},
      {"PATH", "finding python3, pip, nvcc and nvidia-smi"},
      {"CUDA_HOME", "the local CUDA toolkit (doctor reports its nvcc)"},
      {"CUDA_PATH", "the local CUDA toolkit, when CUDA_HOME is unset"},
      {"container", "set by podman and systemd-nspawn inside a container (doctor reports it)"},
      {"KUBERNETES_SERVICE_HOST", "set inside a Kubernetes pod (doctor reports a container)"},
  };
  return vars;
}

std::optional<std::string> get_env(std::string_view name) {
#ifndef NDEBUG
  bool known = false;
  for (const auto& v : known_env_vars()) known = known || v.name == name;
  assert(known && "environment variable not declared in util/env.cpp");
#endif
  const char* v = std::getenv(std::string(name).c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

} // namespace envfix::util
