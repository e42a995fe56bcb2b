#!/usr/bin/env node
// A simple All Fours bot in Node.js, speaking protocol allfours.v1 over gRPC.
//
// The .protos are loaded at run time with @grpc/proto-loader (no code generation step) from
// $ALLFOURS_PROTO_DIR/allfours/v1/ if set, else proto/allfours/v1/ beside this file if there is one (a
// copy of this bot in a folder of its own), else ../../proto/allfours/v1/ (the repository's).
//
// Usage (one match):
//   node bot.js --referee HOST:PORT --ticket T [--name NAME] [--version V] [--raise-every N] [--tls-ca PEM]
//               [--think-ms N]
// or with the environment variables ALLFOURS_REFEREE and ALLFOURS_TICKET (the arena sets them).
// --tls-ca (default $ALLFOURS_TLS_CA): the referee serves TLS; trust this certificate (or CA).
// --think-ms N: wait N ms before each answer, as a slow strategy would (0, the default: none); past the
// match's decision_ms every answer is late, so you see strikes happen.
// Exit status: 0 once the match is over, 1 if the seat was refused or the referee unreachable, 2 on
// a usage error. A refused seat or an unreachable referee is one line with gRPC's status and details
// (`cannot reach the referee at HOST:PORT: UNAVAILABLE: No connection established. Last error: …`).
// Each strike (the referee's TIMEOUT event for this seat: an answer past its deadline, for which the
// referee played the first legal action) and each rejected action is one warning line, as in sdk/client.py.
//
// Usage (worker mode: match after match from an arena's lobby, docs/protocol.md):
//   node bot.js --arena HOST:PORT --token TOKEN [--name NAME] [--reconnect S]
// or with ALLFOURS_LOBBY, ALLFOURS_BOT_TOKEN and ALLFOURS_BOT_NAME (the arena sets them for its
// local workers). Exit status 1 if the lobby refuses the token (one line on stderr), or if it cannot
// be reached for S seconds with --reconnect S (without it a lost lobby is dialled for ever).
//
// Failures are counted as the Python SDK counts them (sdk/client.py): if the strategy throws or
// chooses no legal action, the bot sends the first legal action instead; each such fallback (and
// each exception) goes to the referee with every Decision as Decision.counts, cumulative over the
// match, and the referee records it (SeatResult.bot_counts). To see that work, make the strategy
// throw on every Nth decision: --raise-every N (or ALLFOURS_JS_RAISE_EVERY=N; tests use it).
//
// Play: stands when asked (beg phase), gives one as dealer unless that point would hand the
// opponents the game, calls an exposed card when it may; with cards: the highest legal card when
// it can win the trick from an opponent, else the lowest (and low when its partner is winning).
'use strict';

const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// grpc-js gives TLS the target's host as the server name even when it is an IP address, and Node.js
// then prints a DeprecationWarning (DEP0123) of two lines at each TLS dial of an IP: nothing the bot or
// its operator can change (the certificate is still checked against the IP), so not said. Every other
// warning is printed as before.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  if (rest.includes('DEP0123') || (rest[0] && rest[0].code === 'DEP0123')) return;
  emitWarning.call(process, warning, ...rest);
};

const PROTOCOL_VERSION = 'allfours.v1';
const RANKS = '23456789TJQKA';
const GAME_POINTS = { A: 4, K: 3, Q: 2, J: 1, T: 10 };
// Status codes after which reconnecting cannot help.
// ABORTED: a newer stream with this ticket took the seat; reconnecting would only take it back.
const FATAL = new Set([grpc.status.UNAUTHENTICATED, grpc.status.INVALID_ARGUMENT, grpc.status.UNIMPLEMENTED,
  grpc.status.ABORTED]);
// Status codes after which dialling the lobby again cannot help (a refused token or registration).
const LOBBY_FATAL = new Set([grpc.status.UNAUTHENTICATED, grpc.status.INVALID_ARGUMENT,
  grpc.status.RESOURCE_EXHAUSTED, grpc.status.UNIMPLEMENTED, grpc.status.PERMISSION_DENIED]);

// A secret from $NAME, or from the file $NAME_FILE names (a Docker secret; docs/deploy.md, "Secrets").
function envSecret(name) {
  const value = process.env[name] || '';
  const file = process.env[`${name}_FILE`] || '';
  if (!file) return value;
  if (value) fail(`$${name} and $${name}_FILE are both set: give the secret once`);
  let text;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (e) {
    fail(`$${name}_FILE ${file}: ${e.code || e.message}`);
  }
  if (!text) fail(`$${name}_FILE ${file}: the file is empty`);
  return text;
}

