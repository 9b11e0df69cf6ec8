#include "resolver/planned_python.hpp"

#include <fmt/format.h>

namespace envfix::resolver {

Expected<PlannedPython> planned_python(const probe::PythonInfo& py, std::string_view python_version, std::string_view platform) {
  specs::TagEnvironment te = py.tag_env;
  specs::MarkerEnvironment markers = py.markers;
  std::string full = py.version.to_string();
  if (!python_version.empty()) {
    // "3.13t": a free-threaded interpreter (PEP 703), ABI tag cp313t, no abi3 (specs/tag.cpp).
    std::string pv(python_version);
    const bool threaded = pv.ends_with('t');
    if (threaded) pv.pop_back();
    auto v = specs::Version::parse(pv);
    if (!v || v->release().size() < 2)
      return make_error(ErrorCode::invalid_input, util::msg("--python-version '{}': expected X.Y, X.Y.Z or X.Yt", python_version),
                        util::msg("a trailing t plans for a free-threaded interpreter: 3.13t"));
    te.major = static_cast<int>(v->release()[0]);
    te.minor = static_cast<int>(v->release()[1]);
    if (threaded && (te.major < 3 || (te.major == 3 && te.minor < 13)))
      return make_error(ErrorCode::invalid_input,
                        util::msg("--python-version '{}': free-threaded builds exist from 3.13 on", python_version));
    te.abiflags = threaded ? "t" : "";
    full = v->release().size() >= 3 ? v->to_string() : fmt::format("{}.{}.0", te.major, te.minor);
    markers.values["python_version"] = fmt::format("{}.{}", te.major, te.minor);
    markers.values["python_full_version"] = full;
    markers.values["implementation_version"] = full;
  }
  if (!platform.empty()) {
    // specs owns the platform tags: manylinux_X_Y_ARCH, manylinux2014_ARCH, musllinux_X_Y_ARCH, linux_ARCH.
    if (auto ok = specs::apply_platform_tag(te, platform); !ok)
      return std::unexpected(std::move(ok.error()).context(util::msg("--platform '{}'", platform)));
    markers.values["platform_machine"] = te.arch;
  }
  PlannedPython p;
  p.platform = "linux_" + te.arch;
  p.tag_env = te;
  p.target.tags = specs::supported_tags(te);
  p.target.markers = std::move(markers);
  p.target.python_full_version = *specs::Version::parse(full);
  const bool free_threaded = te.abiflags.find('t') != std::string::npos;
  p.mm = fmt::format("{}.{}{}", te.major, te.minor, free_threaded ? "t" : "");
  p.text = fmt::format("Python {}{} (cp{}{}{}{})", full, free_threaded ? " free-threaded" : "", te.major, te.minor,
                       free_threaded ? "t" : "", te.glibc ? fmt::format(", glibc {}.{}", te.glibc->first, te.glibc->second) : "");
  return p;
}

} // namespace envfix::resolver
