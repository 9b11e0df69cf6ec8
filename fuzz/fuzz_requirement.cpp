// Round-trip property for PEP 508 requirements and markers.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specs/marker.hpp"
#include "specs/requirement.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  envfix::specs::MarkerEnvironment env;
  env.values = {{"python_version", "3.11"},
                {"python_full_version", "3.11.7"},
                {"sys_platform", "linux"},
                {"platform_release", "6.8.0"},
                {"os_name", "posix"}};
  if (auto r = envfix::specs::Requirement::parse(text)) {
    auto s = r->to_string();
    auto back = envfix::specs::Requirement::parse(s);
    if (!back || !(*back == *r) || back->to_string() != s) std::abort();
    if (r->applies(env, {"x"}) != back->applies(env, {"x"})) std::abort();
  }
  if (auto m = envfix::specs::Marker::parse(text)) {
    auto s = m->to_string();
    auto back = envfix::specs::Marker::parse(s);
    if (!back || !(*back == *m) || back->to_string() != s) std::abort();
    if (m->evaluate(env) != back->evaluate(env)) std::abort();
  }
  return 0;
}