// A bad setting that is not a usage error (a secret given twice, an unreadable file): one line, exit 2.
function fail(msg) {
  console.error(`bot.js: ${msg}`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    referee: process.env.ALLFOURS_REFEREE || '',
    ticket: process.env.ALLFOURS_TICKET || '',
    arena: '',
    token: '',
    name: process.env.ALLFOURS_BOT_NAME || 'js-simple',
    version: '1',
    connectTimeoutMs: 15000,
    raiseEvery: Number(process.env.ALLFOURS_JS_RAISE_EVERY || 0),
    thinkMs: 0, // --think-ms: a wait before each answer
    tlsCa: process.env.ALLFOURS_TLS_CA || '', // the referee (or the lobby) serves TLS: trust this file
    reconnectMs: null, // --reconnect S: give up on a lobby down for S seconds (null: dial on for ever)
  };
  argv = argv.flatMap((a) => (a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a]));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--referee') opts.referee = next();
    else if (a === '--ticket') opts.ticket = next();
    else if (a === '--arena') opts.arena = next();
    else if (a === '--token') {
      // argv shows in `ps` to every local user; the environment does not
      process.stderr.write('bot.js: warning: --token is visible to every local user (ps); set ALLFOURS_BOT_TOKEN instead\n');
      opts.token = next();
    }
    else if (a === '--name') opts.name = next();
    else if (a === '--version') opts.version = next();
    else if (a === '--connect-timeout-ms') opts.connectTimeoutMs = Number(next());
    else if (a === '--raise-every') opts.raiseEvery = Number(next());
    else if (a === '--think-ms') {
      const ms = next();
      if (!/^[0-9]+$/.test(ms)) usage(`--think-ms needs a whole number >= 0, not '${ms}'`);
      opts.thinkMs = Number(ms);
    }
    else if (a === '--tls-ca') opts.tlsCa = next();
    else if (a === '--reconnect') {
      const s = next();
      if (!/^[0-9]+(\.[0-9]+)?$/.test(s)) usage(`--reconnect needs a number of seconds >= 0, not '${s}'`);
      opts.reconnectMs = Number(s) * 1000;
    }
    else if (a === '-h' || a === '--help') usage('', 0);
    else usage(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.raiseEvery) || opts.raiseEvery < 0) usage('--raise-every needs a whole number >= 0');
  opts.caPem = readCa(opts.tlsCa, '--tls-ca (or $ALLFOURS_TLS_CA)');
  opts.refereeCaPem = readCa(process.env.ALLFOURS_REFEREE_TLS_CA || '', '$ALLFOURS_REFEREE_TLS_CA') || opts.caPem;
  // --arena wins; else a referee and ticket mean one match; else $ALLFOURS_LOBBY means worker mode
  if (!opts.arena && !(opts.referee && opts.ticket)) opts.arena = process.env.ALLFOURS_LOBBY || '';
  if (opts.arena) {
    opts.token = opts.token || envSecret('ALLFOURS_BOT_TOKEN');
    if (!opts.token) usage('worker mode needs the bot token: pass --token TOKEN or set ALLFOURS_BOT_TOKEN (or ALLFOURS_BOT_TOKEN_FILE)');
    return opts;
  }
  if (!opts.referee) usage('no referee address: pass --referee HOST:PORT (or --arena HOST:PORT) or set ALLFOURS_REFEREE');
  if (!opts.ticket) usage('no ticket: pass --ticket T or set ALLFOURS_TICKET');
  return opts;
}

// The PEM bytes of the certificate file `path` (null for ''), read once at start: a file that cannot be
// read or holds no certificate (what referee.credentials.read_pem checks for the Python SDK) fails with
// one line, exit 2, not a handshake error (or a stack trace) at the first dial.
function readCa(path, what) {
  if (!path) return null;
  let data;
  try {
    data = fs.readFileSync(path);
  } catch (e) {
    return fail(`${what} ${path}: ${e.code || e.message}`);
  }
  if (!data.includes('-----BEGIN CERTIFICATE-----')) {
    return fail(`${what} ${path} is not a PEM certificate (no line with '-----BEGIN CERTIFICATE-----')`);
  }
  return data;
}

