#!/usr/bin/env node
// A simple All Fours bot in Node.js, speaking protocol allfours.v1 over gRPC.
//
// The .proto is loaded at run time with @grpc/proto-loader (no code generation step) from
// ../../proto/allfours/v1/referee.proto, relative to this file.
//
// Usage:
//   node bot.js --referee HOST:PORT --ticket T [--name NAME] [--version V]
// or with the environment variables ALLFOURS_REFEREE and ALLFOURS_TICKET (the arena sets them).
// Exit status: 0 once the match is over, 1 if the seat was refused or the referee unreachable, 2 on
// a usage error.
//
// Play: stands when asked (beg phase), gives one as dealer unless that point would hand the
// opponents the game, calls an exposed card when it may; with cards: the highest legal card when
// it can win the trick from an opponent, else the lowest (and low when its partner is winning).
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// In a container image (docker/bot-node.Dockerfile) the .proto files are at $ALLFOURS_PROTO_DIR.
const PROTO = path.join(process.env.ALLFOURS_PROTO_DIR || path.join(__dirname, '..', '..', 'proto'),
  'allfours', 'v1', 'referee.proto');
const PROTOCOL_VERSION = 'allfours.v1';
const RANKS = '23456789TJQKA';
const GAME_POINTS = { A: 4, K: 3, Q: 2, J: 1, T: 10 };
// Status codes after which reconnecting cannot help.
// ABORTED: a newer stream with this ticket took the seat; reconnecting would only take it back.
const FATAL = new Set([grpc.status.UNAUTHENTICATED, grpc.status.INVALID_ARGUMENT, grpc.status.UNIMPLEMENTED,
  grpc.status.ABORTED]);

function parseArgs(argv) {
  const opts = {
    referee: process.env.ALLFOURS_REFEREE || '',
    ticket: process.env.ALLFOURS_TICKET || '',
    name: 'js-simple',
    version: '1',
    connectTimeoutMs: 15000,
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
    else if (a === '--name') opts.name = next();
    else if (a === '--version') opts.version = next();
    else if (a === '--connect-timeout-ms') opts.connectTimeoutMs = Number(next());
    else if (a === '-h' || a === '--help') usage('', 0);
    else usage(`unknown argument ${a}`);
  }
  if (!opts.referee) usage('no referee address: pass --referee HOST:PORT or set ALLFOURS_REFEREE');
  if (!opts.ticket) usage('no ticket: pass --ticket T or set ALLFOURS_TICKET');
  return opts;
}

function usage(msg, code = 2) {
  if (msg) console.error(`bot.js: ${msg}`);
  console.error('usage: node bot.js --referee HOST:PORT --ticket T [--name NAME] [--version V]');
  process.exit(code);
}

const log = (...args) => console.error(new Date().toISOString(), ...args);

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

// ------------------------------------------------------------------------------------ the stream

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const def = protoLoader.loadSync(PROTO, {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const proto = grpc.loadPackageDefinition(def).allfours.v1;
  const client = new proto.RefereeService(opts.referee, grpc.credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 20000,
    'grpc.keepalive_timeout_ms': 10000,
  });

  let welcome = null; // the first Welcome
  let graceMs = 5000;
  let windowEnd = Date.now() + opts.connectTimeoutMs; // reconnect until then
  let backoff = 50;
  let done = false;

  function retry(why) {
    if (done) return;
    const now = Date.now();
    if (now >= windowEnd) {
      log(`cannot reach the referee at ${opts.referee}: ${why}`);
      process.exit(1);
    }
    log(`connection lost (${why}); reconnecting with the same ticket`);
    setTimeout(connect, Math.min(backoff, windowEnd - now));
    backoff = Math.min(backoff * 2, 1000);
  }

  function connect() {
    const call = client.Play();
    let lastRequest = null;
    let reasked = new Set();
    // Seqs answered on this stream: a request seen again here is not answered twice (after a
    // reconnect the set is new, so a re-sent pending request is answered).
    const answered = new Set();
    let live = false; // this stream got a Welcome
    let ended = false;
    const send = (seq, action) => {
      answered.add(String(seq));
      call.write({ decision: { seq, action } });
    };

    call.on('data', (resp) => {
      switch (resp.msg) {
        case 'welcome': {
          const w = resp.welcome;
          live = true;
          graceMs = Number(w.time_control.grace_ms) || graceMs;
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
          if (answered.has(String(req.seq))) break; // already answered on this stream
          lastRequest = req;
          if (req.legal_actions.length === 0) break;
          let action;
          try {
            action = choose(req.observation, req.legal_actions);
          } catch (e) {
            log(`seq ${req.seq}: choosing failed (${e}); sending the first legal action`);
          }
          send(req.seq, action || req.legal_actions[0]);
          break;
        }
        case 'action_rejected': {
          const r = resp.action_rejected;
          log(`seq ${r.seq}: rejected ${r.action ? r.action.kind + ' ' + r.action.card : ''}: ${r.reason}: ${r.message}`);
          const req = lastRequest;
          if (!req || String(r.seq) !== String(req.seq) || reasked.has(String(req.seq))) break;
          reasked.add(String(req.seq));
          const other = req.legal_actions.find((a) => !r.action || a.kind !== r.action.kind || a.card !== r.action.card);
          if (other) send(req.seq, other);
          break;
        }
        case 'match_end': {
          const res = resp.match_end.result;
          const me = welcome ? res.seats.find((s) => s.seat === welcome.seat) : null;
          done = true;
          console.log(`match ${res.status.replace('MATCH_STATUS_', '').toLowerCase()}: games won ` +
            `${res.games_won.join('-')}, winner side ${res.winner}, this seat ` +
            `${me ? me.termination.replace('TERMINATION_', '').toLowerCase() : '?'}`);
          call.end();
          break;
        }
        default: // events, pongs and message kinds of a newer protocol: this bot keeps no memory
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
        log(`the referee at ${opts.referee} refused the seat: ${err.details || err.message}`);
        process.exit(1);
      }
      lost(`${err.code}: ${err.details || err.message}`);
    });
    call.on('end', () => lost('the stream ended without MatchEnd'));
    call.on('status', () => {
      if (done) {
        client.close();
      }
    });

    call.write({ hello: { ticket: opts.ticket, protocol_version: PROTOCOL_VERSION, bot_name: opts.name,
      bot_version: opts.version } });
  }

  connect();
}

if (require.main === module) main();

module.exports = { choose, chooseCard, winningIndex };
