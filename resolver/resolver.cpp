#include "resolver/resolver.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "index/url.hpp"
#include "specs/name.hpp"
#include "specs/specifier.hpp"

namespace envfix::resolver {

namespace {

constexpr std::string_view kPythonKey = "<Python from Requires-Python>";

// Insertion-ordered map (Python dict semantics, which resolvelib's behaviour depends on).
template <class V>
class OrderedMap {
public:
  V* get(const std::string& k) {
    auto it = m_index.find(k);
    return it == m_index.end() ? nullptr : &m_items[it->second].second;
  }
  const V* get(const std::string& k) const {
    auto it = m_index.find(k);
    return it == m_index.end() ? nullptr : &m_items[it->second].second;
  }
  void set(const std::string& k, V v) {
    if (auto* p = get(k)) {
      *p = std::move(v);
      return;
    }
    m_index.emplace(k, m_items.size());
    m_items.emplace_back(k, std::move(v));
  }
  void erase(const std::string& k) {
    auto it = m_index.find(k);
    if (it == m_index.end()) return;
    m_items.erase(m_items.begin() + static_cast<std::ptrdiff_t>(it->second));
    reindex();
  }
  std::pair<std::string, V> pop_last() {
    auto last = std::move(m_items.back());
    m_items.pop_back();
    m_index.erase(last.first);
    return last;
  }
  bool empty() const { return m_items.empty(); }
  auto begin() const { return m_items.begin(); }
  auto end() const { return m_items.end(); }
  auto begin() { return m_items.begin(); }
  auto end() { return m_items.end(); }

private:
  void reindex() {
    m_index.clear();
    for (std::size_t i = 0; i < m_items.size(); ++i) m_index.emplace(m_items[i].first, i);
  }
  std::vector<std::pair<std::string, V>> m_items;
  std::unordered_map<std::string, std::size_t> m_index;
};

struct Node {      // a candidate: one file of a project, seen through an identifier (with extras)
  std::string key; // "name" or "name[a,b]" or kPythonKey
  std::string name;
  std::vector<std::string> extras;
  int file = -1; // index into the project's usable files; -1 for the Python pseudo-candidate
};

struct Req {
  std::string key, name;
  std::vector<std::string> extras;
  specs::SpecifierSet spec;
  int explicit_node = -1; // "exactly this candidate" (the base of an extras candidate)
  bool python = false;    // a Requires-Python requirement
  std::string text;       // for messages
};

struct Info {
  int req = -1;
  int parent = -1; // node id; -1 = the user's request
};

struct Criterion {
  std::vector<int> candidates;
  std::vector<Info> information;
  std::vector<int> incompatibilities;
};

struct State {
  OrderedMap<int> mapping;
  OrderedMap<Criterion> criteria;
  std::vector<Info> backtrack_causes;
};

struct Project {
  ProjectFiles files;
  std::map<int, specs::CoreMetadata> metadata;
};

std::string make_key(const std::string& name, const std::vector<std::string>& extras) {
  if (extras.empty()) return name;
  std::string k = name + "[";
  for (std::size_t i = 0; i < extras.size(); ++i) k += (i ? "," : "") + extras[i];
  return k + "]";
}

std::vector<std::string> normalized_extras(const std::vector<std::string>& extras) {
  std::set<std::string> s;
  for (const auto& e : extras) s.insert(specs::normalize_name(e));
  return {s.begin(), s.end()};
}

struct Conflict {
  Criterion criterion;
};

// Marker-less view of an interpreter/abi pair, to tell python-tag from platform rejections.
std::string interp_abi(const specs::Tag& t) { return t.interpreter + "-" + t.abi; }

} // namespace

bool is_pinned(const specs::SpecifierSet& set) {
  for (const auto& c : set.clauses()) {
    auto t = c.to_string();
    if (t.starts_with("===")) return true;
    if (t.starts_with("==") && !t.ends_with(".*")) return true;
  }
  return false;
}

const Pin* Resolution::find(std::string_view name) const {
  for (const auto& p : pins)
    if (p.name == name) return &p;
  return nullptr;
}

std::set<std::string> Resolution::required_through(const std::set<std::string>& roots) const {
  std::set<std::string> out;
  // required_by holds "name[extras]==version" (node_text) or "<request>".
  auto requirer = [](const std::string& by) { return specs::normalize_name(by.substr(0, by.find_first_of("[="))); };
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& p : pins) {
      if (roots.contains(p.name) || out.contains(p.name)) continue;
      if (std::any_of(p.required_by.begin(), p.required_by.end(), [&](const std::string& by) {
            auto n = requirer(by);
            return roots.contains(n) || out.contains(n);
          })) {
        out.insert(p.name);
        grew = true;
      }
    }
  }
  return out;
}

