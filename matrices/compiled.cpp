#include "matrices/compiled.hpp"

#include <nlohmann/json.hpp>

// Value types travel as the text they parse from and print back to.
namespace nlohmann {
template <class T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v)
      j = *v;
    else
      j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null())
      v.reset();
    else
      v = j.get<T>();
  }
};
} // namespace nlohmann

namespace envfix::specs {
namespace {
template <class T>
T parse_or_throw(const nlohmann::json& j) {
  auto v = T::parse(j.get<std::string>());
  if (!v) throw std::invalid_argument(v.error().message);
  return std::move(*v);
}
} // namespace
// Internal linkage: found by ADL from this file only, so no other module's serializer can clash.
#define ENVFIX_TEXT_JSON(T)                                                                                                      \
  static void to_json(nlohmann::json& j, const T& v) { j = v.to_string(); }                                                      \
  static void from_json(const nlohmann::json& j, T& v) { v = parse_or_throw<T>(j); }
ENVFIX_TEXT_JSON(Version)
ENVFIX_TEXT_JSON(SpecifierSet)
ENVFIX_TEXT_JSON(CudaVersion)
ENVFIX_TEXT_JSON(GpuArch)
#undef ENVFIX_TEXT_JSON
// spec(), not to_string(): a Jetson product's compute capability keeps its "tegra:" (the SASS rule).
static void to_json(nlohmann::json& j, const ComputeCapability& v) { j = v.spec(); }
static void from_json(const nlohmann::json& j, ComputeCapability& v) { v = parse_or_throw<ComputeCapability>(j); }
} // namespace envfix::specs

namespace envfix::matrices {

NLOHMANN_JSON_SERIALIZE_ENUM(Confidence, {{Confidence::verified, "verified"},
                                          {Confidence::secondary, "secondary"},
                                          {Confidence::unverified, "unverified"}})
// Every member, in declaration order: a member left out here makes the compiled knowledge differ
// from the YAML, which tests/matrices/test_matrices.cpp compares row by row.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SourceLocation, file, line, column)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CudaToolkit, version, min_driver_linux, min_driver_windows, updates, minor_compat_linux,
                                   minor_compat_windows, ptx_isa, sass, confidence, source, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuProduct, name, aliases, cc, family, segment, confidence, source, socs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(L4tRelease, release, jetpack, cuda, driver, socs, indexes, confidence, source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Variant, name, kind, cuda, rocm, extra, main_package, packages, kernels, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ArchBuild, platform, sass, ptx, confidence, source, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReleaseVariant, variant, platforms, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Release, versions, nightly, range, channels, python, pypi_default, variants, source, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Coupling, version, nightly, date, companions, source, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SmokeTest, step_a, step_b, companions, cpu, cpu_companions, model)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SupportEnd, from, below, variant, confidence, source, where)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Framework, name, main_package, companions, optional_companions, channel_templates,
                                   default_mirror, nightly_coupling, variants, releases, coupling, support_ends, smoke, source,
                                   where)

struct KnowledgeCodec {
  static nlohmann::json to(const Knowledge& k) {
    return {{"compiled", 1}, {"frameworks", k.m_frameworks}, {"toolkits", k.m_toolkits}, {"gpus", k.m_gpus}, {"l4t", k.m_l4t}};
  }
  static Knowledge from(const nlohmann::json& j) {
    if (j.value("compiled", 0) != 1) throw std::invalid_argument("not version-1 compiled knowledge");
    Knowledge k;
    j.at("frameworks").get_to(k.m_frameworks);
    j.at("toolkits").get_to(k.m_toolkits);
    j.at("gpus").get_to(k.m_gpus);
    j.at("l4t").get_to(k.m_l4t);
    return k;
  }
};

std::string knowledge_to_json(const Knowledge& k) { return KnowledgeCodec::to(k).dump(); }

Expected<Knowledge> knowledge_from_json(std::string_view json) {
  try {
    return KnowledgeCodec::from(nlohmann::json::parse(json));
  } catch (const std::exception& e) {
    return make_error(ErrorCode::invalid_input, util::msg("compiled matrices data: {}", e.what()),
                      util::msg("rebuild envfix: the build writes this from matrices/data/*.yaml (matrices/compile.cpp)"));
  }
}

} // namespace envfix::matrices
