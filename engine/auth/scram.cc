#include "engine/auth/scram.h"

#include <gsasl.h>

#include <cstdlib>
#include <mutex>

namespace gatedb {
namespace auth {

namespace {

constexpr size_t kSaltBytes = 28;  // MongoDB's SCRAM-SHA-256 salt length

Status Failed() { return Status(ErrorCode::kAuthenticationFailed, "Authentication failed."); }

// libgsasl's context: one per process, made on first use.
Gsasl* Context() {
  static Gsasl* ctx = [] {
    Gsasl* c = nullptr;
    if (gsasl_init(&c) != GSASL_OK) return static_cast<Gsasl*>(nullptr);
    gsasl_callback_set(c, [](Gsasl* g, Gsasl_session* s, Gsasl_property p) {
      return ScramServer::Callback(g, s, static_cast<int>(p));
    });
    return c;
  }();
  return ctx;
}

std::string Base64(const std::string& bytes) {
  char* out = nullptr;
  size_t n = 0;
  if (gsasl_base64_to(bytes.data(), bytes.size(), &out, &n) != GSASL_OK) return std::string();
  std::string s(out, n);
  gsasl_free(out);
  return s;
}

}  // namespace

StatusOr<ScramCredentials> MakeScramCredentials(const std::string& password, int iterations) {
  if (password.empty()) return Status(ErrorCode::kBadValue, "a password must not be empty");
  if (password.find('\0') != std::string::npos) {
    return Status(ErrorCode::kBadValue, "a password must not hold a NUL byte");
  }
  if (Context() == nullptr) return Status(ErrorCode::kInternalError, "libgsasl failed to initialize");
  ScramCredentials c;
  c.iterations = iterations;
  c.salt.resize(kSaltBytes);
  if (gsasl_nonce(&c.salt[0], c.salt.size()) != GSASL_OK) {
    return Status(ErrorCode::kInternalError, "no random bytes for a salt");
  }
  char salted[GSASL_HASH_MAX_SIZE], client_key[GSASL_HASH_MAX_SIZE], server_key[GSASL_HASH_MAX_SIZE],
      stored_key[GSASL_HASH_MAX_SIZE];
  int rc = gsasl_scram_secrets_from_password(GSASL_HASH_SHA256, password.c_str(), static_cast<unsigned>(iterations),
                                             c.salt.data(), c.salt.size(), salted, client_key, server_key, stored_key);
  if (rc == GSASL_SASLPREP_ERROR) {
    return Status(ErrorCode::kBadValue, "the password is not valid for SCRAM-SHA-256 (SASLprep refuses it)");
  }
  if (rc != GSASL_OK) return Status(ErrorCode::kInternalError, std::string("SCRAM secrets: ") + gsasl_strerror(rc));
  c.stored_key.assign(stored_key, GSASL_HASH_SHA256_SIZE);
  c.server_key.assign(server_key, GSASL_HASH_SHA256_SIZE);
  return c;
}

struct ScramServer::Session {
  Gsasl_session* s = nullptr;
  ~Session() {
    if (s != nullptr) gsasl_finish(s);
  }
};

ScramServer::ScramServer(Lookup lookup) : lookup_(std::move(lookup)) {}
ScramServer::~ScramServer() = default;

int ScramServer::Callback(void* /*ctx*/, void* sctx, int prop) {
  auto* s = static_cast<Gsasl_session*>(sctx);
  auto* self = static_cast<ScramServer*>(gsasl_session_hook_get(s));
  if (self == nullptr) return GSASL_NO_CALLBACK;
  if (!self->looked_up_) {
    const char* authid = gsasl_property_fast(s, GSASL_AUTHID);
    if (authid == nullptr) return GSASL_NO_CALLBACK;
    self->user_ = authid;
    self->creds_ = self->lookup_(self->user_);
    self->looked_up_ = true;
  }
  // An unknown user gets no properties: libgsasl then answers the first
  // message with a random salt (nothing tells the client the user is
  // unknown) and fails the proof.
  if (!self->creds_) return GSASL_NO_CALLBACK;
  const ScramCredentials& c = *self->creds_;
  std::string value;
  switch (prop) {
    case GSASL_SCRAM_ITER:
      value = std::to_string(c.iterations);
      break;
    case GSASL_SCRAM_SALT:
      value = Base64(c.salt);
      break;
    case GSASL_SCRAM_STOREDKEY:
      value = Base64(c.stored_key);
      break;
    case GSASL_SCRAM_SERVERKEY:
      value = Base64(c.server_key);
      break;
    default:
      return GSASL_NO_CALLBACK;  // never the password: it is not stored
  }
  if (value.empty()) return GSASL_NO_CALLBACK;
  return gsasl_property_set(s, static_cast<Gsasl_property>(prop), value.c_str());
}

StatusOr<std::string> ScramServer::Step(const std::string& client_message) {
  if (done_) return Failed();
  if (++steps_ > 2) {
    done_ = true;
    return Failed();
  }
  if (!session_) {
    Gsasl* ctx = Context();
    if (ctx == nullptr) return Status(ErrorCode::kInternalError, "libgsasl failed to initialize");
    session_ = std::make_unique<Session>();
    if (gsasl_server_start(ctx, kScramMechanism, &session_->s) != GSASL_OK) {
      session_.reset();
      done_ = true;
      return Status(ErrorCode::kInternalError, "libgsasl has no SCRAM-SHA-256");
    }
    gsasl_session_hook_set(session_->s, this);
  }
  if (client_message.empty() || client_message.find('\0') != std::string::npos) {
    done_ = true;
    return Failed();
  }
  char* out = nullptr;
  size_t n = 0;
  const int rc = gsasl_step(session_->s, client_message.data(), client_message.size(), &out, &n);
  std::string reply = out != nullptr ? std::string(out, n) : std::string();
  if (out != nullptr) gsasl_free(out);
  if (rc == GSASL_NEEDS_MORE && steps_ == 1) {
    if (!looked_up_) {  // the callback never ran: the first message named no user
      done_ = true;
      return Failed();
    }
    return reply;
  }
  done_ = true;
  if (rc != GSASL_OK || !creds_) return Failed();
  succeeded_ = true;
  return reply;
}

}  // namespace auth
}  // namespace gatedb
