// Benchmark driver for the index module (not a test): parse time of a 10,000-anchor project page,
// and time to fetch the metadata of 50 wheels from a local nginx index, each against pip 23.2.1 on
// the same input. Prints a Markdown report on stdout. Run through bench/index/run.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "index/index_client.hpp"
#include "index/project_page.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
std::unique_ptr<testing::NginxServer> g_nginx; // stopped on every exit path
[[noreturn]] void die(const Error& e) {
  g_nginx.reset();
  std::fprintf(stderr, "%s", e.render().c_str());
  std::exit(2);
}
} // namespace

int main(int argc, char** argv) {
  const int anchors = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int wheels = argc > 2 ? std::atoi(argv[2]) : 50;
  const int reps = 5;
  fs::path work = util::make_temp_dir({}, "envfix-bench").value();

  // 1. Parse a large page (same text for both tools).
  std::string html = "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\"></head><body>\n";
  for (int i = 0; i < anchors; ++i)
    html +=
        fmt::format("<a href=\"/whl/cu128/torch-2.{}.{}%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl#sha256={:064x}\" "
                    "data-requires-python=\"&gt;=3.9\" data-dist-info-metadata=\"sha256={:064x}\" "
                    "data-core-metadata=\"sha256={:064x}\">torch-2.{}.{}+cu128-cp311-cp311-manylinux_2_28_x86_64.whl</a><br/>\n",
                    i / 100, i % 100, i, i, i, i / 100, i % 100);
  html += "</body></html>\n";
  util::write_file_atomic(work / "page.html", html).value();
  std::vector<double> ours;
  std::size_t parsed = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    auto page = index::parse_html_page(html, {.page_url = "https://download.pytorch.org/whl/cu128/torch/",
                                              .project = "torch",
                                              .index_url = "https://download.pytorch.org/whl/cu128"});
    ours.push_back(ms_since(t0));
    if (!page) die(page.error());
    parsed = page->candidates.size();
  }
  std::string pip_parse = R"(
import sys, time
from pip._internal.index.collector import parse_links, IndexContent
data = open(sys.argv[1], 'rb').read()
best = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    page = IndexContent(data, 'text/html', 'utf-8', 'https://download.pytorch.org/whl/cu128/torch/', cache_link_parsing=False)
    links = list(parse_links(page))
    best.append((time.perf_counter() - t0) * 1000)
