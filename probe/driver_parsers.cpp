#include "probe/driver_parsers.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "probe/text.hpp"

namespace envfix::probe {

namespace {

bool is_driver_version(std::string_view s) {
  // 535.54.03, 580.159.04, 470.42 — digits and dots, starting with a digit, at least one dot.
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  bool dot = false;
  for (char c : s) {
    if (c == '.')
      dot = true;
    else if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  }
  return dot && s.back() != '.';
}

std::optional<std::uint64_t> parse_mib(std::string_view v) {
  v = trim(v);
  if (v.ends_with("MiB")) v = trim(v.substr(0, v.size() - 3));
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || p != v.data() + v.size()) return std::nullopt;
  return n * 1024 * 1024;
}

} // namespace

Expected<std::string> parse_proc_driver_version(std::string_view text) {
  for (auto line : split_lines(text)) {
    if (!line.starts_with("NVRM version:")) continue;
    // The version is the first whitespace-separated token that looks like one; the rest of the
    // line (module flavour, build host) varies between open/proprietary modules.
    for (auto tok : split_ws(line.substr(13))) {
      if (is_driver_version(tok)) return std::string(tok);
    }
    return fail(ErrorCode::invalid_input, "no driver version in NVRM line: '{}'", trim(line));
  }
  return make_error(ErrorCode::invalid_input, util::msg("no 'NVRM version:' line in /proc/driver/nvidia/version"));
}

Expected<std::string> parse_sys_module_version(std::string_view text) {
  auto v = trim(text);
  if (!is_driver_version(v)) return fail(ErrorCode::invalid_input, "not a driver version: '{}'", v);
  return std::string(v);
}

std::vector<std::string> nvidia_smi_csv_argv(const std::string& nvidia_smi) {
  return {nvidia_smi, "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total", "--format=csv"};
}

Expected<std::vector<SmiCsvRow>> parse_nvidia_smi_csv(std::string_view text) {
  auto lines = split_lines(text);
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  if (i == lines.size()) return make_error(ErrorCode::invalid_input, util::msg("nvidia-smi CSV output is empty"));
  std::vector<std::string> header;
  for (auto h : split(lines[i], ',')) header.emplace_back(trim(h));
  auto col = [&](std::string_view prefix) -> int {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (std::string_view(header[c]).starts_with(prefix)) return static_cast<int>(c);
    return -1;
  };
  int c_index = col("index"), c_name = col("name"), c_uuid = col("uuid"), c_cc = col("compute_cap"),
      c_drv = col("driver_version"), c_mem = col("memory.total");
  if (c_index < 0 || c_name < 0)
    return fail(ErrorCode::invalid_input, "nvidia-smi CSV header lacks index/name: '{}'", trim(lines[i]));
  std::vector<SmiCsvRow> rows;
  for (++i; i < lines.size(); ++i) {
    auto line = trim(lines[i]);
    if (line.empty()) continue;
    std::vector<std::string_view> cells;
    for (auto c : split(line, ',')) cells.push_back(trim(c));
    if (cells.size() != header.size())
      return fail(ErrorCode::invalid_input, "nvidia-smi CSV line {}: {} cells, header has {}: '{}'", i + 1, cells.size(),
                  header.size(), line);
    SmiCsvRow r;
    auto idx = cells[static_cast<std::size_t>(c_index)];
    auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), r.index);
    if (ec != std::errc{} || p != idx.data() + idx.size())
      return fail(ErrorCode::invalid_input, "nvidia-smi CSV line {}: bad index '{}'", i + 1, idx);
    r.name = std::string(cells[static_cast<std::size_t>(c_name)]);
    if (c_uuid >= 0) r.uuid = std::string(cells[static_cast<std::size_t>(c_uuid)]);
    if (c_cc >= 0) {
      if (auto cc = specs::ComputeCapability::parse(cells[static_cast<std::size_t>(c_cc)])) r.cc = *cc;
    }
    if (c_drv >= 0) r.driver_version = std::string(cells[static_cast<std::size_t>(c_drv)]);
    if (c_mem >= 0) r.memory_bytes = parse_mib(cells[static_cast<std::size_t>(c_mem)]).value_or(0);
    rows.push_back(std::move(r));
  }
  return rows;
}

Expected<SmiReport> parse_nvidia_smi_q(std::string_view text) {
  SmiReport rep;
  SmiReport::Gpu* gpu = nullptr;
  std::string section; // the 4-space-indented heading we are under ("FB Memory Usage")
  for (auto raw : split_lines(text)) {
    if (trim(raw).empty()) continue;
    std::size_t indent = raw.find_first_not_of(' ');
    auto colon = raw.find(" : ");
    std::string_view key = trim(colon == std::string_view::npos ? raw : raw.substr(0, colon));
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : trim(raw.substr(colon + 3));
    if (indent == 0) {
      if (key.starts_with("GPU ") && colon == std::string_view::npos) {
        rep.gpus.push_back({});
        gpu = &rep.gpus.back();
        gpu->bus_id = std::string(trim(key.substr(4)));
        section.clear();
      } else if (key == "Driver Version") {
        rep.driver_version = std::string(value);
      } else if (key == "CUDA Version") {
        if (auto c = specs::CudaVersion::parse(value)) rep.cuda = *c;
      }
      continue;
    }
    if (!gpu) continue;
    if (indent == 4) {
      section = colon == std::string_view::npos ? std::string(key) : std::string();
      if (key == "Product Name")
        gpu->name = std::string(value);
      else if (key == "Product Architecture")
        gpu->architecture = std::string(value);
      else if (key == "GPU UUID")
        gpu->uuid = std::string(value);
      else if (key == "Minor Number") {
        int n = -1;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec == std::errc{}) gpu->minor_number = n;
      }
    } else if (section == "FB Memory Usage" && key == "Total") {
      gpu->memory_bytes = parse_mib(value).value_or(0);
    }
  }
  if (rep.driver_version.empty())
    return make_error(ErrorCode::invalid_input, util::msg("no 'Driver Version' line in nvidia-smi -q output"));
  return rep;
}