function usage(msg, code = 2) {
  if (msg) console.error(`bot.js: ${msg}`);
  console.error('usage: node bot.js --referee HOST:PORT --ticket T [--name NAME] [--version V] [--raise-every N] [--tls-ca PEM] [--think-ms N]\n'
    + '       node bot.js --arena HOST:PORT [--token TOKEN] [--name NAME] [--version V] [--tls-ca PEM] [--think-ms N] [--reconnect S]   (worker mode)');
  process.exit(code);
}

const log = (...args) => console.error(new Date().toISOString(), ...args);

// A gRPC error as one line, as the Python SDK prints it: `UNAVAILABLE: No connection established. Last
// error: Error: connect ECONNREFUSED 127.0.0.1:9` (the code's name; details on one line, without
// grpc-js's empty `Resolution note:`).
function statusText(err) {
  const details = String(err.details || err.message || '').replace(/\s+/g, ' ').replace(/\.? ?Resolution note: ?$/, '');
  return `${grpc.status[err.code] || err.code}: ${details.trim()}`;
}

// Why `client` has no connection, as gRPC tells it to a call (waitForReady says only that the deadline
// passed): a fail-fast call of `method` with a 1 s deadline, given to `done` as `statusText`. A channel
// that keeps failing fails the call at once with its last error; one still connecting at the deadline.
function whyNoConnection(client, method, done) {
  const call = client[method]({ deadline: Date.now() + 1000 });
  let said = false;
  call.on('error', (err) => {
    if (!said) done(statusText(err));
    said = true;
  });
  call.on('data', () => {});
  call.on('end', () => {
    if (!said) done('the stream ended before anything was sent');
    said = true;
  });
}

// One warning line for each TIMEOUT event of `seat` among `events` (sdk/client.py says the same): a
// strike, the referee having played the first legal action for an answer past the deadline.
function logStrikes(events, seat, maxStrikes) {
  for (const ev of events || []) {
    if (ev.kind === 'EVENT_KIND_TIMEOUT' && ev.seat === seat) {
      log(`warning: the referee timed out this seat (strike ${ev.value} of ${maxStrikes}): the bot answered past `
        + 'its deadline (time_left_ms), so the first legal action was played for it');
    }
  }
}

// ------------------------------------------------------------------------------------ playing

const rank = (card) => RANKS.indexOf(card[0]);
const suit = (card) => card[1];
const points = (card) => GAME_POINTS[card[0]] || 0;

// The index of the card winning `trick` so far: highest trump, else highest of the led suit.
function winningIndex(trick, trump) {
  let best = 0;
  for (let i = 1; i < trick.length; i++) {
    const c = trick[i];
    const b = trick[best];
    if (suit(c) === suit(b)) {
      if (rank(c) > rank(b)) best = i;
    } else if (suit(c) === trump) {
      best = i;
    }
  }
  return best;
}

function beats(card, best, trump) {
  if (suit(card) === suit(best)) return rank(card) > rank(best);
  return suit(card) === trump;
}

// The lowest card to throw: no trump, no counting card, lowest rank, if possible.
function lowest(cards, trump) {
  const key = (c) => (suit(c) === trump ? 100 : 0) + points(c) * 20 + rank(c);
  return cards.reduce((a, b) => (key(b) < key(a) ? b : a));
}

function chooseCard(obs, cards) {
  const trump = obs.trump;
  const trick = obs.trick;
  if (trick.length === 0) return lowest(cards, trump);
  const w = winningIndex(trick, trump);
  const winnerSeat = (obs.trick_leader + w) % obs.rules.players;
  if (winnerSeat % 2 === obs.seat % 2) return lowest(cards, trump); // partner is winning
  const winners = cards.filter((c) => beats(c, trick[w], trump));
  if (winners.length === 0) return lowest(cards, trump);
  // Highest winning card: a trump beats any plain card, then by rank.
  const key = (c) => (suit(c) === trump ? 100 : 0) + rank(c);
  return winners.reduce((a, b) => (key(b) > key(a) ? b : a));
}

// Choose one of `legal` (messages {kind, card}) for the DecisionRequest's observation.
function choose(obs, legal) {
  const of = (kind) => legal.find((a) => a.kind === kind);
  switch (obs.phase) {
    case 'PHASE_BEG':
      return of('ACTION_KIND_STAND') || legal[0];
    case 'PHASE_DEALER': {
      const mySide = obs.seat % 2;
      const theirs = obs.scores[1 - mySide];
      const give = of('ACTION_KIND_GIVE_ONE');
      if (give && theirs + 1 < obs.rules.target) return give;
      return of('ACTION_KIND_RUN_PACK') || legal[0];
    }
    case 'PHASE_CALL':
      return of('ACTION_KIND_CALL') || of('ACTION_KIND_PASS') || legal[0];
    case 'PHASE_PLAY': {
      const cards = legal.filter((a) => a.kind === 'ACTION_KIND_PLAY').map((a) => a.card);
      if (cards.length === 0) return legal[0];
      const card = chooseCard(obs, cards);
      return legal.find((a) => a.kind === 'ACTION_KIND_PLAY' && a.card === card);
    }
    default:
      return legal[0];
  }
}