best.sort()
print(len(links), best[len(best)//2])
)";
  auto pr = util::run_process({"python3", "-c", pip_parse, (work / "page.html").string(), std::to_string(reps)},
                              {.timeout = std::chrono::minutes(5)});
  if (!pr || !pr->ok()) die(pr ? Error{ErrorCode::subprocess, "pip parse failed: " + pr->err} : pr.error());
  std::size_t pip_links = 0;
  double pip_ms = 0;
  std::sscanf(pr->out.c_str(), "%zu %lf", &pip_links, &pip_ms);

  // 2. Metadata of N wheels from nginx over HTTPS (PEP 658 files present, as on PyPI/PyTorch).
  std::string spec = "{\"packages\":[";
  for (int i = 0; i < wheels; ++i)
    spec += fmt::format("{}{{\"name\":\"benchpkg{}\",\"version\":\"1.0\",\"requires_dist\":[\"numpy>=1\"],\"pad_bytes\":200000}}",
                        i ? "," : "", i);
  spec += "]}";
  fs::path root = work / "index";
  if (auto s = testing::build_index(root, spec); !s) die(s.error());
  auto started = testing::NginxServer::start({.root = root});
  if (!started) die(started.error());
  g_nginx = std::move(*started);
  auto* nginx = &g_nginx;
  std::string index_url = (*nginx)->https_url() + "/simple";

  auto run_envfix = [&](bool range_only, std::size_t parallel) {
    index::IndexClientOptions o;
    o.cache_dir = work / fmt::format("cache-{}-{}-{}", range_only, parallel, rand());
    o.http.ca_file = (*nginx)->ca_file();
    o.parallelism = parallel;
    auto client = index::IndexClient::create(o).value();
    auto t0 = Clock::now();
    std::vector<index::Candidate> cs;
    for (int i = 0; i < wheels; ++i) {
      auto c = client.project_candidates(index_url, fmt::format("benchpkg{}", i));
      if (!c) die(c.error());
      for (auto& x : *c) {
        if (range_only) x.has_metadata = false;
        cs.push_back(x);
      }
    }
    auto res = client.fetch_metadata_many(cs);
    for (auto& r : res)
      if (!r) die(r.error());
    return ms_since(t0);
  };
  double e_seq = run_envfix(false, 1);
  double e_par = run_envfix(false, 8);
  double e_range = run_envfix(true, 8);

  std::vector<std::string> argv_pip = {"python3",
                                       "-m",
                                       "pip",
                                       "install",
                                       "--dry-run",
                                       "--ignore-installed",
                                       "--no-deps",
                                       "--quiet",
                                       "--report",
                                       (work / "report.json").string(),
                                       "--no-cache-dir",
                                       "--index-url",
                                       index_url,
                                       "--cert",
                                       (*nginx)->ca_file().string()};
  for (int i = 0; i < wheels; ++i) argv_pip.push_back(fmt::format("benchpkg{}", i));
  util::SubprocessOptions so{
      .timeout = std::chrono::minutes(5),
      .unset_env = {"PIP_FIND_LINKS", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "PIP_INDEX_URL"}};
  auto t0 = Clock::now();
  auto pip_run = util::run_process(argv_pip, so);
  double pip_dry = ms_since(t0);
  if (!pip_run || !pip_run->ok())
    die(pip_run ? Error{ErrorCode::subprocess, "pip --dry-run failed: " + pip_run->err} : pip_run.error());

  std::vector<std::string> argv_dl = {"python3",
                                      "-m",
                                      "pip",
                                      "download",
                                      "--no-deps",
                                      "--quiet",
                                      "--no-cache-dir",
                                      "-d",
                                      (work / "pipdl").string(),
                                      "--index-url",
                                      index_url,
                                      "--cert",
                                      (*nginx)->ca_file().string()};
  for (int i = 0; i < wheels; ++i) argv_dl.push_back(fmt::format("benchpkg{}", i));
  t0 = Clock::now();
  auto dl = util::run_process(argv_dl, so);
  double pip_dl = ms_since(t0);
  if (!dl || !dl->ok()) die(dl ? Error{ErrorCode::subprocess, "pip download failed: " + dl->err} : dl.error());

  fmt::print("| measurement | envfix | pip 23.2.1 | ratio (pip / envfix) |\n|---|---|---|---|\n");
  fmt::print("| parse {}-anchor page ({} KiB), median of {} | {:.1f} ms ({} candidates) | {:.1f} ms ({} links) | {:.1f}x |\n",
             anchors, html.size() / 1024, reps, median(ours), parsed, pip_ms, pip_links, pip_ms / median(ours));
  fmt::print(
      "| metadata of {} wheels, PEP 658, 8 parallel (pages + metadata) | {:.0f} ms | {:.0f} ms (`install --dry-run --report`) | {:.1f}x |\n",
      wheels, e_par, pip_dry, pip_dry / e_par);
  fmt::print("| metadata of {} wheels, PEP 658, sequential | {:.0f} ms | {:.0f} ms | {:.1f}x |\n", wheels, e_seq, pip_dry,
             pip_dry / e_seq);
  fmt::print(
      "| metadata of {} wheels by HTTP range reads, 8 parallel | {:.0f} ms | {:.0f} ms (`pip download`, whole wheels) | {:.1f}x |\n",
      wheels, e_range, pip_dl, pip_dl / e_range);
  g_nginx.reset();
  std::error_code ec;
  fs::remove_all(work, ec);
  return 0;
}
