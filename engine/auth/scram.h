// File: engine/auth/scram.h
//
// SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB uses it, through GNU SASL
// (libgsasl): the password's stored form at createUser, and the server's
// side of a saslStart / saslContinue conversation.  Nothing cryptographic is
// written here: the salting (PBKDF2), the HMACs, the nonces, SASLprep of
// names and passwords and the message parsing are libgsasl's.
#ifndef GATEDB_ENGINE_AUTH_SCRAM_H_
#define GATEDB_ENGINE_AUTH_SCRAM_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/auth/principal.h"
#include "gatedb/status.h"

namespace gatedb {
namespace auth {

// MongoDB's default scramSHA256IterationCount; drivers refuse fewer than 4096.
constexpr int kScramIterations = 15000;
constexpr char kScramMechanism[] = "SCRAM-SHA-256";

// The stored form of `password` (SASLprep'd, as MongoDB and its drivers
// prepare SCRAM-SHA-256 passwords) with a new random salt.
// Errors: BadValue (a password SASLprep refuses, or empty).
StatusOr<ScramCredentials> MakeScramCredentials(const std::string& password, int iterations = kScramIterations);

// One server-side conversation.  Step() takes each client message in turn
// and returns the server's answer; after the client's final message the
// conversation is done() and, when it succeeded, user() is who proved it.
// Every failure (unknown user, wrong password, a malformed, replayed or
// truncated message) is AuthenticationFailed 18 "Authentication failed.",
// as MongoDB answers, and ends the conversation.
class ScramServer {
 public:
  // Credentials of a user named in the client's first message (after
  // SASLprep), or nullopt when there is no such user.
  using Lookup = std::function<std::optional<ScramCredentials>(const std::string& user)>;

  explicit ScramServer(Lookup lookup);
  ~ScramServer();
  ScramServer(const ScramServer&) = delete;
  ScramServer& operator=(const ScramServer&) = delete;

  StatusOr<std::string> Step(const std::string& client_message);
  bool done() const { return done_; }
  bool succeeded() const { return succeeded_; }
  const std::string& user() const { return user_; }

  // libgsasl's property callback (internal): answers the salt, iteration
  // count and keys of the user the client named.
  static int Callback(void* ctx, void* sctx, int prop);

 private:
  struct Session;

  Lookup lookup_;
  std::unique_ptr<Session> session_;
  std::optional<ScramCredentials> creds_;
  bool looked_up_ = false;
  bool done_ = false;
  bool succeeded_ = false;
  int steps_ = 0;
  std::string user_;
};

}  // namespace auth
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AUTH_SCRAM_H_
