// envfix inspect FILE... [--gpu sm_XX|9.0 ...]: the GPU code in binaries, and per-GPU coverage
// counted in fatbin containers (docs/architecture.md, Kernel coverage; docs/json.md "inspect";
// docs/kernels.md).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api/inspect.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "util/strings.hpp"

namespace envfix::cli {
namespace {

std::string join_or_none(const std::vector<std::string>& v) { return v.empty() ? i18n::trs("none") : util::join(v, " "); }

std::string summary_line(const std::string& path, const api::KernelSet& ks) {
  std::string comp;
  if (auto n = ks.compressed_count(); n > 0)
    comp = ks.has_zstd() ? i18n::trf(" ({} compressed, ZSTD: needs a driver for CUDA >= 12.4)", n)
                         : i18n::trf(" ({} compressed)", n);
  std::string line = i18n::trf("{}: {} containers, {} entries", path, ks.containers.size(), ks.entry_count()) + comp +
                     fmt::format("; SASS {}; PTX {}", join_or_none(ks.sass()), join_or_none(ks.ptx()));
  if (auto lto = ks.lto(); !lto.empty()) line += "; LTO-IR " + join_or_none(lto);
  return line;
}

std::string counts_text(const api::ContainerCounts& c) {
  std::vector<std::string> parts;
  if (c.sass) parts.push_back(i18n::trf("{} by SASS", c.sass));
  if (c.ptx) parts.push_back(i18n::trf("{} only by PTX JIT", c.ptx));
  if (c.newer_only) parts.push_back(i18n::trf("{} only for newer archs", c.newer_only));
  if (c.older_only) parts.push_back(i18n::trf("{} only for older archs", c.older_only));
  if (c.other) parts.push_back(i18n::trf("{} other", c.other));
  return util::join(parts, ", ");
}

std::string coverage_line(const specs::ComputeCapability& cc, const api::FileCoverage& c) {
  const auto v = to_string(c.verdict);
  auto name = styled(fmt::format("{} {}", cc.sm_name(), i18n::tr(v)), c.verdict == api::Verdict::full   ? Style::green
                                                                      : c.verdict == api::Verdict::none ? Style::red
                                                                                                        : Style::yellow);
  std::string line = "  " + i18n::trf("{}: {}/{} containers runnable", name, c.runnable(), c.total());
  if (c.registered.total())
    line += i18n::trf("; registered {}/{} ({})", c.registered.runnable(), c.registered.total(), counts_text(c.registered));
  if (c.embedded.total())
    line += i18n::trf("; embedded, loaded by the library itself {}/{} ({})", c.embedded.runnable(), c.embedded.total(),
                      counts_text(c.embedded));
  return line;
}

nlohmann::json counts_json(const api::ContainerCounts& c) {
  return {{"runnable", c.runnable()},   {"total", c.total()},         {"sass", c.sass},  {"ptx", c.ptx},
          {"newer_only", c.newer_only}, {"older_only", c.older_only}, {"other", c.other}};
}

nlohmann::json coverage_json(const api::FileCoverage& c) {
  return {{"verdict", to_string(c.verdict)},
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

nlohmann::json file_json(const api::InspectedFile& f) {
  const auto& ks = *f.kernels;
  nlohmann::json cov = nlohmann::json::object();
  for (const auto& gc : f.gpus) cov[gc.cc.sm_name()] = coverage_json(gc.coverage);
  nlohmann::json sections = nlohmann::json::object();
  for (const auto& [name, s] : f.sections)
    sections[name] = {{"containers", s.containers}, {"entries", s.entries}, {"archs", s.archs}};
  return {{"path", f.path},
          {"sass", ks.sass()},
          {"ptx", ks.ptx()},
          {"lto", ks.lto()},
          {"containers", ks.containers.size()},
          {"entries", ks.entry_count()},
          {"compressed", ks.compressed_count()},
          {"zstd", ks.has_zstd()},
          {"coverage", cov},
          {"warnings", ks.warnings},
          {"sections", sections}};
}

void render_file(const api::InspectedFile& f, bool verbose) {
  human(summary_line(f.path, *f.kernels));
  for (const auto& gc : f.gpus) human(coverage_line(gc.cc, gc.coverage));
  for (const auto& w : f.kernels->warnings) warn(util::plain(w)); // as read from the file
  if (verbose) human("  " + i18n::trf("read in {} ms", fmt::format("{:.1f}", f.read_ms)));
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
    auto report = api::inspect(g, *files);
    if (!report) {
      g.exit_code = fail(report.error());
      return;
    }
    const bool json = g.format == "json";
    nlohmann::json out_files = nlohmann::json::array();
    int rc = 0;
    for (const auto& f : report->files) {
      if (!f.kernels) {
        rc = std::max(rc, exit_code_for(f.kernels.error()));
        if (json)
          out_files.push_back({{"path", f.path}, {"error", f.kernels.error().render()}});
        else
          print_error(f.kernels.error());
        continue;
      }
      for (const auto& gc : f.gpus)
        if (gc.coverage.verdict == api::Verdict::none) rc = std::max(rc, 1);
      if (json)
        out_files.push_back(file_json(f));
      else
        render_file(f, g.verbose > 0);
    }
    if (json) machine_json(nlohmann::json{{"files", out_files}});
    g.exit_code = rc;
  });
}

} // namespace envfix::cli
