#include "cli/views.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "index/candidate.hpp"
#include "specs/name.hpp"

namespace envfix::cli {

using api::Host;

std::string human_size(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string download_line(const resolver::Plan& p, bool dry_run) {
  std::size_t unknown = 0;
  for (const auto& i : p.install) unknown += i.size ? 0 : 1;
  std::string amount = unknown == p.install.size() ? i18n::trs("size unknown")
                       : unknown                   ? i18n::trf("{} + size unknown for {}", human_size(p.download_size()), unknown)
                                                   : human_size(p.download_size());
  const std::string files = p.install.size() == 1 ? i18n::trs("1 file") : i18n::trf("{} files", p.install.size());
  auto line = i18n::trf("Would download {} ({}). Nothing was changed{}.", amount, files,
                        i18n::tr(dry_run ? " (--dry-run)" : " (plan only; `envfix apply` executes it)"));
  // The CPU set against the GPU set it replaces (issue 56): what the download saves, in disk terms.
  if (const auto& g = p.gpu_set_replaced)
    line += "\n" + (g->packages == 1 ? i18n::trf("The CPU set replaces a GPU package that takes {} installed (a CUDA build or "
                                                 "an nvidia-* library).",
                                                 human_size(g->bytes))
                                     : i18n::trf("The CPU set replaces {} GPU packages that take {} installed (the CUDA builds "
                                                 "and their nvidia-* libraries).",
                                                 g->packages, human_size(g->bytes)));
  return line;
}

std::string index_traffic(const api::PlanContext& ctx) {
  if (!ctx.client) return {};
  const auto s = ctx.client->stats();
  const auto metadata = s.metadata_pep658 + s.metadata_range + s.metadata_full + s.metadata_local;
  return i18n::trf("index: {} page requests in {} rounds ({} fresh in the cache, {} revalidated, {} offline); metadata: {} "
                   "read ({} PEP 658, {} by range, {} whole files, {} local), {} from the cache; wheels: {} downloaded ({}), {} "
                   "from the cache; cache {}",
                   s.page_requests, s.page_rounds, s.page_fresh_hits, s.page_revalidated, s.page_offline_hits, metadata,
                   s.metadata_pep658, s.metadata_range, s.metadata_full, s.metadata_local, s.metadata_cache, s.downloads,
                   human_size(s.bytes_downloaded), s.download_cache_hits, ctx.client->cache_dir().string());
}

std::string human_duration(double seconds) {
  return seconds < 1.0 ? fmt::format("{:.0f}ms", seconds * 1000) : fmt::format("{:.2f}s", seconds);
}

nlohmann::json plan_json(const resolver::Plan& p, const Host& h) {
  using nlohmann::json;
  json j;
  j["channel"] = p.channel;
  j["index"] = p.index;
  j["variant"] = p.variant;
  j["why"] = p.why.text;
  j["install"] = json::array();
  for (const auto& i : p.install) {
    json x{{"name", i.name}, {"version", i.version}, {"filename", i.filename}, {"url", index::redact_url(i.url)}};
    x["sha256"] = i.sha256 ? json(*i.sha256) : json(nullptr);
    x["size"] = i.size ? json(*i.size) : json(nullptr);
    x["replaces"] = i.replaces.empty() ? json(nullptr) : json(i.replaces);
    x["required_by"] = i.required_by;
    j["install"].push_back(x);
  }
  j["remove"] = json::array();
  for (const auto& r : p.remove)
    j["remove"].push_back({{"name", r.name},
                           {"version", r.version.to_string()},
                           {"why", resolver::to_string(r.why)},
                           {"conda", r.conda.empty() ? json(nullptr) : json(r.conda)}});
  j["keep"] = p.keep;
  j["gpu_set_replaced"] =
      p.gpu_set_replaced ? json{{"bytes", p.gpu_set_replaced->bytes}, {"packages", p.gpu_set_replaced->packages}} : json(nullptr);
  j["rejected"] = json::array();
  for (const auto& r : p.rejected)
    j["rejected"].push_back({{"name", r.name},
                             {"version", r.version},
                             {"index", r.index},
                             {"reason", std::string(resolver::to_string(r.reason))},
                             {"detail", r.detail},
                             {"filename", r.filename}});
  j["warnings"] = util::texts(p.warnings);
  j["download_size"] = p.download_size();
  std::size_t unknown = 0;
  for (const auto& i : p.install) unknown += i.size ? 0 : 1;
  j["download_size_unknown"] = unknown; // files of install[] whose size the index does not give
  json gpus = json::array();
  for (const auto& [name, cc] : h.gpus) gpus.push_back({{"name", name}, {"arch", cc.sm_name()}});
  j["host"] = {{"gpus", gpus},
               {"driver", h.driver},
               {"python", h.python.python_full_version.to_string()},
               {"interpreter", h.facts.python ? json(h.facts.python->executable.string()) : json(nullptr)},
               {"interpreter_from", h.facts.python_from}};
  return j;
}

std::string host_line(const Host& h) {
  std::string gpus;
  for (const auto& [name, cc] : h.gpus) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} ({})", name, cc.sm_name());
  return fmt::format("{} {}; {}; {}\n{}", styled(i18n::tr("host:"), Style::bold), gpus.empty() ? i18n::tr("no GPU") : gpus,
                     i18n::trf("driver {}", h.driver.empty() ? i18n::tr("none") : h.driver), h.python_text, interpreter_line(h));
}

std::string interpreter_line(const Host& h) {
  // The environment diffed against and changed: never implicit (a python3 on PATH may not be the one meant).
  const auto label = styled(i18n::tr("interpreter:"), Style::bold);
  if (!h.facts.python) return fmt::format("{} {}", label, i18n::tr("none"));
  return fmt::format(
      "{} {}", label,
      i18n::trf("{} (from {})", h.facts.python->executable.string(), h.facts.python_from.empty() ? "?" : h.facts.python_from));
}

namespace {

struct Change {
  std::string name;
  int order; // 0 removal, 1 install
  std::string line;
};

std::vector<std::string> sorted_lines(std::vector<Change> changes) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return std::tie(a.name, a.order) < std::tie(b.name, b.order); });
  std::vector<std::string> out;
  for (auto& c : changes) out.push_back(std::move(c.line));
  return out;
}