// The strategy `choose`, made to throw on every nth call (--raise-every N: a test of the fallback).
function raisingEvery(n, strategy) {
  let calls = 0;
  return (obs, legal) => {
    calls += 1;
    if (calls % n === 0) throw new Error(`a planned failure (--raise-every ${n})`);
    return strategy(obs, legal);
  };
}

// The answer to one DecisionRequest: the strategy's choice if it is one of `legal`, else the first
// legal action, a fallback counted in `counts` ({exceptions, fallbacks}, as BotCounts) with the
// exception if the strategy threw (what the Python SDK does, sdk/client.py BotClient._ask).
function decide(strategy, obs, legal, counts) {
  try {
    const action = strategy(obs, legal);
    if (legal.includes(action)) return action;
    log('the strategy chose no legal action; sending the first legal action');
  } catch (e) {
    counts.exceptions += 1;
    log(`choosing failed (${e.message}); sending the first legal action`);
  }
  counts.fallbacks += 1;
  return legal[0];
}

// ------------------------------------------------------------------------------------ the stream

// The folder holding allfours/v1/*.proto: $ALLFOURS_PROTO_DIR (a container image sets it,
// docker/bot-node.Dockerfile), else a proto/ beside this file (a copy of this bot in a folder of its
// own, docs/bot-authors.md), else the repository's (this file at sample_bots/js/).
function protoRoot() {
  if (process.env.ALLFOURS_PROTO_DIR) return process.env.ALLFOURS_PROTO_DIR;
  const own = path.join(__dirname, 'proto');
  return fs.existsSync(own) ? own : path.join(__dirname, '..', '..', 'proto');
}

function loadProto() {
  const root = protoRoot();
  const def = protoLoader.loadSync(['allfours/v1/referee.proto', 'allfours/v1/lobby.proto'], {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [root],
  });
  return grpc.loadPackageDefinition(def).allfours.v1;
}

