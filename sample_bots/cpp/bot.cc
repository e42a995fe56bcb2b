// A simple All Fours bot in C++, speaking protocol allfours.v1 over gRPC (docs/protocol.md).
//
// Stubs are generated from proto/allfours/v1/referee.proto and lobby.proto at build time
// (CMakeLists.txt) with Debian's protoc and grpc_cpp_plugin; it links Debian's libgrpc++. See
// README.md for the build.
//
// Usage: allfours-cpp-bot [--referee HOST:PORT] [--ticket=T] [--name NAME] [--version V] [--tls-ca PEM]
//                         [--think-ms N]
// (default: the environment variables ALLFOURS_REFEREE and ALLFOURS_TICKET, which the arena sets).
// --tls-ca (or ALLFOURS_TLS_CA): the referee serves TLS with this certificate (or one its CA signed).
// --think-ms N: wait N ms before each answer, as a slow strategy would (0, the default: none); past the
// match's decision_ms every answer is late, so you see strikes happen.
// Exit status: 0 once the match is over, 1 if the seat was refused or the referee unreachable,
// 2 on a usage error. Each strike of its seat (the referee's TIMEOUT event: an answer past its
// deadline, for which the referee played the first legal action) is one warning line on stderr, as
// in the Python SDK and the Node.js bot.
//
// Worker mode (docs/protocol.md, "Workers and the lobby"; proto/allfours/v1/lobby.proto): with no
// referee and ticket but ALLFOURS_LOBBY set (the arena sets it with ALLFOURS_BOT_TOKEN and
// ALLFOURS_BOT_NAME for its local workers), it registers at that lobby and plays each Assignment as
// above, then sends Ready. When the lobby stream ends or breaks (UNAVAILABLE: the arena restarting), or
// the first dial finds no lobby, it dials again with back-off (0.5 s doubling to 5 s, with jitter; one
// line each time) and registers again, for as long as it runs, or for --reconnect S seconds from the
// loss (then status 1 and one line: "cannot reach the lobby at …"). It leaves with status 0 once the process
// named by ALLFOURS_WORKER_PARENT (the arena) is gone, and with status 1 and one line when the lobby
// refuses it (a wrong or revoked token, a bad registration: dialling again cannot help; RESOURCE_EXHAUSTED
// ending "dial again later", a full pool, is dialled again). The lobby is dialled over TLS when ALLFOURS_TLS_CA (or
// --tls-ca) names its certificate; a referee an Assignment marks referee_tls trusts the file of
// ALLFOURS_REFEREE_TLS_CA, else that one.
//
// Play: stands when asked to stand or beg; as dealer gives one unless that point would win the
// game for the other side; calls an exposed card when it may; leads its highest legal card and
// otherwise plays its lowest. Protocol: echoes seq; answers a request once per stream; retries once
// with another legal action after ActionRejected; ignores message and event kinds it does not know;
// reconnects with the same ticket within the grace period; leaves on MatchEnd.
#include <grpcpp/grpcpp.h>

#include <signal.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "allfours/v1/lobby.grpc.pb.h"
#include "allfours/v1/referee.grpc.pb.h"

namespace pb = allfours::v1;
using Clock = std::chrono::steady_clock;