std::string removal(std::string_view name, std::string_view version) {
  return fmt::format(" {} {}=={}", styled("-", Style::red), name, version);
}
std::string addition(std::string_view name, std::string_view version) {
  return fmt::format(" {} {}=={}", styled("+", Style::green), name, version);
}

} // namespace

std::vector<std::string> change_list(const resolver::Plan& p, bool detail) {
  std::vector<Change> changes;
  for (const auto& r : p.remove) {
    std::string line = removal(r.name, r.version.to_string());
    if (detail)
      line += (r.why == resolver::RemoveReason::replaced ? ""
                                                         : styled(fmt::format(" ({})", resolver::to_string(r.why)), Style::dim)) +
              (r.conda.empty() ? "" : styled(i18n::trf(" (conda's: {})", r.conda), Style::yellow));
    changes.push_back({r.name, 0, std::move(line)});
  }
  for (const auto& i : p.install) {
    std::string line = addition(i.name, i.version);
    // A replacement names who forces it: an installed package changes only when a requirement does.
    if (detail && !i.replaces.empty() && !i.required_by.empty()) {
      std::string why;
      for (const auto& r : i.required_by) why += (why.empty() ? "" : ", ") + r;
      line += styled(i18n::trf(" (replaces {}; required by {})", i.replaces, why), Style::dim);
    }
    changes.push_back({i.name, 1, std::move(line)});
  }
  return sorted_lines(std::move(changes));
}

std::vector<std::string> change_list(const installer::TransactionResult& txn) {
  std::vector<Change> changes;
  for (const auto& d : txn.removed)
    changes.push_back({specs::normalize_name(d.name), 0, removal(specs::normalize_name(d.name), d.version)});
  for (const auto& d : txn.installed)
    changes.push_back({specs::normalize_name(d.name), 1, addition(specs::normalize_name(d.name), d.version)});
  return sorted_lines(std::move(changes));
}

void render_fix_proof(diagnosis::FixProof proof, const util::Message& said) {
  using diagnosis::FixProof;
  if (proof == FixProof::not_tried) return;
  const auto detail = i18n::tr(said);
  const auto line = proof == FixProof::proven    ? i18n::trf("  proven: the planner resolves it ({})", detail)
                    : proof == FixProof::nearest ? i18n::trf("  nearest: {}", detail)
                    : proof == FixProof::failed  ? i18n::trf("  does not resolve: {}", detail)
                                                 : i18n::trf("  not proven: the index could not be asked ({})", detail);
  human(styled(line, proof == FixProof::proven ? Style::dim : Style::yellow));
}

nlohmann::json fix_proof_json(diagnosis::FixProof proof, const util::Message& detail) {
  return {{"state", diagnosis::to_string(proof)},
          {"detail", detail.empty() ? nlohmann::json(nullptr) : nlohmann::json(detail.text)}};
}

} // namespace envfix::cli
