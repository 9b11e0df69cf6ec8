// envfix inspect FILE... [--gpu sm_XX|9.0 ...]: the GPU code in binaries, and per-GPU coverage
// counted in fatbin containers (docs/architecture.md, Kernel coverage; docs/json.md "inspect";
// docs/kernels.md).
#include <chrono>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "specs/gpu_arch.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_set.hpp"
#include "util/strings.hpp"

namespace envfix::cli {
namespace {

std::string join_or_none(const std::vector<std::string>& v) { return v.empty() ? i18n::trs("none") : util::join(v, " "); }

std::string summary_line(const std::string& path, const wheel::KernelSet& ks) {
  std::string comp;
  if (auto n = ks.compressed_count(); n > 0)
    comp = ks.has_zstd() ? i18n::trf(" ({} compressed, ZSTD: needs a driver for CUDA >= 12.4)", n)
                         : i18n::trf(" ({} compressed)", n);
  std::string line = i18n::trf("{}: {} containers, {} entries", path, ks.containers.size(), ks.entry_count()) + comp +
                     fmt::format("; SASS {}; PTX {}", join_or_none(ks.sass()), join_or_none(ks.ptx()));
  if (auto lto = ks.lto(); !lto.empty()) line += "; LTO-IR " + join_or_none(lto);
  return line;
}

std::string counts_text(const wheel::ContainerCounts& c) {
  std::vector<std::string> parts;
  if (c.sass) parts.push_back(i18n::trf("{} by SASS", c.sass));
  if (c.ptx) parts.push_back(i18n::trf("{} only by PTX JIT", c.ptx));
  if (c.newer_only) parts.push_back(i18n::trf("{} only for newer archs", c.newer_only));
  if (c.older_only) parts.push_back(i18n::trf("{} only for older archs", c.older_only));
  if (c.other) parts.push_back(i18n::trf("{} other", c.other));
  return util::join(parts, ", ");
}

std::string coverage_line(const specs::ComputeCapability& cc, const wheel::FileCoverage& c) {
  const auto v = wheel::to_string(c.verdict);
  auto name = styled(fmt::format("{} {}", cc.sm_name(), i18n::tr(v)), c.verdict == wheel::Verdict::full   ? Style::green
                                                                      : c.verdict == wheel::Verdict::none ? Style::red
                                                                                                          : Style::yellow);
  std::string line = "  " + i18n::trf("{}: {}/{} containers runnable", name, c.runnable(), c.total());
  if (c.registered.total())
    line += i18n::trf("; registered {}/{} ({})", c.registered.runnable(), c.registered.total(), counts_text(c.registered));
  if (c.embedded.total())
    line += i18n::trf("; embedded, loaded by the library itself {}/{} ({})", c.embedded.runnable(), c.embedded.total(),
                      counts_text(c.embedded));
  return line;
}

nlohmann::json counts_json(const wheel::ContainerCounts& c) {
  return {{"runnable", c.runnable()},   {"total", c.total()},         {"sass", c.sass},  {"ptx", c.ptx},
          {"newer_only", c.newer_only}, {"older_only", c.older_only}, {"other", c.other}};
}

nlohmann::json coverage_json(const wheel::FileCoverage& c) {
  return {{"verdict", wheel::to_string(c.verdict)},
          {"runnable", c.registered.runnable()},
          {"total", c.registered.total()},
          {"via", c.via()},
          {"via_sass", c.registered.sass},
          {"via_ptx", c.registered.ptx},
          {"embedded_runnable", c.embedded.runnable()},
          {"embedded_total", c.embedded.total()},
          {"registered", counts_json(c.registered)},
          {"embedded", counts_json(c.embedded)}};
}

} // namespace

void add_inspect_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("inspect", i18n::trs("Kernels in .so/.whl/.a/.o/.cubin/.fatbin files, and GPU coverage"));
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, i18n::trs("Files to read"))->required();
  cmd->footer(i18n::trs(
      "Use --gpu sm_XX or --gpu 9.0 (repeatable; tegra:8.7 for an integrated Jetson GPU) to judge coverage: per file and GPU a verdict\n"
      "full, partial (normal in vendor libraries) or none (no entry runs). Exit 0 when no file is\n"
      "`none` for a GPU, 1 when one is or a file is bad, 2 on a runtime error."));
  cmd->callback([&g, files] {
    std::vector<specs::ComputeCapability> gpus;
    for (const auto& s : g.gpus) {
      auto cc = specs::ComputeCapability::parse(s);
      if (!cc) {
        g.exit_code = fail(Error(cc.error()).context(fmt::format("--gpu {}", s)));
        return;
      }
      if (std::find(gpus.begin(), gpus.end(), *cc) == gpus.end()) gpus.push_back(*cc);
    }
    const bool json = g.format == "json";
    nlohmann::json out_files = nlohmann::json::array();
    int rc = 0;
    for (const auto& path : *files) {
      auto t0 = std::chrono::steady_clock::now();
      auto ks = wheel::read_kernels_file(path);
      auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!ks) {
        rc = std::max(rc, exit_code_for(ks.error()));
        if (json)
          out_files.push_back({{"path", path}, {"error", ks.error().render()}});
        else
          print_error(ks.error());
        continue;
      }
      nlohmann::json cov = nlohmann::json::object();
      std::vector<std::string> lines;
      const auto profile = wheel::KernelProfile::of(*ks);
      for (const auto& cc : gpus) {
        if (profile.empty()) continue; // no GPU code: nothing to judge
        auto c = wheel::coverage(profile, cc);
        if (c.verdict == wheel::Verdict::none) rc = std::max(rc, 1);
        cov[cc.sm_name()] = coverage_json(c);
        lines.push_back(coverage_line(cc, c));
      }
      if (json) {
        nlohmann::json f = {{"path", path},
                            {"sass", ks->sass()},
                            {"ptx", ks->ptx()},
                            {"lto", ks->lto()},
                            {"containers", ks->containers.size()},
                            {"entries", ks->entry_count()},
                            {"compressed", ks->compressed_count()},
                            {"zstd", ks->has_zstd()},
                            {"coverage", cov},
                            {"warnings", ks->warnings}};
        nlohmann::json sections = nlohmann::json::object();
        for (const auto& c : ks->containers) {
          auto& s = sections[c.section.empty() ? "(raw)" : c.section];
          if (s.is_null()) s = {{"containers", 0}, {"entries", 0}, {"archs", nlohmann::json::object()}};
          s["containers"] = s["containers"].get<std::size_t>() + 1;
          s["entries"] = s["entries"].get<std::size_t>() + c.entries.size();
          // Per-arch entry counts: the multiset a cuobjdump listing can be compared with.
          for (const auto& e : c.entries) {
            auto& n = s["archs"][e.arch.to_string()];
            n = n.is_null() ? 1 : n.get<std::size_t>() + 1;
          }
        }
        f["sections"] = sections;
        out_files.push_back(std::move(f));
      } else {
        human(summary_line(path, *ks));
        for (const auto& l : lines) human(l);
        for (const auto& w : ks->warnings) warn(w);
        if (g.verbose > 0) human("  " + i18n::trf("read in {} ms", fmt::format("{:.1f}", ms)));
      }
    }
    if (json) machine(nlohmann::json{{"files", out_files}}.dump(2));
    g.exit_code = rc;
  });
}

} // namespace envfix::cli