namespace {
// A target's tags as classify_files reads them: the ranking and the interpreter-abi pairs.
struct TagMatch {
  specs::TagRanking ranking;
  std::set<std::string> pairs;
};

// Built once per distinct tag list in a process: a plan classifies every project's files (and the
// framework selector each variant's) against the same few hundred tags, and building the ranking
// each time was a fifth of a warm plan's instructions on the real torch set
// (docs/performance-real.md). Entries are never dropped (references stay valid); a process sees
// one tag list per target.
const TagMatch& tag_match(const std::vector<specs::Tag>& tags) {
  static std::mutex mutex;
  static std::vector<std::pair<std::vector<specs::Tag>, std::unique_ptr<TagMatch>>> built;
  std::lock_guard lock(mutex);
  for (const auto& [key, match] : built)
    if (key == tags) return *match;
  auto match = std::make_unique<TagMatch>(TagMatch{specs::TagRanking(tags), {}});
  for (const auto& t : tags) match->pairs.insert(interp_abi(t));
  built.emplace_back(tags, std::move(match));
  return *built.back().second;
}
} // namespace

ProjectFiles classify_files(const std::vector<index::Candidate>& files, const ResolveOptions& options) {
  ProjectFiles out;
  const TagMatch& match = tag_match(options.target.tags);
  const specs::TagRanking& ranking = match.ranking;
  const std::set<std::string>& pairs = match.pairs;
  for (const auto& f : files) {
    Rejection rej{f.project, "", f.index_url, RejectReason::invalid, "", f.filename};
    if (!f.is_wheel()) {
      rej.because(util::msg("not a wheel (source distributions are not built by envfix)"));
      out.rejected.push_back(std::move(rej));
      continue;
    }
    auto wf = specs::WheelFilename::parse(f.filename);
    if (!wf) {
      const auto* said = wf.error().said_as(wf.error().message);
      rej.because(said ? *said : util::plain(wf.error().message));
      out.rejected.push_back(std::move(rej));
      continue;
    }
    rej.version = wf->version.to_string();
    if (wf->normalized_name() != f.project) {
      rej.because(util::msg("file name is for project '{}'", wf->normalized_name()));
      out.rejected.push_back(std::move(rej));
      continue;
    }
    auto tags = wf->tags();
    auto rank = ranking.best_rank(tags);
    if (!rank) {
      bool pair_ok = std::any_of(tags.begin(), tags.end(), [&](const specs::Tag& t) { return pairs.contains(interp_abi(t)); });
      rej.reason = pair_ok ? RejectReason::platform : RejectReason::python_tag;
      std::string ts;
      for (std::size_t i = 0; i < tags.size() && i < 4; ++i) ts += (i ? " " : "") + tags[i].to_string();
      rej.because(pair_ok ? util::msg("platform of {} is not supported by the target", ts)
                          : util::msg("tags {} do not match the target interpreter", ts));
      out.rejected.push_back(std::move(rej));
      continue;
    }
    if (f.requires_python && !f.requires_python->empty()) {
      auto rp = specs::SpecifierSet::parse(*f.requires_python);
      if (rp && !rp->contains(options.target.python_full_version, true)) {
        rej.reason = RejectReason::requires_python;
        rej.requires_python = *f.requires_python;
        rej.because(util::msg("Requires-Python {} excludes Python {}", *f.requires_python,
                              options.target.python_full_version.to_string()));
        out.rejected.push_back(std::move(rej));
        continue;
      }
    }
    // A local file is its own source of truth: it is hashed if chosen (CandidateProvider::complete_hash).
    if (!options.allow_unhashed && (!f.sha256 || f.sha256->empty()) && !index::file_url_to_path(f.url) &&
        !f.url.starts_with("installed:") /* resolver/installed.hpp: already there, nothing to fetch */) {
      rej.reason = RejectReason::hash_missing;
      rej.because(util::msg("the index gives no sha256 for this file (use --allow-unhashed to accept it)"));
      out.rejected.push_back(std::move(rej));
      continue;
    }
    if (options.filter) {
      if (auto veto = options.filter(f, *wf)) {
        rej.reason = veto->reason;
        rej.because(veto->detail);
        out.rejected.push_back(std::move(rej));
        continue;
      }
    }
    out.usable.push_back(ProjectFile{wf->version, *wf, f, *rank});
  }
  std::stable_sort(out.usable.begin(), out.usable.end(), [](const ProjectFile& a, const ProjectFile& b) {
    if (a.version != b.version) return a.version > b.version;
    if (a.tag_rank != b.tag_rank) return a.tag_rank < b.tag_rank;
    auto ba = a.wheel.build ? a.wheel.build->first : 0, bb = b.wheel.build ? b.wheel.build->first : 0;
    return ba > bb;
  });
  return out;
}

struct Resolver::Impl {
  CandidateProvider& provider;
  ResolveOptions options;
  std::map<std::string, Project> projects;
  std::vector<Node> nodes;
  std::map<std::pair<std::string, int>, int> node_ids;
  std::vector<Req> reqs;
  std::map<int, std::vector<int>> deps_cache;
  std::map<std::string, std::size_t> user_requested;
  std::map<std::string, double> known_depths;
  std::vector<Rejection> rejected;
  std::set<std::string> rejected_seen;
  std::vector<State> states;
  std::optional<Conflict> last_conflict;

  Impl(CandidateProvider& p, ResolveOptions o) : provider(p), options(std::move(o)) {}

  State& state() { return states.back(); }

