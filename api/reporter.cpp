#include "api/reporter.hpp"

namespace envfix::api {

const char* to_string(Phase p) {
  switch (p) {
  case Phase::download: return "download";
  case Phase::unpack: return "unpack";
  case Phase::kernel_check: return "kernel_check";
  case Phase::uninstall: return "uninstall";
  case Phase::install: return "install";
  case Phase::verify: return "verify";
  }
  return "?";
}

Reporter& quiet_reporter() {
  static Reporter r;
  return r;
}

} // namespace envfix::api