// Play one seat of one match with `ticket` at `referee` ("host:port"). Resolves once MatchEnd came;
// rejects with an Error (message: one line) if the seat is refused or the referee stays unreachable.
// `tls`: the referee serves TLS, trusting the PEM `ca` (null: the system's roots): a match of its own
// dials TLS with --tls-ca (or $ALLFOURS_TLS_CA); a worker when the Assignment says referee_tls, trusting
// $ALLFOURS_REFEREE_TLS_CA's file, else --tls-ca's.
function playMatch(proto, referee, ticket, opts, tls, ca) {
  return new Promise((resolve, reject) => {
    const creds = tls ? grpc.credentials.createSsl(ca) : grpc.credentials.createInsecure();
    const client = new proto.RefereeService(referee, creds, {
      'grpc.keepalive_time_ms': 20000,
      'grpc.keepalive_timeout_ms': 10000,
    });
    let welcome = null; // the first Welcome
    const counts = { exceptions: 0, fallbacks: 0 }; // this match's failures, sent with every Decision
    const strategy = opts.raiseEvery > 0 ? raisingEvery(opts.raiseEvery, choose) : choose;
    let graceMs = 5000;
    let maxStrikes = 3; // timeouts that forfeit the seat, from Welcome
    let windowEnd = Date.now() + opts.connectTimeoutMs; // reconnect until then
    let backoff = 50;
    let done = false;
    const fail = (msg) => {
      done = true;
      client.close();
      reject(new Error(msg));
    };

    function retry(why) {
      if (done) return;
      const now = Date.now();
      if (now >= windowEnd) {
        fail(`cannot reach the referee at ${referee}: ${why}`);
        return;
      }
      log(`connection lost (${why}); reconnecting with the same ticket`);
      setTimeout(dial, Math.min(backoff, windowEnd - now));
      backoff = Math.min(backoff * 2, 1000);
    }

    // Every connection waits for the channel until windowEnd at most: an address that takes the TCP
    // connection but never answers (a killed referee's, on some networks) would otherwise hold the
    // call, and the seat with it, for ever; a worker would never get back to the lobby.
    function dial() {
      client.waitForReady(windowEnd, (err) => {
        if (done) return;
        if (!err) connect();
        else whyNoConnection(client, 'Play', (why) => fail(`cannot reach the referee at ${referee}: ${why}${tlsHint(tls)}`));
      });
    }

    function connect() {
      const call = client.Play();
      let lastRequest = null;
      const reasked = new Set();
      // Seqs answered on this stream: a request seen again here is not answered twice (after a
      // reconnect the set is new, so a re-sent pending request is answered).
      const answered = new Set();
      let live = false; // this stream got a Welcome
      let ended = false;
      const send = (seq, action) => {
        answered.add(String(seq));
        call.write({ decision: { seq, action, counts: { ...counts } } });
      };

      call.on('data', (resp) => {
        switch (resp.msg) {
          case 'welcome': {
            const w = resp.welcome;
            live = true;
            graceMs = Number(w.time_control.grace_ms) || graceMs;
            maxStrikes = Number(w.time_control.max_strikes) || maxStrikes;
            backoff = 50;
            if (!welcome) {
              welcome = w;
              log(`joined match ${w.match_id} as seat ${w.seat} (side ${w.side}) of ${w.players}`);
            } else {
              log(`rejoined match ${w.match_id} (resumed=${w.resumed})`);
            }
            break;
          }
          case 'decision_request': {
            const req = resp.decision_request;
            logStrikes(req.events, welcome && welcome.seat, maxStrikes);
            if (answered.has(String(req.seq))) break; // already answered on this stream
            lastRequest = req;
            if (req.legal_actions.length === 0) break;
            const action = decide(strategy, req.observation, req.legal_actions, counts);
            if (opts.thinkMs === 0) {
              send(req.seq, action);
            } else {
              answered.add(String(req.seq)); // while it thinks, the same request again is not answered twice
              setTimeout(() => {
                if (!ended && !done) send(req.seq, action);
              }, opts.thinkMs);
            }
            break;
          }
          case 'action_rejected': {
            const r = resp.action_rejected;
            log(`warning: seq ${r.seq}: the referee rejected ${r.action ? r.action.kind + ' ' + r.action.card : ''}: ${r.reason}: ${r.message}`);
            const req = lastRequest;
            if (!req || String(r.seq) !== String(req.seq) || reasked.has(String(req.seq))) break;
            reasked.add(String(req.seq));
            const other = req.legal_actions.find((a) => !r.action || a.kind !== r.action.kind || a.card !== r.action.card);
            if (!other) break;
            counts.fallbacks += 1; // an action in place of the strategy's, as the Python SDK counts it
            send(req.seq, other);
            break;
          }
          case 'match_end': {
            const res = resp.match_end.result;
            const me = welcome ? res.seats.find((s) => s.seat === welcome.seat) : null;
            done = true;
            console.log(`match ${res.status.replace('MATCH_STATUS_', '').toLowerCase()}: games won ` +
              `${res.games_won.join('-')}, ${res.winner < 0 ? 'no winner' : `winner side ${res.winner}`}, this seat ` +
              `${me ? me.termination.replace('TERMINATION_', '').toLowerCase() : '?'}, ` +
              `${counts.exceptions} exceptions, ${counts.fallbacks} fallbacks`);
            call.end();
            resolve();
            break;
          }
          case 'events': // this bot keeps no memory of them, but says its strikes
            logStrikes(resp.events.events, welcome && welcome.seat, maxStrikes);
            break;
          default: // pongs and message kinds of a newer protocol
            break;
        }
      });

      const lost = (why) => {
        if (ended) return;
        ended = true;
        if (done) return;
        if (live) windowEnd = Date.now() + graceMs * 0.9; // the referee holds the seat for grace_ms
        retry(why);
      };
      call.on('error', (err) => {
        if (done) return;
        const refused = FATAL.has(err.code) || (err.code === grpc.status.PERMISSION_DENIED && !welcome);
        if (refused) {
          fail(`the referee at ${referee} refused the seat: ${statusText(err)}`);
          return;
        }
        lost(statusText(err));
      });
      call.on('end', () => lost('the stream ended without MatchEnd'));
      call.on('status', () => {
        if (done) client.close();
      });

      call.write({ hello: { ticket, protocol_version: PROTOCOL_VERSION, bot_name: opts.name,
        bot_version: opts.version } });
    }

    dial();
  });
}