  Expected<Project*> project(const std::string& name) {
    auto it = projects.find(name);
    if (it != projects.end()) return &it->second;
    auto files = provider.candidates(name);
    if (!files) return std::unexpected(std::move(files).error().context(util::msg("cannot list '{}'", name)));
    Project p;
    p.files = classify_files(*files, options);
    // The preferred (installed) version is tried first; any other is tried only when it conflicts.
    if (auto pv = provider.preferred_version(name))
      std::stable_partition(p.files.usable.begin(), p.files.usable.end(),
                            [&](const ProjectFile& f) { return f.version == *pv && f.version.local() == pv->local(); });
    for (const auto& r : p.files.rejected) {
      if (rejected_seen.insert(r.filename + "|" + r.index).second) rejected.push_back(r);
    }
    return &projects.emplace(name, std::move(p)).first->second;
  }

  int node(const std::string& name, const std::vector<std::string>& extras, int file) {
    std::string key = name == kPythonKey ? std::string(kPythonKey) : make_key(name, extras);
    auto [it, added] = node_ids.emplace(std::make_pair(key, file), static_cast<int>(nodes.size()));
    if (added) nodes.push_back(Node{key, name, extras, file});
    return it->second;
  }

  const specs::Version& node_version(int id) {
    const Node& n = nodes[id];
    if (n.file < 0) return options.target.python_full_version;
    return projects.at(n.name).files.usable[static_cast<std::size_t>(n.file)].version;
  }

  std::string node_text(int id) {
    const Node& n = nodes[id];
    if (n.file < 0) return fmt::format("Python {}", options.target.python_full_version.to_string());
    return fmt::format("{}=={}", n.key, node_version(id).to_string());
  }

  int add_req(Req r) {
    reqs.push_back(std::move(r));
    return static_cast<int>(reqs.size()) - 1;
  }

  Expected<int> req_from_spec(const specs::Requirement& r) {
    if (!r.url.empty())
      return fail(ErrorCode::invalid_input, "'{}' is a direct URL requirement; envfix resolves only from indexes", r.to_string());
    Req q;
    q.name = r.normalized_name();
    q.extras = normalized_extras(r.extras);
    q.key = make_key(q.name, q.extras);
    q.spec = r.specifier;
    q.text = q.key + r.specifier.to_string();
    return add_req(std::move(q));
  }

  bool satisfied(int req_id, int node_id) {
    const Req& r = reqs[req_id];
    if (r.explicit_node >= 0) return r.explicit_node == node_id;
    return r.spec.contains(node_version(node_id), true);
  }

  std::vector<int> reqs_of(const OrderedMap<Criterion>& criteria, const std::string& key) {
    std::vector<int> out;
    if (const auto* c = criteria.get(key))
      for (const auto& i : c->information) out.push_back(i.req);
    return out;
  }

  // pip's Factory.find_matches: candidates for `key` that satisfy every requirement, best first.
  Expected<std::vector<int>> find_matches(const std::string& key, const std::vector<int>& req_ids,
                                          const std::vector<int>& incompat, const OrderedMap<Criterion>& criteria) {
    std::set<int> bad(incompat.begin(), incompat.end());
    std::vector<int> out;
    if (key == kPythonKey) {
      int py = node(std::string(kPythonKey), {}, -1);
      bool ok = std::all_of(req_ids.begin(), req_ids.end(), [&](int r) { return satisfied(r, py); });
      if (ok && !bad.contains(py)) out.push_back(py);
      return out;
    }
    const Req& first = reqs[req_ids.front()];
    const std::string name = first.name;
    const std::vector<std::string> extras = first.extras;
    std::vector<int> explicit_nodes;
    for (int r : req_ids)
      if (reqs[r].explicit_node >= 0) explicit_nodes.push_back(reqs[r].explicit_node);
    if (!extras.empty()) {
      for (int r : reqs_of(criteria, name))
        if (reqs[r].explicit_node >= 0) explicit_nodes.push_back(node(name, extras, nodes[reqs[r].explicit_node].file));
    }
    ENVFIX_TRY(project(name));
    if (!explicit_nodes.empty()) {
      std::set<int> seen;
      for (int n : explicit_nodes) {
        if (!seen.insert(n).second || bad.contains(n)) continue;
        if (std::all_of(req_ids.begin(), req_ids.end(), [&](int r) { return satisfied(r, n); })) out.push_back(n);
      }
      return out;
    }
    const auto& usable = projects.at(name).files.usable;
    specs::SpecifierSet combined;
    for (int r : req_ids) combined = combined.intersect(reqs[r].spec);
    std::vector<int> applicable;
    std::optional<bool> pre;
    if (options.prereleases == PrereleasePolicy::allow) pre = true;
    for (std::size_t i = 0; i < usable.size(); ++i)
      if (combined.contains(usable[i].version, pre)) applicable.push_back(static_cast<int>(i));
    if (applicable.empty() && !pre) {
      for (std::size_t i = 0; i < usable.size(); ++i)
        if (combined.contains(usable[i].version, true)) applicable.push_back(static_cast<int>(i));
    }
    bool all_yanked = std::all_of(applicable.begin(), applicable.end(), [&](int i) { return usable[i].file.yanked; });
    bool pinned = is_pinned(combined);
    std::vector<const specs::Version*> versions_found;
    for (int i : applicable) {
      const auto& f = usable[static_cast<std::size_t>(i)];
      if (f.file.yanked && !(all_yanked && pinned)) {
        if (rejected_seen.insert(f.file.filename + "|" + f.file.index_url).second) {
          rejected.push_back(Rejection{name, f.version.to_string(), f.file.index_url, RejectReason::yanked, "", f.file.filename});
          rejected.back().because(f.file.yanked_reason.empty() ? util::msg("yanked by the index")
                                                               : util::msg("yanked: {}", f.file.yanked_reason));
        }
        continue;
      }
      if (std::any_of(versions_found.begin(), versions_found.end(), [&](const specs::Version* v) { return *v == f.version; }))
        continue;
      versions_found.push_back(&f.version);
      int n = node(name, extras, i);
      if (!bad.contains(n)) out.push_back(n);
    }
    return out;
  }

