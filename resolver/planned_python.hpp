#pragma once
// The interpreter a plan is for (api/host.hpp builds the host from it): what the probe read, with
// --python-version and --platform laid over it, as the resolver matches wheels and markers against it.
#include <string>
#include <string_view>

#include "probe/host_facts.hpp"
#include "resolver/resolver.hpp"
#include "specs/tag.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

struct PlannedPython {
  specs::TagEnvironment tag_env;
  TargetEnvironment target;
  std::string mm;       // "3.11"; "3.13t" for a free-threaded interpreter
  std::string text;     // "Python 3.11.7 (cp311, glibc 2.36)"
  std::string platform; // matrices platform name: "linux_x86_64"
};

// `python_version`: X.Y, X.Y.Z or X.Yt (free-threaded, PEP 703, from 3.13 on); `platform`: a platform
// tag (specs::apply_platform_tag). Either "" keeps what the probe read. Bad values are invalid_input.
[[nodiscard]] Expected<PlannedPython> planned_python(const probe::PythonInfo& py, std::string_view python_version,
                                                     std::string_view platform);

} // namespace envfix::resolver