// What to check about TLS when no connection came up (gRPC's waitForReady does not say why): a
// plaintext client meeting a TLS port sees only a closed socket.
function tlsHint(tls) {
  return tls ? ' (with --tls-ca: does the referee speak TLS, with a certificate of that file\'s, made out to this address, not expired?)'
    : ' (if the referee serves TLS, pass --tls-ca with the certificate its host gives out)';
}

// Worker mode (docs/protocol.md, "Workers and the lobby"): register at the lobby with the bot token,
// play each Assignment with playMatch, send Ready, and so on until killed. A refused token exits 1;
// a lost lobby is dialled again with back-off (0.5 s doubling to 5 s, each wait within ±20%: the workers
// of a restarted arena spread out) for as long as it runs (an arena upgrade may take hours), or for
// --reconnect S seconds from the loss (givesUp, as sdk/worker.py's gives_up). Each dial is a new client
// on a subchannel of its own: one kept across an outage waits out gRPC's own reconnect back-off (up to
// 120 s) after the lobby is back, failing every call at once meanwhile.
// Whether a worker dialling a lost lobby since lostAt stops at now (ms): only with --reconnect
// (reconnectMs) run out; null dials on for as long as the worker runs.
function givesUp(now, lostAt, reconnectMs) {
  return reconnectMs !== null && now - lostAt >= reconnectMs;
}

function serveLobby(proto, opts) {
  const creds = opts.caPem ? grpc.credentials.createSsl(opts.caPem) : grpc.credentials.createInsecure();
  let lostAt = Date.now(); // dialling since (the start, or the last loss of a registered stream)
  let backoff = 500;
  const parent = process.env.ALLFOURS_WORKER_PARENT;

  function connect() {
    if (parent) {
      try {
        process.kill(Number(parent), 0);
      } catch (e) {
        if (e.code === 'ESRCH') process.exit(0); // the arena that started this worker is gone
      }
    }
    const client = new proto.LobbyService(opts.arena, creds, { 'grpc.use_local_subchannel_pool': 1 });
    const call = client.Connect();
    let over = false;
    let registered = false; // this stream got as far as Registered
    call.on('data', (resp) => {
      if (resp.msg === 'registered') {
        log(`registered at ${opts.arena} as worker ${resp.registered.worker_id} of ${opts.name}`);
        registered = true;
        backoff = 500;
      } else if (resp.msg === 'assignment') {
        const a = resp.assignment;
        playMatch(proto, a.referee, a.ticket, opts, a.referee_tls, opts.refereeCaPem)
          .catch((e) => log(`match ${a.match_id}: ${e.message}`))
          .then(() => { if (!over) call.write({ ready: { match_id: a.match_id } }); });
      }
    });
    const lost = (why) => {
      if (over) return;
      over = true;
      client.close();
      if (registered) lostAt = Date.now(); // it was up: this is a new loss
      if (givesUp(Date.now(), lostAt, opts.reconnectMs)) {
        log(`cannot reach the lobby at ${opts.arena}: ${why}`);
        process.exit(1);
      }
      const wait = Math.round(backoff * (0.8 + 0.4 * Math.random()));
      log(`lobby connection lost (${why}); dialling again in ${wait} ms`);
      setTimeout(connect, wait);
      backoff = Math.min(backoff * 2, 5000);
    };
    call.on('error', (err) => {
      // RESOURCE_EXHAUSTED is final for a message over the lobby's 16 KiB limit, but not for a full
      // pool ("… workers connected: dial again later"), or too many streams waiting to register
      // ("… waiting to register: dial again later"): a worker may leave (docs/protocol.md).
      const poolFull = err.code === grpc.status.RESOURCE_EXHAUSTED && /dial again later$/.test(err.details || '');
      if (LOBBY_FATAL.has(err.code) && !poolFull) {
        console.error(`bot.js: lobby ${opts.arena} refused the worker: ${statusText(err)}`);
        process.exit(1);
      }
      lost(statusText(err));
    });
    call.on('end', () => lost('the stream ended'));
    call.write({ register: { token: opts.token, bot_name: opts.name, bot_version: opts.version,
      protocol_version: PROTOCOL_VERSION } });
  }

  connect();
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const proto = loadProto();
  if (opts.arena) {
    serveLobby(proto, opts);
    return;
  }
  playMatch(proto, opts.referee, opts.ticket, opts, Boolean(opts.caPem), opts.caPem).then(
    () => process.exit(0),
    (e) => {
      log(e.message);
      process.exit(1);
    },
  );
}

if (require.main === module) main();

module.exports = { choose, chooseCard, winningIndex, decide, parseArgs, givesUp };
