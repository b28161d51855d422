#include "tests/sim/sim_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gatedb {
namespace sim {

const char* const kSources[4] = {"human", "planner", "agent", "bot"};

int SourceRank(const std::string& source) {
  for (int i = 0; i < 3; ++i) {
    if (source == kSources[i]) return i;
  }
  return 3;
}

const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kReject: return "reject";
    case Policy::kFieldMergeInc: return "fieldMerge+mergeIncrements";
    case Policy::kSourcePriority: return "sourcePriority";
    case Policy::kAppendOnly: return "appendOnly";
    case Policy::kFieldMerge: return "fieldMerge";
    case Policy::kRejectMaxAge: return "reject+maxBasisAgeMs";
  }
  return "?";
}

Policy PolicyFor(int index) {
  static const Policy kCycle[] = {Policy::kReject,     Policy::kFieldMergeInc, Policy::kSourcePriority,
                                  Policy::kAppendOnly, Policy::kFieldMerge,    Policy::kRejectMaxAge};
  return kCycle[index % 6];
}

Layout Layout::Make(const SimConfig& c) {
  Layout l;
  l.docs = c.docs;
  l.accounts = c.accounts;
  l.agents = c.agents;
  l.max_basis_age_ms = c.max_basis_age_ms;
  for (int i = 0; i < c.collections; ++i) {
    Policy p = PolicyFor(i);
    static const char* const kShort[] = {"reject", "mergeinc", "priority", "audit", "merge", "maxage"};
    CollSpec spec{"c" + std::to_string(i) + "_" + kShort[i % 6], p};
    if (spec.counter()) l.counter_colls.push_back(i);
    if (p == Policy::kAppendOnly && l.audit_coll < 0) l.audit_coll = i;
    l.colls.push_back(std::move(spec));
  }
  return l;
}

int Layout::CollIndex(const std::string& ns) const {
  if (ns.size() <= db.size() + 1 || ns.compare(0, db.size() + 1, db + ".") != 0) return -1;
  std::string name = ns.substr(db.size() + 1);
  for (size_t i = 0; i < colls.size(); ++i) {
    if (colls[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

Status CommandStatus(const Document& reply) {
  auto ok = IntField(reply.bson(), "ok");
  if (ok && *ok == 1) return Status::OK();
  auto code = IntField(reply.bson(), "code");
  return Status(code ? static_cast<ErrorCode>(*code) : ErrorCode::kInternalError, reply.ToJson());
}

}  // namespace

Status SetupDatabase(Database* db, const Layout& layout) {
  for (const CollSpec& spec : layout.colls) {
    std::string cmd = R"({"create": ")" + spec.name + R"(", "$db": ")" + layout.db + R"(", "conflictPolicy": )";
    switch (spec.policy) {
      case Policy::kReject: cmd += R"({"mode": "reject"})"; break;
      case Policy::kFieldMergeInc: cmd += R"({"mode": "fieldMerge", "mergeIncrements": true})"; break;
      case Policy::kSourcePriority:
        cmd += R"({"mode": "sourcePriority", "sourcePriority": ["human", "planner", "agent"]})";
        break;
      case Policy::kAppendOnly: cmd += R"({"mode": "appendOnly"})"; break;
      case Policy::kFieldMerge: cmd += R"({"mode": "fieldMerge"})"; break;
      case Policy::kRejectMaxAge:
        cmd += R"({"mode": "reject"}, "maxBasisAgeMs": )" + std::to_string(layout.max_basis_age_ms);
        break;
    }
    cmd += "}";
    ASSIGN_OR_RETURN(Document c, Document::FromJson(cmd));
    RETURN_IF_ERROR(CommandStatus(db->RunCommand(c.view())));
  }
  WriteOptions w;
  w.sync = true;
  w.context.agent_id = "setup";
  w.context.task_id = "setup";
  for (const CollSpec& spec : layout.colls) {
    if (!spec.counter()) continue;
    std::vector<Document> docs;
    for (int d = 0; d < layout.docs; ++d) {
      bson_t* b = bson_new();
      BSON_APPEND_UTF8(b, "_id", Layout::DocId(d).c_str());
      BSON_APPEND_INT64(b, "shared", 0);
      docs.push_back(Document::Adopt(b));
    }
    ASSIGN_OR_RETURN(InsertManyResult r, db->GetCollection(layout.db, spec.name).InsertMany(docs, w));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
  }
  std::vector<Document> accts;
  for (int a = 0; a < layout.accounts; ++a) {
    bson_t* b = bson_new();
    BSON_APPEND_UTF8(b, "_id", Layout::AccountId(a).c_str());
    BSON_APPEND_INT64(b, "bal", layout.initial_balance);
    accts.push_back(Document::Adopt(b));
  }
  if (!accts.empty()) {
    ASSIGN_OR_RETURN(InsertManyResult r, db->GetCollection(layout.db, layout.accounts_name).InsertMany(accts, w));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
  }
  return Status::OK();
}

// ---- flags ----

void FlagSet::Int(const char* name, int64_t* v, const char* help) {
  flags_.push_back({name, help, std::to_string(*v), false, [v](const std::string& s) {
                      char* end = nullptr;
                      *v = std::strtoll(s.c_str(), &end, 10);
                      return !s.empty() && *end == '\0';
                    }});
}

void FlagSet::Int(const char* name, int* v, const char* help) {
  flags_.push_back({name, help, std::to_string(*v), false, [v](const std::string& s) {
                      char* end = nullptr;
                      *v = static_cast<int>(std::strtol(s.c_str(), &end, 10));
                      return !s.empty() && *end == '\0';
                    }});
}

void FlagSet::Uint(const char* name, uint64_t* v, const char* help) {
  flags_.push_back({name, help, std::to_string(*v), false, [v](const std::string& s) {
                      char* end = nullptr;
                      *v = std::strtoull(s.c_str(), &end, 0);
                      return !s.empty() && *end == '\0';
                    }});
}

void FlagSet::Double(const char* name, double* v, const char* help) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", *v);
  flags_.push_back({name, help, buf, false, [v](const std::string& s) {
                      char* end = nullptr;
                      *v = std::strtod(s.c_str(), &end);
                      return !s.empty() && *end == '\0';
                    }});
}

void FlagSet::String(const char* name, std::string* v, const char* help) {
  flags_.push_back({name, help, *v, false, [v](const std::string& s) {
                      *v = s;
                      return true;
                    }});
}

void FlagSet::Bool(const char* name, bool* v, const char* help) {
  flags_.push_back({name, help, *v ? "true" : "false", true, [v](const std::string& s) {
                      if (s == "" || s == "1" || s == "true") {
                        *v = true;
                      } else if (s == "0" || s == "false") {
                        *v = false;
                      } else {
                        return false;
                      }
                      return true;
                    }});
}

bool FlagSet::Parse(int argc, char** argv, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintHelp();
      error->clear();
      return false;
    }
    if (arg.compare(0, 2, "--") != 0) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    Flag* flag = nullptr;
    for (Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) {
      *error = "unknown flag --" + name + " (see --help)";
      return false;
    }
    if (!has_value && !flag->is_bool) {
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!flag->set(value)) {
      *error = "bad value '" + value + "' for --" + name;
      return false;
    }
  }
  return true;
}