  Expected<const specs::CoreMetadata*> metadata(const std::string& name, int file) {
    Project* p = ENVFIX_TRY(project(name));
    auto it = p->metadata.find(file);
    if (it != p->metadata.end()) return &it->second;
    const auto& f = p->files.usable[static_cast<std::size_t>(file)].file;
    auto md = provider.metadata(f);
    if (!md) return std::unexpected(std::move(md).error().context(util::msg("cannot read the metadata of {}", f.filename)));
    return &p->metadata.emplace(file, std::move(*md)).first->second;
  }

  Expected<std::vector<int>> dependencies(int node_id) {
    if (auto it = deps_cache.find(node_id); it != deps_cache.end()) return it->second;
    std::vector<int> out;
    Node n = nodes[node_id];
    if (n.file >= 0) {
      const specs::CoreMetadata* md = ENVFIX_TRY(metadata(n.name, n.file));
      std::vector<std::string> valid;
      if (!n.extras.empty()) {
        Req base;
        base.key = base.name = n.name;
        base.explicit_node = node(n.name, {}, n.file);
        base.text = node_text(base.explicit_node);
        out.push_back(add_req(std::move(base)));
        std::set<std::string> provided;
        for (const auto& e : md->provides_extra) provided.insert(specs::normalize_name(e));
        for (const auto& e : n.extras)
          if (provided.contains(e)) valid.push_back(e);
      }
      for (const auto& r : md->requires_dist) {
        if (!r.applies(options.target.markers, valid)) continue;
        out.push_back(ENVFIX_TRY(req_from_spec(r)));
      }
      if (md->requires_python && !md->requires_python->empty()) {
        Req py;
        py.key = py.name = std::string(kPythonKey);
        py.spec = *md->requires_python;
        py.python = true;
        py.text = "Python" + md->requires_python->to_string();
        out.push_back(add_req(std::move(py)));
      }
    }
    deps_cache.emplace(node_id, out);
    return out;
  }

  // resolvelib _add_to_criteria: false (and last_conflict) when nothing would satisfy the key.
  Expected<bool> add_to_criteria(OrderedMap<Criterion>& criteria, int req_id, int parent) {
    const std::string key = reqs[req_id].key;
    auto& seen = requirers[key];
    if (std::none_of(seen.begin(), seen.end(), [&](const Info& i) { return i.req == req_id && i.parent == parent; }))
      seen.push_back(Info{req_id, parent});
    const Criterion* existing = criteria.get(key);
    std::vector<int> incompat = existing ? existing->incompatibilities : std::vector<int>{};
    std::vector<int> req_ids = reqs_of(criteria, key);
    req_ids.push_back(req_id);
    auto matches = ENVFIX_TRY(find_matches(key, req_ids, incompat, criteria));
    Criterion c;
    c.candidates = std::move(matches);
    if (existing) c.information = existing->information;
    c.information.push_back(Info{req_id, parent});
    c.incompatibilities = std::move(incompat);
    if (c.candidates.empty()) {
      last_conflict = Conflict{std::move(c)};
      return false;
    }
    criteria.set(key, std::move(c));
    return true;
  }

  bool pin_satisfying(const std::string& key, const Criterion& c) {
    const int* pin = state().mapping.get(key);
    if (!pin) return false;
    return std::all_of(c.information.begin(), c.information.end(), [&](const Info& i) { return satisfied(i.req, *pin); });
  }

  using Preference = std::tuple<bool, bool, bool, bool, double, double, bool, std::string>;

  Preference preference(const std::string& key) {
    const Criterion& c = *state().criteria.get(key);
    bool has_information = !c.information.empty();
    bool pinned = false, unfree = false;
    for (const auto& i : c.information) {
      const Req& r = reqs[i.req];
      if (r.explicit_node >= 0 || r.python) continue;
      for (const auto& clause : r.spec.clauses()) {
        unfree = true;
        if (clause.to_string().starts_with("==")) pinned = true;
      }
    }
    constexpr double inf = std::numeric_limits<double>::infinity();
    double depth = inf, order = inf;
    if (auto it = user_requested.find(key); it != user_requested.end()) {
      depth = 1.0;
      order = static_cast<double>(it->second);
    } else if (has_information) {
      double m = inf;
      for (const auto& i : c.information) {
        double d = 0.0;
        if (i.parent >= 0) {
          auto kd = known_depths.find(nodes[i.parent].key);
          d = kd == known_depths.end() ? inf : kd->second;
        }
        m = std::min(m, d);
      }
      depth = m + 1.0;
    }
    known_depths[key] = depth;
    bool cause = false;
    for (const auto& bc : state().backtrack_causes) {
      if (reqs[bc.req].key == key) cause = true;
      if (bc.parent >= 0 && nodes[bc.parent].key == key) cause = true;
    }
    return {key != kPythonKey, !has_information, !pinned, !cause, depth, order, !unfree, key};
  }

