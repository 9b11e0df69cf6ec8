// envfix inspect FILE... [--gpu sm_XX|9.0 ...]: the GPU code in binaries, and per-GPU coverage
// counted in fatbin containers (design.md §3.1, §4; reference/fatbin.md).
#include <chrono>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "specs/gpu_arch.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::cli {
namespace {

std::string join_or_none(const std::vector<std::string>& v) {
  if (v.empty()) return "none";
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

std::string summary_line(const std::string& path, const wheel::KernelSet& ks) {
  std::string comp;
  if (auto n = ks.compressed_count(); n > 0)
    comp = fmt::format(" ({} compressed{})", n, ks.has_zstd() ? ", ZSTD: needs a driver for CUDA >= 12.4" : "");
  std::string line = fmt::format("{}: {} containers, {} entries{}; SASS {}; PTX {}", path, ks.containers.size(),
                                 ks.entry_count(), comp, join_or_none(ks.sass()), join_or_none(ks.ptx()));
  if (auto lto = ks.lto(); !lto.empty()) line += "; LTO-IR " + join_or_none(lto);
  return line;
}

std::string coverage_line(const specs::ComputeCapability& cc, const wheel::Coverage& c) {
  std::string name = cc.sm_name();
  std::string embedded;
  if (c.embedded_total > 0)
    embedded = fmt::format("; embedded (loaded by the library itself): {}/{} have code", c.embedded_runnable,
                           c.embedded_total);
  if (c.total == 0) return fmt::format("  {}: no registered GPU code{}", name, embedded);
  std::string how;
  if (c.via_ptx > 0) how = fmt::format(", {} only by PTX JIT", c.via_ptx);
  how += embedded;
  if (c.full())
    return fmt::format("  {}: {}/{} containers runnable{}{}", styled(name, Style::green), c.runnable, c.total,
                       c.via_ptx > 0 ? "" : " via SASS", how);
  return fmt::format("  {}: {}/{} containers runnable ({} lack code){}", styled(name, Style::red), c.runnable,
                     c.total, c.total - c.runnable, how);
}

} // namespace

void add_inspect_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("inspect", "Kernels in .so/.whl/.a/.o/.cubin/.fatbin files, and GPU coverage");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "Files to read")->required();
  cmd->footer("Use --gpu sm_XX or --gpu 9.0 (repeatable) to judge coverage. Exit 0 when every GPU is\n"
              "fully covered in every file, 1 when not or a file is bad, 2 on a runtime error.");
  cmd->callback([&g, files] {
    std::vector<specs::ComputeCapability> gpus;
    for (const auto& s : g.gpus) {
      auto cc = specs::ComputeCapability::parse(s);
      if (!cc) {
        print_error(Error(cc.error()).context(fmt::format("--gpu {}", s)));
        g.exit_code = 1;
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
        if (json) out_files.push_back({{"path", path}, {"error", ks.error().render()}});
        else print_error(ks.error());
        continue;
      }
      nlohmann::json cov = nlohmann::json::object();
      std::vector<std::string> lines;
      for (const auto& cc : gpus) {
        auto c = ks->coverage(cc);
        if (!c.full()) rc = std::max(rc, 1);
        cov[cc.sm_name()] = {{"runnable", c.runnable}, {"total", c.total}, {"via", c.via()},
                             {"via_sass", c.via_sass}, {"via_ptx", c.via_ptx},
                             {"embedded_runnable", c.embedded_runnable}, {"embedded_total", c.embedded_total}};
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
        if (g.verbose > 0) human(fmt::format("  read in {:.1f} ms", ms));
      }
    }
    if (json) machine(nlohmann::json{{"files", out_files}}.dump(2));
    g.exit_code = rc;
  });
}

} // namespace envfix::cli