namespace {

const char* kProtocolVersion = "allfours.v1";
const std::string kRanks = "23456789TJQKA";

struct Options {
  std::string referee;
  std::string ticket;
  std::string name = "cpp-simple";
  std::string version = "1";
  int think_ms = 0;  // --think-ms: a wait before each answer
  // Worker mode: the lobby's host:port, the bot token and the arena's process id (0: none).
  std::string lobby;
  std::string token;
  long parent = 0;
  int reconnect_s = -1;  // --reconnect S: give up on a lobby down for S seconds (-1: dial on for ever)
  // TLS: the PEM of --tls-ca (or $ALLFOURS_TLS_CA; empty: plaintext), the one trusted for a referee an
  // Assignment marks referee_tls ($ALLFOURS_REFEREE_TLS_CA, else ca_pem), and whether opts.referee
  // serves TLS (a match of its own: ca_pem is set; a worker's match: the Assignment's referee_tls).
  std::string ca_pem;
  std::string referee_ca_pem;
  bool referee_tls = false;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void Log(const std::string& text) {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::cerr << stamp << " " << text << std::endl;
}

[[noreturn]] void Usage(const std::string& why) {
  if (!why.empty()) std::cerr << "allfours-cpp-bot: " << why << "\n";
  std::cerr << "usage: allfours-cpp-bot [--referee HOST:PORT] [--ticket T] [--name NAME] [--version V] [--tls-ca PEM]"
               " [--think-ms N] [--reconnect S]\n";
  std::exit(2);
}

// A bad setting that is not a usage error (a secret given twice, an unreadable file): one line, exit 2.
[[noreturn]] void Fail(const std::string& why) {
  std::cerr << "allfours-cpp-bot: " << why << "\n";
  std::exit(2);
}

// A secret from $name, or from the file $name_FILE names (a Docker secret; docs/deploy.md, "Secrets").
std::string EnvSecret(const std::string& name) {
  std::string value = Env(name.c_str()), file = Env((name + "_FILE").c_str());
  if (file.empty()) return value;
  if (!value.empty()) Fail("$" + name + " and $" + name + "_FILE are both set: give the secret once");
  std::ifstream in(file);
  if (!in) Fail("$" + name + "_FILE " + file + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  const char* blanks = " \t\r\n";
  secret.erase(secret.find_last_not_of(blanks) + 1);
  secret.erase(0, secret.find_first_not_of(blanks));
  if (secret.empty()) Fail("$" + name + "_FILE " + file + ": the file is empty");
  return secret;
}

// The text of the certificate file `path` ("" for ""); an unreadable or empty file fails with one line.
std::string ReadCa(const std::string& path, const std::string& what) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) Fail(what + " " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    Fail(what + " " + path + " is not a PEM certificate (no line with '-----BEGIN CERTIFICATE-----')");
  return text.str();
}

// The value of option `name`, a whole number of at least 0 (else a usage error).
int WholeNumber(const std::string& name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || n < 0 || n > INT_MAX)
    Usage(name + " needs a whole number >= 0, not '" + text + "'");
  return static_cast<int>(n);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  std::string tls_ca = Env("ALLFOURS_TLS_CA");
  if (const char* r = std::getenv("ALLFOURS_REFEREE")) o.referee = r;
  if (const char* t = std::getenv("ALLFOURS_TICKET")) o.ticket = t;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {  // --ticket=T (a ticket may start with -)
      inline_value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--referee") o.referee = value();
    else if (a == "--ticket") o.ticket = value();
    else if (a == "--name") o.name = value();
    else if (a == "--version") o.version = value();
    else if (a == "--tls-ca") tls_ca = value();
    else if (a == "--think-ms") o.think_ms = WholeNumber(a, value());
    else if (a == "--reconnect") o.reconnect_s = WholeNumber(a, value());
    else Usage("unknown argument " + a);
  }
  o.ca_pem = ReadCa(tls_ca, "--tls-ca (or $ALLFOURS_TLS_CA)");
  if (o.referee.empty() && o.ticket.empty() && !Env("ALLFOURS_LOBBY").empty()) {  // worker mode
    o.referee_ca_pem = ReadCa(Env("ALLFOURS_REFEREE_TLS_CA"), "$ALLFOURS_REFEREE_TLS_CA");
    if (o.referee_ca_pem.empty()) o.referee_ca_pem = o.ca_pem;
    o.lobby = Env("ALLFOURS_LOBBY");
    o.token = EnvSecret("ALLFOURS_BOT_TOKEN");
    if (!Env("ALLFOURS_BOT_NAME").empty()) o.name = Env("ALLFOURS_BOT_NAME");
    o.parent = std::strtol(Env("ALLFOURS_WORKER_PARENT").c_str(), nullptr, 10);
    return o;
  }
  if (o.referee.empty()) Usage("no referee address: pass --referee HOST:PORT or set ALLFOURS_REFEREE");
  if (o.ticket.empty()) Usage("no ticket: pass --ticket T or set ALLFOURS_TICKET");
  o.referee_ca_pem = o.ca_pem;
  o.referee_tls = !o.ca_pem.empty();
  return o;
}

int Rank(const std::string& card) { return card.empty() ? -1 : static_cast<int>(kRanks.find(card[0])); }

bool SameAction(const pb::Action& a, const pb::Action& b) { return a.kind() == b.kind() && a.card() == b.card(); }

// The chosen action: always one of the request's legal actions, echoed back.
pb::Action Choose(const pb::DecisionRequest& req) {
  const auto& legal = req.legal_actions();
  const pb::Observation& obs = req.observation();
  auto find = [&](pb::ActionKind kind) -> const pb::Action* {
    for (const auto& a : legal)
      if (a.kind() == kind) return &a;
    return nullptr;
  };
  switch (obs.phase()) {
    case pb::PHASE_BEG:
      if (auto* a = find(pb::ACTION_KIND_STAND)) return *a;
      break;
    case pb::PHASE_DEALER: {
      int players = obs.rules().players() > 0 ? obs.rules().players() : 4;
      int beggar_side = (obs.dealer() + 1) % players % 2;
      int target = obs.rules().has_target() ? obs.rules().target() : 14;
      bool gives_game = obs.scores_size() == 2 && obs.scores(beggar_side) + 1 >= target;
      if (auto* a = find(gives_game ? pb::ACTION_KIND_RUN_PACK : pb::ACTION_KIND_GIVE_ONE)) return *a;
      break;
    }
    case pb::PHASE_CALL:
      if (auto* a = find(pb::ACTION_KIND_CALL)) return *a;
      if (auto* a = find(pb::ACTION_KIND_PASS)) return *a;
      break;
    case pb::PHASE_PLAY: {
      const pb::Action* best = nullptr;
      bool leading = obs.trick_size() == 0;
      for (const auto& a : legal) {
        if (a.kind() != pb::ACTION_KIND_PLAY) continue;
        if (!best || (leading ? Rank(a.card()) > Rank(best->card()) : Rank(a.card()) < Rank(best->card()))) best = &a;
      }
      if (best) return *best;
      break;
    }
    default:
      break;
  }
  return legal.Get(0);
}

// An enum value's name without its prefix, lower case: TERMINATION_OTHER_SEAT_FORFEITED -> other_seat_forfeited.
std::string Plain(const std::string& name, const std::string& prefix) {
  std::string out = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The one line printed at MatchEnd, as the Python SDK's: "match completed: games won 1-0, winner side 0,
// this seat normal" ("no winner" on a tie or an abort; the seat's detail, if any, after its termination).
std::string Summary(const pb::MatchResult& res, int seat) {
  std::ostringstream line;
  line << "match " << Plain(pb::MatchStatus_Name(res.status()), "MATCH_STATUS_") << ": games won "
       << (res.games_won_size() == 2 ? res.games_won(0) : 0) << "-" << (res.games_won_size() == 2 ? res.games_won(1) : 0)
       << ", " << (res.winner() < 0 ? "no winner" : "winner side " + std::to_string(res.winner())) << ", this seat ";
  for (const auto& s : res.seats()) {
    if (s.seat() != seat) continue;
    line << Plain(pb::Termination_Name(s.termination()), "TERMINATION_");
    if (!s.detail().empty()) line << " (" << s.detail() << ")";
    return line.str();
  }
  return line.str() + "?";
}

// A gRPC status as the other languages print it: "UNAVAILABLE: failed to connect …".
std::string StatusText(const grpc::Status& status) {
  static const char* const kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                       "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                       "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  int code = static_cast<int>(status.error_code());
  std::string name = code >= 0 && code <= 16 ? kNames[code] : std::to_string(code);
  return name + ": " + status.error_message();
}

enum class Outcome { kMatchOver, kLost, kRefused };

class Seat {
 public:
  Seat(const Options& opts, std::shared_ptr<grpc::Channel> channel)
      : opts_(opts), stub_(pb::RefereeService::NewStub(channel)) {}

  bool joined() const { return joined_; }
  bool welcomed_on_last_stream() const { return welcomed_; }
  int grace_ms() const { return grace_ms_; }

  // One Play stream, until MatchEnd or until it breaks.
  Outcome Session(std::string* why) {
    grpc::ClientContext context;
    welcomed_ = false;
    auto stream = stub_->Play(&context);
    pb::PlayRequest hello;
    auto* h = hello.mutable_hello();
    h->set_ticket(opts_.ticket);
    h->set_protocol_version(kProtocolVersion);
    h->set_bot_name(opts_.name);
    h->set_bot_version(opts_.version);
    stream->Write(hello);
    std::set<uint64_t> answered;  // seqs answered on this stream
    std::set<uint64_t> retried;
    pb::DecisionRequest last;
    pb::PlayResponse resp;
    while (stream->Read(&resp)) {
      switch (resp.msg_case()) {
        case pb::PlayResponse::kWelcome: {
          const auto& w = resp.welcome();
          joined_ = welcomed_ = true;
          seat_ = w.seat();
          if (w.time_control().grace_ms() > 0) grace_ms_ = static_cast<int>(w.time_control().grace_ms());
          if (w.time_control().max_strikes() > 0) max_strikes_ = static_cast<int>(w.time_control().max_strikes());
          Log("joined match " + w.match_id() + " as seat " + std::to_string(w.seat()) +
              (w.resumed() ? " (resumed)" : ""));
          break;
        }
        case pb::PlayResponse::kDecisionRequest: {
          const auto& req = resp.decision_request();
          LogStrikes(req.events());
          if (answered.count(req.seq()) || req.legal_actions_size() == 0) break;  // already answered here
          last = req;
          pb::Action action = Choose(req);
          std::this_thread::sleep_for(std::chrono::milliseconds(opts_.think_ms));
          Send(stream.get(), req.seq(), action, &answered);
          break;
        }
        case pb::PlayResponse::kActionRejected: {
          const auto& r = resp.action_rejected();
          Log("seq " + std::to_string(r.seq()) + " rejected: " + r.message());
          if (r.seq() != last.seq() || retried.count(r.seq())) break;
          retried.insert(r.seq());
          for (const auto& a : last.legal_actions()) {
            if (!SameAction(a, r.action())) {
              Send(stream.get(), r.seq(), a, &answered);
              break;
            }
          }
          break;
        }
        case pb::PlayResponse::kMatchEnd: {
          std::cout << Summary(resp.match_end().result(), seat_) << std::endl;
          stream->WritesDone();
          stream->Finish();
          return Outcome::kMatchOver;
        }
        case pb::PlayResponse::kEvents:  // this bot keeps no memory of them, but says its strikes
          LogStrikes(resp.events().events());
          break;
        default:  // pongs, and message kinds of a newer protocol: nothing to do
          break;
      }
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    *why = status.ok() ? "the stream ended without MatchEnd" : StatusText(status);
    auto code = status.error_code();
    if (code == grpc::StatusCode::UNAUTHENTICATED || code == grpc::StatusCode::INVALID_ARGUMENT ||
        code == grpc::StatusCode::UNIMPLEMENTED || code == grpc::StatusCode::ABORTED ||
        (code == grpc::StatusCode::PERMISSION_DENIED && !joined_))
      return Outcome::kRefused;
    return Outcome::kLost;
  }

 private:
  using Stream = grpc::ClientReaderWriter<pb::PlayRequest, pb::PlayResponse>;

  // One warning line for each TIMEOUT event of this seat among `events`, as sdk/client.py and the Node.js
  // bot say it: a strike, the referee having played the first legal action for an answer past the deadline.
  void LogStrikes(const google::protobuf::RepeatedPtrField<pb::Event>& events) const {
    for (const auto& ev : events) {
      if (ev.kind() != pb::EVENT_KIND_TIMEOUT || ev.seat() != seat_) continue;
      Log("warning: the referee timed out this seat (strike " + std::to_string(ev.value()) + " of " +
          std::to_string(max_strikes_) + "): the bot answered past its deadline (time_left_ms), so the first " +
          "legal action was played for it");
    }
  }

  static void Send(Stream* stream, uint64_t seq, const pb::Action& action, std::set<uint64_t>* answered) {
    pb::PlayRequest msg;
    msg.mutable_decision()->set_seq(seq);
    *msg.mutable_decision()->mutable_action() = action;
    answered->insert(seq);
    stream->Write(msg);
  }

  const Options& opts_;
  std::unique_ptr<pb::RefereeService::Stub> stub_;
  bool joined_ = false;
  bool welcomed_ = false;
  int seat_ = -1;
  int grace_ms_ = 5000;
  int max_strikes_ = 3;  // timeouts that forfeit the seat, from Welcome
};

grpc::ChannelArguments KeepaliveArgs() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  return args;
}

// Plaintext, or TLS trusting the PEM `ca` when `tls` (an empty `ca`: the system's roots).
std::shared_ptr<grpc::ChannelCredentials> Credentials(bool tls, const std::string& ca) {
  if (!tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca;
  return grpc::SslCredentials(ssl);
}

// What to change about TLS when no connection came up (`why`: gRPC's message; referee/tls.py says the
// same for the Python SDK): a plaintext client meeting a TLS port sees only "Socket closed", a TLS one
// an OpenSSL code.
std::string TlsHint(bool tls, const std::string& why) {
  auto has = [&](const char* text) { return why.find(text) != std::string::npos; };
  if (!tls) return has("Socket closed") ? " (does the referee serve TLS? then pass --tls-ca with its certificate)" : "";
  if (has("wrong version number")) return " (the referee does not speak TLS: leave out --tls-ca)";
  if (has("is not in peer certificate")) return " (its certificate is not made out to this address)";
  if (has("certificate verify failed"))
    return " (its certificate is not one of --tls-ca's, or it has expired: ask its host)";
  return "";
}

// One match at opts.referee with opts.ticket, reconnecting within the grace period: the exit status.
int PlayMatch(const Options& opts) {
  auto creds = Credentials(opts.referee_tls, opts.referee_ca_pem);
  auto channel = grpc::CreateCustomChannel(opts.referee, creds, KeepaliveArgs());
  Seat seat(opts, channel);
  auto window_end = Clock::now() + std::chrono::seconds(15);  // before the first Welcome
  auto backoff = std::chrono::milliseconds(50);
  for (;;) {
    std::string why;
    Outcome out = seat.Session(&why);
    if (out == Outcome::kMatchOver) return 0;
    if (out == Outcome::kRefused) {
      Log("the referee at " + opts.referee + " refused the seat: " + why);
      return 1;
    }
    auto now = Clock::now();
    bool lost_live = seat.welcomed_on_last_stream();
    if (lost_live) {
      // Lost a live stream: the referee holds the seat for grace_ms from now.
      window_end = now + std::chrono::milliseconds(seat.grace_ms() * 9 / 10);
    }
    if (now >= window_end) {
      Log("cannot reach the referee at " + opts.referee + ": " + why + (seat.joined() ? "" : TlsHint(opts.referee_tls, why)));
      return 1;
    }
    // One line for a lost stream; the dials after it, and those before the first Welcome (the referee
    // may still be starting), are quiet: the error above ends them.
    if (lost_live) Log("connection lost (" + why + "); reconnecting with the same ticket");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

// Whether the lobby's refusal `status` ends the worker: dialling again cannot help (a wrong or revoked token,
// a bad registration, a message over its limit), except a RESOURCE_EXHAUSTED ending "dial again later"
// (a full pool, too many streams waiting: a worker may leave). As sdk/worker.py's is_final.
bool LobbyRefusalIsFinal(const grpc::Status& status) {
  const std::string again = "dial again later";
  const std::string& text = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return !(text.size() >= again.size() && text.compare(text.size() - again.size(), again.size(), again) == 0);
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return true;
    default:
      return false;
  }
}

// Whether a worker dialling a lost lobby for `dialling` stops: only with --reconnect S (reconnect_s >= 0)
// run out; -1 dials on for as long as the worker runs (an arena upgrade may take hours), as the Python
// SDK's sdk.worker.gives_up and the Node.js bot's givesUp.
bool GivesUp(std::chrono::steady_clock::duration dialling, int reconnect_s) {
  return reconnect_s >= 0 && dialling >= std::chrono::seconds(reconnect_s);
}

// Worker mode: the lobby's worker, one lobby stream at a time (a new one, on a new channel, after each loss).
class Worker {
 public:
  explicit Worker(const Options& opts) : opts_(opts) {}

  // Dial, register and play until the lobby refuses the worker (1), --reconnect runs out (1) or the arena is
  // gone (0).
  int Run() {
    std::thread watch([this] { WatchParent(); });
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    auto backoff = kFirstBackoff;
    auto lost_at = std::chrono::steady_clock::now();  // dialling since (the start, or the last loss)
    int code = 0;
    for (;;) {
      bool registered = false;
      grpc::Status status = Session(&registered);
      if (orphaned_) break;
      if (LobbyRefusalIsFinal(status)) {
        Log("lobby " + opts_.lobby + " refused the worker: " + StatusText(status));
        code = 1;
        break;
      }
      if (registered) {  // it was up: this is a new loss
        backoff = kFirstBackoff;
        lost_at = std::chrono::steady_clock::now();
      }
      auto wait = std::chrono::milliseconds(static_cast<long>(backoff.count() * jitter(rng)));
      std::string why = status.ok() ? "the stream ended" : StatusText(status);
      if (GivesUp(std::chrono::steady_clock::now() - lost_at, opts_.reconnect_s)) {
        Log("cannot reach the lobby at " + opts_.lobby + ": " + why);
        code = 1;
        break;
      }
      Log((registered ? "lobby connection lost (" : "cannot reach the lobby at " + opts_.lobby + " (") + why +
          "); dialling again in " + std::to_string(wait.count()) + " ms");
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, wait, [this] { return orphaned_.load(); })) break;
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    wake_.notify_all();
    watch.join();
    if (orphaned_) Log("the arena (process " + std::to_string(opts_.parent) + ") is gone: leaving");
    return code;
  }

 private:
  static constexpr std::chrono::milliseconds kFirstBackoff{500};
  static constexpr std::chrono::milliseconds kMaxBackoff{5000};

  // One lobby stream: Register, then each Assignment played to its end and a Ready for it, until the
  // stream ends; its status (OK: the lobby ended it). `registered`: it got as far as Registered.
  grpc::Status Session(bool* registered) {
    auto channel = grpc::CreateCustomChannel(opts_.lobby, Credentials(!opts_.ca_pem.empty(), opts_.ca_pem),
                                             KeepaliveArgs());
    auto stub = pb::LobbyService::NewStub(channel);
    grpc::ClientContext context;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (orphaned_) return grpc::Status::CANCELLED;
      context_ = &context;
    }
    auto stream = stub->Connect(&context);
    pb::ConnectRequest hello;
    auto* reg = hello.mutable_register_();
    reg->set_token(opts_.token);
    reg->set_bot_name(opts_.name);
    reg->set_bot_version(opts_.version);
    reg->set_protocol_version(kProtocolVersion);
    stream->Write(hello);
    pb::ConnectResponse resp;
    while (stream->Read(&resp)) {
      if (resp.has_registered()) {
        *registered = true;
        Log("registered at the lobby as worker " + resp.registered().worker_id());
      }
      if (!resp.has_assignment()) continue;  // and message kinds of a newer protocol
      const auto& a = resp.assignment();
      Options match = opts_;
      match.referee = a.referee();
      match.ticket = a.ticket();
      match.referee_tls = a.referee_tls();
      Log("match " + a.match_id() + ": " + (PlayMatch(match) == 0 ? "over" : "left"));
      pb::ConnectRequest ready;
      ready.mutable_ready()->set_match_id(a.match_id());
      if (!stream->Write(ready)) break;
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    context_ = nullptr;
    return status;
  }

  // Leave once the arena that started this worker is gone: cancel the stream, end the back-off wait.
  void WatchParent() {
    std::unique_lock<std::mutex> lock(mu_);
    while (opts_.parent > 0 && !done_) {
      if (kill(static_cast<pid_t>(opts_.parent), 0) != 0 && errno == ESRCH) {
        orphaned_ = true;
        if (context_ != nullptr) context_->TryCancel();
        wake_.notify_all();
        return;
      }
      wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
    }
  }

  const Options& opts_;
  std::mutex mu_;
  std::condition_variable wake_;
  grpc::ClientContext* context_ = nullptr;  // the live stream's, under mu_
  bool done_ = false;                       // under mu_
  std::atomic<bool> orphaned_{false};
};

}  // namespace

int main(int argc, char** argv) {
  Options opts = ParseArgs(argc, argv);
  return opts.lobby.empty() ? PlayMatch(opts) : Worker(opts).Run();
}