  // resolvelib _attempt_to_pin_criterion: the failure causes (empty when a candidate was pinned).
  Expected<std::vector<Criterion>> attempt_to_pin(const std::string& key) {
    Criterion criterion = *state().criteria.get(key);
    std::vector<Criterion> causes;
    for (int cand : criterion.candidates) {
      OrderedMap<Criterion> criteria = state().criteria;
      auto deps = ENVFIX_TRY(dependencies(cand));
      prefetch(deps);
      bool ok = true;
      for (int d : deps) {
        if (!ENVFIX_TRY(add_to_criteria(criteria, d, cand))) {
          causes.push_back(std::move(last_conflict->criterion));
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      prefetch_best(criteria);
      state().criteria = std::move(criteria);
      state().mapping.erase(key);
      state().mapping.set(key, cand);
      return std::vector<Criterion>{};
    }
    return causes;
  }

  Expected<bool> backjump(const std::vector<Info>& causes) {
    std::set<std::string> incompatible_deps;
    for (const auto& c : causes) {
      if (c.parent >= 0) incompatible_deps.insert(nodes[c.parent].key);
      incompatible_deps.insert(reqs[c.req].key);
    }
    while (states.size() >= 3) {
      states.pop_back();
      bool incompatible_state = false;
      State broken;
      std::pair<std::string, int> last;
      while (!incompatible_state) {
        if (states.empty()) return false;
        broken = std::move(states.back());
        states.pop_back();
        if (broken.mapping.empty()) return false;
        last = broken.mapping.pop_last();
        for (int d : ENVFIX_TRY(dependencies(last.second)))
          if (incompatible_deps.contains(reqs[d].key)) incompatible_state = true;
      }
      std::vector<std::pair<std::string, std::vector<int>>> from_broken;
      for (const auto& [k, v] : broken.criteria) from_broken.emplace_back(k, v.incompatibilities);
      from_broken.emplace_back(last.first, std::vector<int>{last.second});
      if (states.empty()) return false;
      states.push_back(states.back());
      bool success = true;
      for (auto& [k, inc] : from_broken) {
        if (inc.empty()) continue;
        const Criterion* crit = state().criteria.get(k);
        if (!crit) continue;
        std::vector<int> all_inc = crit->incompatibilities;
        all_inc.insert(all_inc.end(), inc.begin(), inc.end());
        auto matches = ENVFIX_TRY(find_matches(k, reqs_of(state().criteria, k), all_inc, state().criteria));
        if (matches.empty()) {
          success = false;
          break;
        }
        Criterion updated{std::move(matches), crit->information, std::move(all_inc)};
        state().criteria.set(k, std::move(updated));
      }
      if (success) return true;
    }
    return false;
  }

  // Tell the provider what comes next so it can fetch concurrently: the pages of projects not yet
  // listed, then the metadata of the most likely candidate of each criterion (its first match).
  std::set<std::string> metadata_hinted;
  void prefetch(const std::vector<int>& req_ids) {
    std::vector<std::string> names;
    for (int r : req_ids)
      if (!reqs[r].python && !projects.contains(reqs[r].name) &&
          std::find(names.begin(), names.end(), reqs[r].name) == names.end())
        names.push_back(reqs[r].name);
    if (!names.empty()) provider.prefetch_candidates(names);
  }
  void prefetch_best(const OrderedMap<Criterion>& criteria) {
    std::vector<index::Candidate> files;
    for (const auto& [key, c] : criteria) {
      if (c.candidates.empty()) continue;
      const Node& n = nodes[c.candidates.front()];
      if (n.file < 0) continue;
      auto pit = projects.find(n.name);
      if (pit == projects.end() || pit->second.metadata.contains(n.file)) continue;
      const auto& f = pit->second.files.usable[static_cast<std::size_t>(n.file)].file;
      if (metadata_hinted.insert(f.url).second) files.push_back(f);
    }
    if (!files.empty()) provider.prefetch_metadata(files);
  }

  // Every requirement seen per key, for tracing a conflict back to the request.
  std::map<std::string, std::vector<Info>> requirers;
  util::Message unusable_phrase(const std::string& name, const specs::SpecifierSet& spec);
  // The conflicting requirements grouped by the project they constrain, in first-seen order.
  std::pair<std::map<std::string, std::vector<const Info*>>, std::vector<std::string>>
  group_by_key(const std::vector<Info>& causes) const {
    std::map<std::string, std::vector<const Info*>> by_key;
    std::vector<std::string> order;
    for (const auto& c : causes) {
      const auto& k = reqs[c.req].key;
      if (!by_key.contains(k)) order.push_back(k);
      by_key[k].push_back(&c);
    }
    return {std::move(by_key), std::move(order)};
  }
  util::Message derivation(const std::vector<Info>& causes);
  Error explain(const std::vector<Info>& causes);
  Expected<Resolution> build_result(std::size_t rounds);
  Expected<Resolution> resolve(const std::vector<specs::Requirement>& requirements);
};

namespace {

// "a", "a and b", "a, b and c": each part keeps its own id.
util::Message join_and(const std::vector<util::Message>& items) {
  if (items.size() < 2) return items.empty() ? util::Message{} : items.front();
  auto out = util::msg("{} and {}", items[items.size() - 2], items.back());
  for (std::size_t i = items.size() - 2; i-- > 0;) out = util::msg("{}, {}", items[i], out);
  return out;
}

} // namespace

// Why no file of `name` satisfies `spec` on this target, from the files the classification rejected
// ("has no wheel for cp313"); empty when no rejected file matches the spec either.
util::Message Resolver::Impl::unusable_phrase(const std::string& name, const specs::SpecifierSet& spec) {
  auto pit = projects.find(name);
  if (pit == projects.end()) return {};
  std::set<std::string> versions;
  std::map<std::string, util::Message> phrases; // by their English: each once, in a stable order
  auto add = [&phrases](util::Message m) { phrases.emplace(m.text, std::move(m)); };
  for (const auto& r : pit->second.files.rejected) {
    auto v = specs::Version::parse(r.version);
    if (!v || !spec.contains(*v, true)) continue;
    versions.insert(v->to_string());
    const auto& tags = options.target.tags;
    switch (r.reason) {
    case RejectReason::python_tag:
      add(tags.empty() ? util::msg("has no wheel for this interpreter")
                       : util::msg("has no wheel for {}", tags.front().interpreter));
      break;
    case RejectReason::platform:
      add(tags.empty() ? util::msg("has no wheel for the platform of the target")
                       : util::msg("has no wheel for the platform {}", tags.front().platform));
      break;
    case RejectReason::requires_python:
      add(r.requires_python.empty() ? r.why()
                                    : util::msg("requires Python {} (the target is Python {})", r.requires_python,
                                                options.target.python_full_version.to_string()));
      break;
    case RejectReason::hash_missing: add(util::msg("has no sha256 on the index (--allow-unhashed accepts it)")); break;
    case RejectReason::yanked: add(util::msg("is yanked")); break;
    default: add(util::msg("is rejected ({}: {})", to_string(r.reason), r.why()));
    }
  }
  for (const auto& r : rejected) // yanked files are rejected while matching, not while classifying
    if (r.name == name && r.reason == RejectReason::yanked)
      if (auto v = specs::Version::parse(r.version); v && spec.contains(*v, true)) {
        versions.insert(v->to_string());
        add(util::msg("is yanked"));
      }
  if (phrases.empty()) return {};
  std::vector<util::Message> list;
  for (auto& [text, m] : phrases) list.push_back(std::move(m));
  std::string subject = versions.size() == 1 ? name + "==" + *versions.begin() : name + spec.to_string();
  return util::msg("{} {}", subject, join_and(list));
}

// A derivation chain in the style of uv's PubGrub reports: why the conflicting requirements cannot
// be met, which packages that rules out, and how those trace back to the request. Each sentence and
// clause carries its id (util/message.hpp), so a refusal reads whole in the user's language.
util::Message Resolver::Impl::derivation(const std::vector<Info>& causes) {
  auto [by_key, order] = group_by_key(causes);
  auto who = [&](const Info& i) {
    return i.parent >= 0 ? util::msg("{} depends on {}", node_text(i.parent), reqs[i.req].text)
                         : util::msg("you require {}", reqs[i.req].text);
  };
  std::vector<util::Message> because; // the facts of the first sentence
  std::vector<int> ruled_out;         // parents that cannot be used
  bool from_request = false;
  for (const auto& k : order) {
    std::vector<util::Message> whos;
    for (const Info* i : by_key[k]) {
      whos.push_back(who(*i));
      if (i->parent >= 0) {
        if (std::find(ruled_out.begin(), ruled_out.end(), i->parent) == ruled_out.end()) ruled_out.push_back(i->parent);
      } else {
        from_request = true;
      }
    }
    const Req& any = reqs[by_key[k].front()->req];
    if (any.python) {
      because.push_back(
          util::msg("{} and the target is Python {}", join_and(whos), options.target.python_full_version.to_string()));
      continue;
    }
    auto pit = projects.find(any.name);
    bool missing = pit == projects.end() || (pit->second.files.usable.empty() && pit->second.files.rejected.empty());
    if (missing) {
      because.push_back(util::msg("{} and {} is not on {}", join_and(whos), any.name, provider.describe()));
      continue;
    }
    if (by_key[k].size() == 1) {
      auto phrase = unusable_phrase(any.name, any.spec);
      because.push_back(util::msg(
          "{} and {}", whos.front(),
          phrase.empty() ? util::msg("no version of {} matches {}", any.name, any.spec.empty() ? "(any)" : any.spec.to_string())
                         : phrase));
      continue;
    }
    // Several requirements that no single usable version meets (say why when files exist but are unusable).
    specs::SpecifierSet all;
    for (const Info* i : by_key[k]) all = all.intersect(reqs[i->req].spec);
    auto phrase = unusable_phrase(any.name, all);
    because.push_back(phrase.empty() ? join_and(whos) : util::msg("{}, and {}", join_and(whos), phrase));
  }
  if (ruled_out.empty()) return util::msg("Because {}, no solution exists.", join_and(because));
  std::vector<std::string> names;
  for (int n : ruled_out) names.push_back(node_text(n));
  auto text = names.size() > 1 && !from_request
                  ? util::msg("Because {}, {} cannot be used together.", join_and(because), join_and(util::plains(names)))
                  : util::msg("Because {}, {} cannot be used.", join_and(because), join_and(util::plains(names)));
  // Trace each ruled-out package back to the request through whoever required it.
  std::set<std::string> done;
  std::vector<int> frontier = ruled_out;
  std::vector<std::string> roots;
  for (int depth = 0; depth < 8 && !frontier.empty(); ++depth) {
    std::vector<util::Message> parents_text;
    std::vector<std::string> who_next;
    std::vector<int> next;
    for (int n : frontier) {
      const std::string& key = nodes[n].key;
      if (!done.insert(key).second) continue;
      auto it = requirers.find(key);
      if (it == requirers.end() || it->second.empty()) continue;
      const Info* pick = &it->second.front();
      for (const auto& i : it->second)
        if (i.parent < 0) {
          pick = &i;
          break;
        }
      if (pick->parent < 0) {
        if (std::find(roots.begin(), roots.end(), reqs[pick->req].text) == roots.end()) roots.push_back(reqs[pick->req].text);
      } else {
        parents_text.push_back(util::msg("{} depends on {}", node_text(pick->parent), reqs[pick->req].text));
        if (std::find(next.begin(), next.end(), pick->parent) == next.end()) {
          next.push_back(pick->parent);
          who_next.push_back(node_text(pick->parent));
        }
      }
    }
    if (!parents_text.empty())
      text = util::msg("{} {}", text,
                       util::msg("And because {}, {} cannot be used.", join_and(parents_text), join_and(util::plains(who_next))));
    frontier = next;
  }
  if (roots.empty()) return util::msg("{} {}", text, util::msg("So no solution exists."));
  return util::msg("{} {}", text, util::msg("And because you require {}, no solution exists.", join_and(util::plains(roots))));
}

Error Resolver::Impl::explain(const std::vector<Info>& causes) {
  auto [by_key, order] = group_by_key(causes);
  Error e{ErrorCode::unsatisfiable, "", {}, ""};
  bool all_missing = true;
  std::vector<std::string> missing;
  for (const auto& k : order) {
    const Req& any = reqs[by_key[k].front()->req];
    std::vector<util::Message> who;
    for (const Info* i : by_key[k])
      who.push_back(i->parent >= 0 ? util::msg("{} requires {}", node_text(i->parent), reqs[i->req].text)
                                   : util::msg("the request requires {}", reqs[i->req].text));
    if (any.python) {
      all_missing = false;
      for (const auto& w : who)
        e.add_cause(util::msg("{}, but the target is Python {}", w, options.target.python_full_version.to_string()));
      continue;
    }
    auto pit = projects.find(any.name);
    std::size_t usable = pit == projects.end() ? 0 : pit->second.files.usable.size();
    std::size_t rejected_n = pit == projects.end() ? 0 : pit->second.files.rejected.size();
    if (usable == 0 && rejected_n == 0) {
      missing.push_back(any.name);
      const auto detail = provider.missing_detail(any.name);
      for (const auto& w : who)
        e.add_cause(detail.empty() ? util::msg("{}, but '{}' is not on {}", w, any.name, provider.describe())
                                   : util::msg("{}, but {}", w, detail));
      continue;
    }
    all_missing = false;
    for (const auto& w : who) e.add_cause(w);
    if (usable == 0) {
      std::map<std::string, int> why;
      for (const auto& r : pit->second.files.rejected) ++why[std::string(to_string(r.reason))];
      std::string s;
      for (const auto& [reason, n] : why) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, reason);
      e.add_cause(util::msg("no file of '{}' is usable on this target ({} rejected: {})", any.name, rejected_n, s));
    } else {
      std::vector<std::string> vs;
      for (const auto& f : pit->second.files.usable) {
        auto v = f.version.to_string();
        if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
      }
      std::string list;
      for (std::size_t i = 0; i < vs.size() && i < 12; ++i) list += (i ? ", " : "") + vs[i];
      if (vs.size() > 12) list += fmt::format(", … ({} in all)", vs.size());
      e.add_cause(util::msg("versions of '{}' usable on this target: {}", any.name, list));
    }
  }
  if (all_missing && !missing.empty()) {
    e.code = ErrorCode::not_found;
    e.say(util::msg("'{}' was not found on {}", missing.front(), provider.describe()));
    e.advise(util::msg(
        "check the index URL (a wrong base URL answers 404 for every project); the package may also only exist on another "
        "index: envfix resolves a set from one index (add it with --find-links, or choose an index that has it with --index-url)"));
  } else {
    e.say(derivation(causes));
    e.advise(util::msg("relax one of the requirements above; `--explain` lists every rejected file"));
  }
  return e;
}

Expected<Resolution> Resolver::Impl::build_result(std::size_t rounds) {
  const State& s = state();
  // resolvelib _build_result: keep only pins with a route to the request.
  std::set<std::string> connected;
  std::function<bool(const std::string&, std::set<std::string>&)> route = [&](const std::string& key,
                                                                              std::set<std::string>& visiting) {
    if (connected.contains(key)) return true;
    const Criterion* c = s.criteria.get(key);
    if (!c || visiting.contains(key)) return false;
    visiting.insert(key);
    for (const auto& i : c->information) {
      if (i.parent < 0) {
        connected.insert(key);
        return true;
      }
      const std::string& pkey = nodes[i.parent].key;
      const int* pin = s.mapping.get(pkey);
      if (!pin || *pin != i.parent) continue;
      if (route(pkey, visiting)) {
        connected.insert(key);
        return true;
      }
    }
    return false;
  };
  Resolution res;
  res.rounds = rounds;
  std::map<std::string, Pin> pins;
  for (const auto& [key, node_id] : s.mapping) {
    std::set<std::string> visiting;
    if (!route(key, visiting)) continue;
    const Node& n = nodes[node_id];
    if (n.file < 0) continue;
    const auto& f = projects.at(n.name).files.usable[static_cast<std::size_t>(n.file)];
    auto& p = pins[n.name];
    p.name = n.name;
    p.version = f.version;
    p.file = f.file;
    const auto& read = projects.at(n.name).metadata;
    if (auto md = read.find(n.file); md != read.end()) p.metadata = md->second;
    for (const auto& e : n.extras)
      if (std::find(p.extras.begin(), p.extras.end(), e) == p.extras.end()) p.extras.push_back(e);
    for (const auto& i : s.criteria.get(key)->information) {
      std::string by = i.parent < 0 ? std::string("<request>") : node_text(i.parent);
      if (i.parent >= 0 && nodes[i.parent].name == n.name) continue; // extras -> base link
      if (std::find(p.required_by.begin(), p.required_by.end(), by) == p.required_by.end()) p.required_by.push_back(by);
    }
  }
  for (auto& [name, p] : pins) {
    std::sort(p.extras.begin(), p.extras.end());
    ENVFIX_TRY_VOID(provider.complete_hash(p.file));
    res.pins.push_back(std::move(p));
  }
  res.rejected = rejected;
  return res;
}

Expected<Resolution> Resolver::Impl::resolve(const std::vector<specs::Requirement>& requirements) {
  states.clear();
  states.emplace_back();
  std::vector<int> roots;
  for (const auto& r : requirements) {
    if (!r.applies(options.target.markers, {})) continue; // marker false for this target
    int id = ENVFIX_TRY(req_from_spec(r));
    user_requested.emplace(reqs[id].name, user_requested.size());
    roots.push_back(id);
  }
  prefetch(roots);
  for (int id : roots) {
    if (!ENVFIX_TRY(add_to_criteria(state().criteria, id, -1)))
      return std::unexpected(explain(last_conflict->criterion.information));
  }
  prefetch_best(state().criteria);
  states.push_back(states.back());
  for (std::size_t round = 0; round < options.max_rounds; ++round) {
    std::vector<std::string> unsatisfied;
    std::set<std::string> satisfied_names;
    for (const auto& [key, c] : state().criteria) {
      if (pin_satisfying(key, c))
        satisfied_names.insert(key);
      else
        unsatisfied.push_back(key);
    }
    if (unsatisfied.empty()) return build_result(round);
    std::string best;
    std::optional<Preference> best_pref;
    for (const auto& k : unsatisfied) {
      auto p = preference(k);
      if (!best_pref || p < *best_pref) {
        best_pref = p;
        best = k;
      }
    }
    auto failures = ENVFIX_TRY(attempt_to_pin(best));
    if (!failures.empty()) {
      std::vector<Info> causes;
      for (const auto& c : failures) causes.insert(causes.end(), c.information.begin(), c.information.end());
      bool ok = ENVFIX_TRY(backjump(causes));
      if (!ok || states.empty()) return std::unexpected(explain(causes));
      state().backtrack_causes = causes;
    } else {
      std::set<std::string> newly;
      for (const auto& [key, c] : state().criteria)
        if (satisfied_names.contains(key) && !pin_satisfying(key, c)) newly.insert(key);
      if (!newly.empty()) {
        for (auto& [key, c] : state().criteria) {
          std::erase_if(c.information, [&](const Info& i) { return i.parent >= 0 && newly.contains(nodes[i.parent].key); });
        }
      }
      states.push_back(states.back());
    }
  }
  return fail(ErrorCode::unsatisfiable, "resolution did not finish within {} rounds", options.max_rounds);
}

Resolver::Resolver(CandidateProvider& provider, ResolveOptions options) : m_impl(new Impl(provider, std::move(options))) {}
Resolver::~Resolver() { delete m_impl; }

Expected<Resolution> Resolver::resolve(const std::vector<specs::Requirement>& requirements) {
  return m_impl->resolve(requirements);
}

const std::vector<Rejection>& Resolver::rejected() const { return m_impl->rejected; }

} // namespace envfix::resolver
