#pragma once
// Text and JSON views shared by several commands (docs/json.md): sizes, durations, the host lines,
// the plan document.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/host.hpp"
#include "api/plan.hpp"
#include "diagnosis/finding.hpp"
#include "installer/txn_result.hpp"
#include "resolver/plan.hpp"

namespace envfix::cli {

[[nodiscard]] std::string human_size(std::uint64_t n);
[[nodiscard]] std::string human_duration(double seconds); // "812ms", "3.41s"

// "host: NVIDIA H200 (sm_90); driver 580.1; Python 3.11.7 (cp311, glibc 2.36)"
// followed by "\ninterpreter: /w/venv/bin/python (from $VIRTUAL_ENV)".
[[nodiscard]] std::string host_line(const api::Host& h);
[[nodiscard]] std::string interpreter_line(const api::Host& h);

// The plan/apply JSON fields of docs/json.md (channel, index, variant, install[], remove[], …).
[[nodiscard]] nlohmann::json plan_json(const resolver::Plan& p, const api::Host& h);

// "Would download 1.2 GiB (3 files). Nothing was changed (--dry-run)." (plan, apply --dry-run): a
// file the index gives no size for is counted apart ("0 B" would be a wrong answer); a CPU set says
// what GPU set it replaces.
[[nodiscard]] std::string download_line(const resolver::Plan& p, bool dry_run);

// -v: what the plan (and an apply's downloads) asked of the indexes and the cache, for someone
// asking why a run was slow or what it read: "index: 14 pages (3 fresh in the cache, 2 revalidated), …".
[[nodiscard]] std::string index_traffic(const api::PlanContext& ctx);

// One name-sorted change list, removals and installs together, as uv prints it (" - torch==2.6.0",
// " + torch==2.7.0+cu128"; a name's removal before its install). `detail` adds why a package goes
// and who forces a replacement (plan).
[[nodiscard]] std::vector<std::string> change_list(const resolver::Plan& p, bool detail = false);
[[nodiscard]] std::vector<std::string> change_list(const installer::TransactionResult& txn);

// What the planner said of a printed fix before it was shown (api/doctor.hpp prove_fix), one line
// under the fix (nothing when it was not tried); and the same for JSON: {state, detail}.
void render_fix_proof(diagnosis::FixProof proof, const util::Message& detail);
[[nodiscard]] nlohmann::json fix_proof_json(diagnosis::FixProof proof, const util::Message& detail);

} // namespace envfix::cli
