#include <doctest/doctest.h>

#include "specs/gpu_arch.hpp"

namespace specs_gpu_arch_test {

using namespace envfix::specs;

namespace {
ComputeCapability cc(const char* s) { return ComputeCapability::parse(s).value(); }
bool runs(const char* arch, const char* device) { return GpuArch::parse(arch).value().runs_on(cc(device)); }
} // namespace

TEST_SUITE("unit/specs/gpu_arch") {
  TEST_CASE("ComputeCapability parses every spelling and round-trips") {
    for (const char* s : {"9.0", "90", "sm_90", "SM_90", "compute_90"}) {
      auto c = ComputeCapability::parse(s);
      REQUIRE_MESSAGE(c, s);
      CHECK(c->major == 9);
      CHECK(c->minor == 0);
    }
    CHECK(cc("12.0") == ComputeCapability{12, 0});
    CHECK(cc("121") == ComputeCapability{12, 1});
    CHECK(cc("sm_103") == ComputeCapability{10, 3});
    CHECK(cc("7.5").to_string() == "7.5");
    CHECK(cc("12.1").sm_name() == "sm_121");
    CHECK(cc("8.6") < cc("9.0"));
    CHECK(cc("12.0") > cc("10.3"));
    for (const char* s : {"8.6", "9.0", "10.0", "10.3", "12.0", "12.1"})
      CHECK(ComputeCapability::parse(cc(s).to_string()).value() == cc(s));
  }

  TEST_CASE("ComputeCapability rejects bad input with a caret") {
    for (const char* s :
         {"", "9", "9.", ".0", "9.10", "sm_", "sm_9", "sm_90a", "sm_1200", "abc", "0.5", "9.0.1", "sm_9.0", "-9.0"}) {
      auto c = ComputeCapability::parse(s);
      CHECK_MESSAGE(!c, s);
      if (!c) {
        CHECK(c.error().code == envfix::ErrorCode::invalid_input);
        CHECK(c.error().message.find('^') != std::string::npos);
      }
    }
    CHECK(ComputeCapability::parse("sm_90a").error().hint.find("no a/f suffix") != std::string::npos);
  }

  TEST_CASE("GpuArch parses kinds and variants and round-trips") {
    struct Row {
      const char* text;
      GpuArch::Kind kind;
      int major, minor;
      GpuArch::Variant variant;
    };
    const Row rows[] = {
        {"sm_80", GpuArch::Kind::sass, 8, 0, GpuArch::Variant::plain},
        {"sm_90a", GpuArch::Kind::sass, 9, 0, GpuArch::Variant::a},
        {"sm_100f", GpuArch::Kind::sass, 10, 0, GpuArch::Variant::f},
        {"sm_121", GpuArch::Kind::sass, 12, 1, GpuArch::Variant::plain},
        {"compute_75", GpuArch::Kind::ptx, 7, 5, GpuArch::Variant::plain},
        {"compute_90a", GpuArch::Kind::ptx, 9, 0, GpuArch::Variant::a},
        {"compute_120f", GpuArch::Kind::ptx, 12, 0, GpuArch::Variant::f},
        {"lto_90", GpuArch::Kind::lto, 9, 0, GpuArch::Variant::plain},
    };
    for (const auto& r : rows) {
      auto a = GpuArch::parse(r.text);
      REQUIRE_MESSAGE(a, r.text);
      CHECK(a->kind == r.kind);
      CHECK(a->major == r.major);
      CHECK(a->minor == r.minor);
      CHECK(a->variant == r.variant);
      CHECK(a->to_string() == r.text);
      CHECK(GpuArch::parse(a->to_string()).value() == *a);
    }
    CHECK(GpuArch::parse("SM_90A").value().to_string() == "sm_90a");
    CHECK(GpuArch::from_number(GpuArch::Kind::sass, 120).to_string() == "sm_120");
    CHECK(GpuArch::from_number(GpuArch::Kind::ptx, 103, GpuArch::Variant::f).to_string() == "compute_103f");
    CHECK(GpuArch::parse("sm_90a").value().cc() == ComputeCapability{9, 0});
    CHECK(GpuArch::parse("sm_90").value() < GpuArch::parse("sm_90a").value());
    CHECK(GpuArch::parse("sm_90a").value() < GpuArch::parse("sm_100").value());
    CHECK(std::string(to_string(GpuArch::Kind::ptx)) == "ptx");
  }

  TEST_CASE("GpuArch rejects bad input") {
    for (const char* s : {"", "sm", "sm_", "sm_9", "sm_9000", "sm_90x", "sm_90af", "gfx90a", "compute_", "lto_90a", "sm_a", "90",
                          "sm_-90", "sm_ 90"}) {
      auto a = GpuArch::parse(s);
      CHECK_MESSAGE(!a, s);
      if (!a) CHECK(a.error().message.find(s) != std::string::npos);
    }
  }

  // docs/kernels.md, Runs-on rules, and Measured on an H200.
  TEST_CASE("runs_on follows the compatibility rules") {
    struct Row {
      const char* arch;
      const char* device;
      bool runs;
    };
    const Row rows[] = {
        // plain SASS: same major, equal or higher minor; never across majors
        {"sm_80", "8.0", true},
        {"sm_80", "8.6", true},
        {"sm_86", "8.0", false},
        {"sm_80", "9.0", false},
        {"sm_89", "9.0", false},
        {"sm_90", "9.0", true},
        {"sm_90", "10.0", false},
        {"sm_120", "12.1", true},
        {"sm_120", "9.0", false},
        {"sm_100", "10.3", true},
        {"sm_103", "10.0", false},
        // `a`: exactly that CC
        {"sm_90a", "9.0", true},
        {"sm_100a", "10.0", true},
        {"sm_100a", "10.3", false},
        {"sm_120a", "12.1", false},
        {"sm_121a", "12.1", true},
        // `f`: the family (same major, >= minor)
        {"sm_100f", "10.0", true},
        {"sm_100f", "10.3", true},
        {"sm_100f", "12.0", false},
        {"sm_103f", "10.0", false},
        {"sm_120f", "12.0", true},
        {"sm_120f", "12.1", true},
        {"sm_120f", "9.0", false},
        // plain PTX: any later CC, future majors included
        {"compute_80", "9.0", true},
        {"compute_80", "12.0", true},
        {"compute_75", "9.0", true},
        {"compute_90", "9.0", true},
        {"compute_90", "8.9", false},
        {"compute_100", "9.0", false},
        {"compute_120", "13.0", true},
        // PTX `a` exact, `f` family
        {"compute_90a", "9.0", true},
        {"compute_90a", "10.0", false},
        {"compute_100f", "10.3", true},
        {"compute_100f", "12.0", false},
        {"compute_120f", "9.0", false},
        {"compute_120f", "12.1", true},
        // LTO-IR never
        {"lto_90", "9.0", false},
        {"lto_75", "12.0", false},
        // Tegra (integrated): SASS only for the exact CC, PTX as on the desktop; Tegra-only SASS never on a desktop part
        {"sm_80", "tegra:8.7", false},
        {"sm_87", "tegra:8.7", true},
        {"compute_80", "tegra:8.7", true},
        {"sm_87", "8.9", false},
        {"sm_110", "tegra:11.0", true},
        {"sm_110", "11.0", false},
        {"sm_100", "tegra:11.0", false},
        {"sm_72", "tegra:7.2", true},
        {"sm_70", "tegra:7.2", false},
        {"compute_110", "tegra:11.0", true},
        {"sm_80", "8.6", true},
    };
    for (const auto& r : rows) CHECK_MESSAGE(runs(r.arch, r.device) == r.runs, r.arch, " on ", r.device);
  }
  TEST_CASE("a Tegra device parses and prints back as tegra:M.m; the number alone stays M.m") {
    auto t = ComputeCapability::parse("tegra:sm_87").value();
    CHECK(t.tegra);
    CHECK(t.to_string() == "8.7");
    CHECK(t.sm_name() == "sm_87");
    CHECK(t.spec() == "tegra:8.7");
    CHECK(ComputeCapability::parse(t.spec()).value() == t);
    CHECK(ComputeCapability::parse("8.7").value() != t);
    CHECK(ComputeCapability::parse("8.7").value().same_number(t));
    CHECK(!ComputeCapability::parse("tegra:").has_value());
  }
} // TEST_SUITE

} // namespace specs_gpu_arch_test
