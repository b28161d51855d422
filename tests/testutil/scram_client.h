// A SCRAM-SHA-256 client for tests, computed by libgsasl from the password:
// what a MongoDB driver sends, from the same well-kept library the server
// uses, so a test can also replay, truncate or corrupt real messages.
#ifndef GATEDB_TESTS_TESTUTIL_SCRAM_CLIENT_H_
#define GATEDB_TESTS_TESTUTIL_SCRAM_CLIENT_H_

#include <gsasl.h>

#include <string>

namespace gatedb {
namespace test {

class ScramClient {
 public:
  ScramClient(std::string user, std::string password) : user_(std::move(user)), password_(std::move(password)) {
    gsasl_init(&ctx_);
    gsasl_callback_set(ctx_, [](Gsasl*, Gsasl_session* s, Gsasl_property p) {
      auto* self = static_cast<ScramClient*>(gsasl_session_hook_get(s));
      if (p == GSASL_AUTHID) return gsasl_property_set(s, p, self->user_.c_str());
      if (p == GSASL_PASSWORD) return gsasl_property_set(s, p, self->password_.c_str());
      return static_cast<int>(GSASL_NO_CALLBACK);
    });
    gsasl_client_start(ctx_, "SCRAM-SHA-256", &session_);
    gsasl_session_hook_set(session_, this);
  }
  ~ScramClient() {
    gsasl_finish(session_);
    gsasl_done(ctx_);
  }
  ScramClient(const ScramClient&) = delete;
  ScramClient& operator=(const ScramClient&) = delete;

  // The next client message given the server's last ("" for the first);
  // *rc is libgsasl's code (GSASL_OK once the server's signature checked out).
  std::string Step(const std::string& server_message, int* rc) {
    char* out = nullptr;
    size_t n = 0;
    *rc = gsasl_step(session_, server_message.data(), server_message.size(), &out, &n);
    std::string s = out != nullptr ? std::string(out, n) : std::string();
    gsasl_free(out);
    return s;
  }

 private:
  std::string user_, password_;
  Gsasl* ctx_ = nullptr;
  Gsasl_session* session_ = nullptr;
};

}  // namespace test
}  // namespace gatedb

#endif  // GATEDB_TESTS_TESTUTIL_SCRAM_CLIENT_H_