specs::CudaVersion cuda_version_from_int(int v) { return {v / 1000, (v % 1000) / 10}; }

namespace {

// The MIG device a CUDA_VISIBLE_DEVICES entry names: "MIG-<uuid>" (full or a unique prefix) or
// "MIG-GPU-<uuid>/<gi>/<ci>" (CUDA 11.0's form: the GPU, then its GPU and compute instance).
std::optional<GpuInfo> find_mig(const std::vector<GpuInfo>& all, std::string_view tok) {
  auto device = [](const GpuInfo& gpu, std::size_t i, const MigDevice* m, std::string_view uuid) {
    GpuInfo g = gpu;
    g.mig.clear();
    g.mig_of = gpu.uuid;
    g.uuid = std::string(uuid);
    if (m) {
      if (!m->profile.empty()) g.name += " MIG " + m->profile;
      g.memory_bytes = m->memory_bytes;
    } else {
      g.name += " MIG";
      g.memory_bytes = 0;
    }
    if (g.physical_index < 0) g.physical_index = static_cast<int>(i);
    return g;
  };
  if (tok.starts_with("MIG-GPU-")) {
    auto gpu_uuid = tok.substr(4, tok.find('/') - 4);
    if (gpu_uuid.size() == tok.size() - 4) return std::nullopt; // no /gi/ci
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].uuid == gpu_uuid && !all[i].mig.empty()) return device(all[i], i, nullptr, tok);
    return std::nullopt;
  }
  std::optional<GpuInfo> hit;
  int matches = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    for (const auto& m : all[i].mig)
      if (tok.size() > 4 && std::string_view(m.uuid).starts_with(tok)) {
        ++matches;
        hit = device(all[i], i, &m, m.uuid);
      }
  if (matches != 1) return std::nullopt;
  return hit;
}

} // namespace

Expected<std::vector<SmiListGpu>> parse_nvidia_smi_list(std::string_view text) {
  std::vector<SmiListGpu> out;
  auto uuid_in = [](std::string_view line) -> std::string {
    auto at = line.find("(UUID: ");
    if (at == std::string_view::npos) return {};
    auto rest = line.substr(at + 7);
    return std::string(rest.substr(0, rest.find(')')));
  };
  for (auto line : split(text, '\n')) {
    auto t = trim(line);
    if (t.starts_with("GPU ")) {
      auto colon = t.find(':');
      if (colon == std::string_view::npos) continue;
      SmiListGpu g;
      auto idx = t.substr(4, colon - 4);
      auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), g.index);
      if (ec != std::errc{}) continue;
      auto name = trim(t.substr(colon + 1));
      g.name = std::string(trim(name.substr(0, name.find(" (UUID: "))));
      g.uuid = uuid_in(t);
      out.push_back(std::move(g));
    } else if (t.starts_with("MIG ") && !out.empty()) {
      MigDevice m;
      auto rest = trim(t.substr(4));
      m.profile = std::string(rest.substr(0, rest.find(' ')));
      m.uuid = uuid_in(t);
      if (!m.uuid.starts_with("MIG-")) continue;
      out.back().mig.push_back(std::move(m));
    }
  }
  if (out.empty()) return make_error(ErrorCode::invalid_input, util::msg("no 'GPU N: … (UUID: …)' line in nvidia-smi -L output"));
  return out;
}

std::vector<GpuInfo> apply_cuda_visible_devices(const std::vector<GpuInfo>& all, const std::optional<std::string>& value) {
  std::vector<GpuInfo> out;
  if (!value) {
    out = all;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].physical_index < 0) out[i].physical_index = static_cast<int>(i);
      out[i].index = static_cast<int>(i);
    }
    return out;
  }
  std::set<std::size_t> seen;
  std::set<std::string> seen_mig;
  for (auto tok : split(*value, ',')) {
    tok = trim(tok);
    if (tok.empty()) break;
    std::optional<std::size_t> hit;
    if (std::isdigit(static_cast<unsigned char>(tok.front()))) {
      std::size_t n = 0;
      auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), n);
      if (ec != std::errc{} || p != tok.data() + tok.size()) break; // "0abc": invalid, stop
      if (n < all.size()) hit = n;
    } else if (tok.starts_with("MIG-")) {
      auto mig = find_mig(all, tok);
      if (!mig) break;
      if (!seen_mig.insert(mig->uuid).second) return {};
      out.push_back(std::move(*mig));
      out.back().index = static_cast<int>(out.size() - 1);
      continue;
    } else {
      // UUID, full or unique prefix, "GPU-" optional.
      std::string_view want = tok.starts_with("GPU-") ? tok.substr(4) : tok;
      int matches = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        std::string_view u = all[i].uuid;
        if (u.starts_with("GPU-")) u.remove_prefix(4);
        if (!want.empty() && u.starts_with(want)) {
          ++matches;
          hit = i;
        }
      }
      if (matches != 1) hit.reset();
    }
    if (!hit) break;
    if (!seen.insert(*hit).second) return {}; // a duplicate makes the whole list invalid
    GpuInfo g = all[*hit];
    if (g.physical_index < 0) g.physical_index = static_cast<int>(*hit);
    g.index = static_cast<int>(out.size());
    out.push_back(std::move(g));
  }
  return out;
}

} // namespace envfix::probe