void FlagSet::PrintHelp() const {
  std::printf("%s\n\nFlags:\n", usage_.c_str());
  for (const Flag& f : flags_) {
    std::printf("  --%-20s %s (default: %s)\n", f.name.c_str(), f.help.c_str(),
                f.default_value.empty() ? "\"\"" : f.default_value.c_str());
  }
}

void AddWorkloadFlags(FlagSet* flags, SimConfig* c, bool with_sync) {
  flags->Uint("seed", &c->seed, "seed of every random choice; per-agent streams derive from it (0: from the clock, printed)");
  flags->Int("agents", &c->agents, "agent threads (N)");
  flags->Int("docs", &c->docs, "documents per document collection (M)");
  flags->Int("collections", &c->collections,
             "collections (K); policies cycle reject, fieldMerge+mergeIncrements, sourcePriority, appendOnly, "
             "fieldMerge, reject+maxBasisAgeMs");
  flags->Int("accounts", &c->accounts, "accounts moved between by transfer transactions");
  flags->String("think", &c->think, "think time between read and write: 0 | exp:MEAN_MS | exp:MEAN_MS,tail:PROB:SCALE_MS");
  flags->Double("lost-reply-rate", &c->lost_reply_rate, "share of keyed writes whose reply the agent 'loses' and retries");
  flags->Double("keyed-rate", &c->keyed_rate, "share of writes carrying an idempotency key (taskId, writeSeq)");
  flags->Double("txn-rate", &c->txn_rate, "share of operations that are multi-document transactions");
  flags->Double("lease-rate", &c->lease_rate, "share of operations that are lease sessions");
  flags->Double("helper-rate", &c->helper_rate, "share of gated updates made through WriteWithVersionGate");
  flags->Int("lease-ttl-ms", &c->lease_ttl_ms, "lease time to live");
  flags->Int("max-basis-age-ms", &c->max_basis_age_ms, "maxBasisAgeMs of the reject+maxBasisAgeMs collections");
  flags->Int("hot-docs", &c->hot_docs, "half of the updates go to this many documents");
  if (with_sync) flags->Bool("sync", &c->sync, "durable writes (fsync before acknowledging)");
}

std::vector<std::string> WorkloadArgs(const SimConfig& c, bool with_sync) {
  auto d = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  std::vector<std::string> a = {"--seed=" + std::to_string(c.seed),
                                "--agents=" + std::to_string(c.agents),
                                "--docs=" + std::to_string(c.docs),
                                "--collections=" + std::to_string(c.collections),
                                "--accounts=" + std::to_string(c.accounts),
                                "--think=" + c.think,
                                "--lost-reply-rate=" + d(c.lost_reply_rate),
                                "--keyed-rate=" + d(c.keyed_rate),
                                "--txn-rate=" + d(c.txn_rate),
                                "--lease-rate=" + d(c.lease_rate),
                                "--helper-rate=" + d(c.helper_rate),
                                "--lease-ttl-ms=" + std::to_string(c.lease_ttl_ms),
                                "--max-basis-age-ms=" + std::to_string(c.max_basis_age_ms),
                                "--hot-docs=" + std::to_string(c.hot_docs)};
  if (with_sync && c.sync) a.push_back("--sync");
  return a;
}

}  // namespace sim
}  // namespace gatedb
