#include "installer/txn_meta.hpp"

#include <nlohmann/json.hpp>

namespace envfix::installer {

namespace {

using json = nlohmann::json;

// Field readers that say false for a missing member or a wrong type, so that parse_txn_meta never
// reaches nlohmann's throwing get<>() with the wrong type.
bool read(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

bool read_refs(const json& j, const char* key, std::vector<DistRef>& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return false;
  for (const auto& d : *it) {
    DistRef r;
    if (!d.is_object() || !read(d, "name", r.name) || !read(d, "version", r.version)) return false;
    out.push_back(std::move(r));
  }
  return true;
}

// One step: ["move", from, to] or ["mkdir"|"rmdir", dir, mode].
bool read_op(const json& o, TxnOp& op) {
  if (!o.is_array() || o.size() != 3 || !o[0].is_string() || !o[1].is_string()) return false;
  const auto& kind = o[0].get_ref<const std::string&>();
  op.path = o[1].get<std::string>();
  if (kind == "move" && o[2].is_string()) {
    op.kind = TxnOp::Kind::move;
    op.dest = o[2].get<std::string>();
    return true;
  }
  if ((kind == "mkdir" || kind == "rmdir") && o[2].is_number_unsigned() && o[2].get<std::uint64_t>() <= 07777) {
    op.kind = kind == "mkdir" ? TxnOp::Kind::mkdir : TxnOp::Kind::rmdir;
    op.mode = static_cast<unsigned>(o[2].get<std::uint64_t>());
    return true;
  }
  return false;
}

} // namespace

Expected<std::string> txn_meta_json(const TxnMeta& m) {
  json ops = json::array();
  for (const auto& o : m.ops) {
    switch (o.kind) {
    case TxnOp::Kind::move: ops.push_back({"move", o.path, o.dest}); break;
    case TxnOp::Kind::mkdir: ops.push_back({"mkdir", o.path, o.mode}); break;
    case TxnOp::Kind::rmdir: ops.push_back({"rmdir", o.path, o.mode}); break;
    }
  }
  auto refs = [](const std::vector<DistRef>& v) {
    json a = json::array();
    for (const auto& d : v) a.push_back({{"name", d.name}, {"version", d.version}});
    return a;
  };
  json aux = json::array();
  for (const auto& a : m.aux) aux.push_back(a.string());
  json j = {{"format", 1},
            {"id", m.id},
            {"kind", m.kind},
            {"rolls_back", m.rolls_back},
            {"started", m.started},
            {"split", m.split},
            {"installed", refs(m.installed)},
            {"removed", refs(m.removed)},
            {"ops", ops},
            {"aux", aux}};
  // dump() is the one call here that throws: on a string that is not UTF-8.
  try {
    return j.dump(1);
  } catch (const json::exception& e) {
    return fail(ErrorCode::invalid_input, "cannot record the transaction (a path is not UTF-8?): {}", e.what());
  }
}

Expected<TxnMeta> parse_txn_meta(std::string_view text, const std::filesystem::path& path, bool with_ops) {
  auto bad = [&](std::string_view what) {
    return make_error(ErrorCode::invalid_input, util::msg("{}: damaged transaction journal: {}", path.string(), what),
                      util::msg("the journal of an interrupted change cannot be read: restore the files from {} by "
                                "hand, or remove {} to give it up",
                                (path.parent_path() / "backup").string(), path.parent_path().string()));
  };
  const json j = with_ops ? json::parse(text, nullptr, false)
                          : json::parse(
                                text,
                                [](int depth, json::parse_event_t event, json& parsed) {
                                  return !(depth == 1 && event == json::parse_event_t::key && parsed == "ops");
                                },
                                false);
  if (!j.is_object()) return bad("not a JSON object");
  TxnMeta m;
  if (!read(j, "id", m.id) || !read(j, "kind", m.kind) || !read(j, "rolls_back", m.rolls_back))
    return bad("'id', 'kind' or 'rolls_back' is missing or not a string");
  const auto started = j.find("started");
  const auto split = j.find("split");
  if (started == j.end() || !started->is_number_integer() || split == j.end() || !split->is_number_unsigned())
    return bad("'started' or 'split' is missing or not a whole number");
  m.started = started->get<std::int64_t>();
  m.split = split->get<std::size_t>();
  if (!read_refs(j, "installed", m.installed) || !read_refs(j, "removed", m.removed))
    return bad("'installed' or 'removed' is not a list of {name, version}");
  if (auto aux = j.find("aux"); aux != j.end()) {
    if (!aux->is_array()) return bad("'aux' is not a list");
    for (const auto& a : *aux) {
      if (!a.is_string()) return bad("'aux' is not a list of paths");
      m.aux.emplace_back(a.get<std::string>());
    }
  }
  if (!with_ops) return m;
  const auto ops = j.find("ops");
  if (ops == j.end() || !ops->is_array()) return bad("'ops' is missing or not a list");
  m.ops.reserve(ops->size());
  for (const auto& o : *ops) {
    TxnOp op;
    if (!read_op(o, op))
      return bad(fmt::format("step {} is not [\"move\", from, to] or [\"mkdir\"|\"rmdir\", dir, mode]", m.ops.size()));
    m.ops.push_back(std::move(op));
  }
  if (m.split > m.ops.size()) return bad("'split' lies past the last step");
  return m;
}

} // namespace envfix::installer
