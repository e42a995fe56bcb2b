from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DealIn(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEAL_IN_UNSPECIFIED: _ClassVar[DealIn]
    DEAL_IN_ONES: _ClassVar[DealIn]
    DEAL_IN_THREES: _ClassVar[DealIn]

class ActionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_KIND_UNSPECIFIED: _ClassVar[ActionKind]
    ACTION_KIND_STAND: _ClassVar[ActionKind]
    ACTION_KIND_BEG: _ClassVar[ActionKind]
    ACTION_KIND_GIVE_ONE: _ClassVar[ActionKind]
    ACTION_KIND_RUN_PACK: _ClassVar[ActionKind]
    ACTION_KIND_PLAY: _ClassVar[ActionKind]
    ACTION_KIND_CALL: _ClassVar[ActionKind]
    ACTION_KIND_PASS: _ClassVar[ActionKind]

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_DEAL: _ClassVar[Phase]
    PHASE_BEG: _ClassVar[Phase]
    PHASE_DEALER: _ClassVar[Phase]
    PHASE_PLAY: _ClassVar[Phase]
    PHASE_CALL: _ClassVar[Phase]
    PHASE_OVER: _ClassVar[Phase]

class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REASON_UNSPECIFIED: _ClassVar[Reason]
    REASON_NOT_YOUR_TURN: _ClassVar[Reason]
    REASON_WRONG_PHASE: _ClassVar[Reason]
    REASON_CARD_NOT_IN_HAND: _ClassVar[Reason]
    REASON_MUST_FOLLOW_SUIT_OR_TRUMP: _ClassVar[Reason]
    REASON_MUST_PLAY_TRUMP: _ClassVar[Reason]
    REASON_UNDERTRUMP: _ClassVar[Reason]
    REASON_MUST_PLAY_CALLED_CARD: _ClassVar[Reason]
    REASON_GAME_OVER: _ClassVar[Reason]
    REASON_BAD_ACTION: _ClassVar[Reason]
    REASON_PROTOCOL_ERROR: _ClassVar[Reason]

class Termination(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERMINATION_UNSPECIFIED: _ClassVar[Termination]
    TERMINATION_NORMAL: _ClassVar[Termination]
    TERMINATION_TIMEOUT: _ClassVar[Termination]
    TERMINATION_ILLEGAL: _ClassVar[Termination]
    TERMINATION_DISCONNECT: _ClassVar[Termination]
    TERMINATION_PROTOCOL_ERROR: _ClassVar[Termination]
    TERMINATION_NO_SHOW: _ClassVar[Termination]
    TERMINATION_ABORTED: _ClassVar[Termination]
    TERMINATION_OTHER_SEAT_FORFEITED: _ClassVar[Termination]

class MatchStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_STATUS_UNSPECIFIED: _ClassVar[MatchStatus]
    MATCH_STATUS_WAITING: _ClassVar[MatchStatus]
    MATCH_STATUS_RUNNING: _ClassVar[MatchStatus]
    MATCH_STATUS_COMPLETED: _ClassVar[MatchStatus]
    MATCH_STATUS_FORFEITED: _ClassVar[MatchStatus]
    MATCH_STATUS_ABORTED: _ClassVar[MatchStatus]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_GAME_STARTED: _ClassVar[EventKind]
    EVENT_KIND_DEAL_STARTED: _ClassVar[EventKind]
    EVENT_KIND_KICK: _ClassVar[EventKind]
    EVENT_KIND_STOOD: _ClassVar[EventKind]
    EVENT_KIND_BEGGED: _ClassVar[EventKind]
    EVENT_KIND_GAVE_ONE: _ClassVar[EventKind]
    EVENT_KIND_RAN_PACK: _ClassVar[EventKind]
    EVENT_KIND_CARD_PLAYED: _ClassVar[EventKind]
    EVENT_KIND_CARD_EXPOSED: _ClassVar[EventKind]
    EVENT_KIND_CALLED: _ClassVar[EventKind]
    EVENT_KIND_PASSED: _ClassVar[EventKind]
    EVENT_KIND_TRICK_WON: _ClassVar[EventKind]
    EVENT_KIND_POINTS_SCORED: _ClassVar[EventKind]
    EVENT_KIND_DEAL_ENDED: _ClassVar[EventKind]
    EVENT_KIND_GAME_ENDED: _ClassVar[EventKind]
    EVENT_KIND_TIMEOUT: _ClassVar[EventKind]
    EVENT_KIND_SEAT_DISCONNECTED: _ClassVar[EventKind]
    EVENT_KIND_SEAT_CONNECTED: _ClassVar[EventKind]
DEAL_IN_UNSPECIFIED: DealIn
DEAL_IN_ONES: DealIn
DEAL_IN_THREES: DealIn
ACTION_KIND_UNSPECIFIED: ActionKind
ACTION_KIND_STAND: ActionKind
ACTION_KIND_BEG: ActionKind
ACTION_KIND_GIVE_ONE: ActionKind
ACTION_KIND_RUN_PACK: ActionKind
ACTION_KIND_PLAY: ActionKind
ACTION_KIND_CALL: ActionKind
ACTION_KIND_PASS: ActionKind
PHASE_UNSPECIFIED: Phase
PHASE_DEAL: Phase
PHASE_BEG: Phase
PHASE_DEALER: Phase
PHASE_PLAY: Phase
PHASE_CALL: Phase
PHASE_OVER: Phase
REASON_UNSPECIFIED: Reason
REASON_NOT_YOUR_TURN: Reason
REASON_WRONG_PHASE: Reason
REASON_CARD_NOT_IN_HAND: Reason
REASON_MUST_FOLLOW_SUIT_OR_TRUMP: Reason
REASON_MUST_PLAY_TRUMP: Reason
REASON_UNDERTRUMP: Reason
REASON_MUST_PLAY_CALLED_CARD: Reason
REASON_GAME_OVER: Reason
REASON_BAD_ACTION: Reason
REASON_PROTOCOL_ERROR: Reason
TERMINATION_UNSPECIFIED: Termination
TERMINATION_NORMAL: Termination
TERMINATION_TIMEOUT: Termination
TERMINATION_ILLEGAL: Termination
TERMINATION_DISCONNECT: Termination
TERMINATION_PROTOCOL_ERROR: Termination
TERMINATION_NO_SHOW: Termination
TERMINATION_ABORTED: Termination
TERMINATION_OTHER_SEAT_FORFEITED: Termination
MATCH_STATUS_UNSPECIFIED: MatchStatus
MATCH_STATUS_WAITING: MatchStatus
MATCH_STATUS_RUNNING: MatchStatus
MATCH_STATUS_COMPLETED: MatchStatus
MATCH_STATUS_FORFEITED: MatchStatus
MATCH_STATUS_ABORTED: MatchStatus
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_GAME_STARTED: EventKind
EVENT_KIND_DEAL_STARTED: EventKind
EVENT_KIND_KICK: EventKind
EVENT_KIND_STOOD: EventKind
EVENT_KIND_BEGGED: EventKind
EVENT_KIND_GAVE_ONE: EventKind
EVENT_KIND_RAN_PACK: EventKind
EVENT_KIND_CARD_PLAYED: EventKind
EVENT_KIND_CARD_EXPOSED: EventKind
EVENT_KIND_CALLED: EventKind
EVENT_KIND_PASSED: EventKind
EVENT_KIND_TRICK_WON: EventKind
EVENT_KIND_POINTS_SCORED: EventKind
EVENT_KIND_DEAL_ENDED: EventKind
EVENT_KIND_GAME_ENDED: EventKind
EVENT_KIND_TIMEOUT: EventKind
EVENT_KIND_SEAT_DISCONNECTED: EventKind
EVENT_KIND_SEAT_CONNECTED: EventKind

class RuleSet(_message.Message):
    __slots__ = ("players", "deal_in", "target", "hang_jack", "undertrump_ban", "void_may_discard", "kicked_six_points", "hang_jack_points")
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    DEAL_IN_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    HANG_JACK_FIELD_NUMBER: _ClassVar[int]
    UNDERTRUMP_BAN_FIELD_NUMBER: _ClassVar[int]
    VOID_MAY_DISCARD_FIELD_NUMBER: _ClassVar[int]
    KICKED_SIX_POINTS_FIELD_NUMBER: _ClassVar[int]
    HANG_JACK_POINTS_FIELD_NUMBER: _ClassVar[int]
    players: int
    deal_in: DealIn
    target: int
    hang_jack: bool
    undertrump_ban: bool
    void_may_discard: bool
    kicked_six_points: int
    hang_jack_points: int
    def __init__(self, players: _Optional[int] = ..., deal_in: _Optional[_Union[DealIn, str]] = ..., target: _Optional[int] = ..., hang_jack: _Optional[bool] = ..., undertrump_ban: _Optional[bool] = ..., void_may_discard: _Optional[bool] = ..., kicked_six_points: _Optional[int] = ..., hang_jack_points: _Optional[int] = ...) -> None: ...

class TimeControl(_message.Message):
    __slots__ = ("decision_ms", "bank_ms", "max_strikes", "grace_ms", "join_ms", "max_protocol_errors", "max_illegal")
    DECISION_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_STRIKES_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    JOIN_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_PROTOCOL_ERRORS_FIELD_NUMBER: _ClassVar[int]
    MAX_ILLEGAL_FIELD_NUMBER: _ClassVar[int]
    decision_ms: int
    bank_ms: int
    max_strikes: int
    grace_ms: int
    join_ms: int
    max_protocol_errors: int
    max_illegal: int
    def __init__(self, decision_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ..., max_strikes: _Optional[int] = ..., grace_ms: _Optional[int] = ..., join_ms: _Optional[int] = ..., max_protocol_errors: _Optional[int] = ..., max_illegal: _Optional[int] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("kind", "card")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    kind: ActionKind
    card: str
    def __init__(self, kind: _Optional[_Union[ActionKind, str]] = ..., card: _Optional[str] = ...) -> None: ...

class ExposedCard(_message.Message):
    __slots__ = ("seat", "card")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: str
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[str] = ...) -> None: ...

class Trick(_message.Message):
    __slots__ = ("leader", "cards", "winner")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    leader: int
    cards: _containers.RepeatedScalarFieldContainer[str]
    winner: int
    def __init__(self, leader: _Optional[int] = ..., cards: _Optional[_Iterable[str]] = ..., winner: _Optional[int] = ...) -> None: ...

class PointEvent(_message.Message):
    __slots__ = ("deal", "side", "kind", "value")
    DEAL_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    deal: int
    side: int
    kind: str
    value: int
    def __init__(self, deal: _Optional[int] = ..., side: _Optional[int] = ..., kind: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("seat", "rules", "phase", "to_act", "dealer", "deal_number", "scores", "winner", "trump", "kicks", "begged", "hand", "hand_sizes", "exposed", "called", "call_for", "trick_leader", "trick", "tricks", "points", "legal_actions")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    TO_ACT_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    DEAL_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    TRUMP_FIELD_NUMBER: _ClassVar[int]
    KICKS_FIELD_NUMBER: _ClassVar[int]
    BEGGED_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZES_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_FIELD_NUMBER: _ClassVar[int]
    CALLED_FIELD_NUMBER: _ClassVar[int]
    CALL_FOR_FIELD_NUMBER: _ClassVar[int]
    TRICK_LEADER_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    rules: RuleSet
    phase: Phase
    to_act: int
    dealer: int
    deal_number: int
    scores: _containers.RepeatedScalarFieldContainer[int]
    winner: int
    trump: str
    kicks: _containers.RepeatedScalarFieldContainer[str]
    begged: bool
    hand: _containers.RepeatedScalarFieldContainer[str]
    hand_sizes: _containers.RepeatedScalarFieldContainer[int]
    exposed: _containers.RepeatedCompositeFieldContainer[ExposedCard]
    called: str
    call_for: int
    trick_leader: int
    trick: _containers.RepeatedScalarFieldContainer[str]
    tricks: _containers.RepeatedCompositeFieldContainer[Trick]
    points: _containers.RepeatedCompositeFieldContainer[PointEvent]
    legal_actions: _containers.RepeatedCompositeFieldContainer[Action]
    def __init__(self, seat: _Optional[int] = ..., rules: _Optional[_Union[RuleSet, _Mapping]] = ..., phase: _Optional[_Union[Phase, str]] = ..., to_act: _Optional[int] = ..., dealer: _Optional[int] = ..., deal_number: _Optional[int] = ..., scores: _Optional[_Iterable[int]] = ..., winner: _Optional[int] = ..., trump: _Optional[str] = ..., kicks: _Optional[_Iterable[str]] = ..., begged: _Optional[bool] = ..., hand: _Optional[_Iterable[str]] = ..., hand_sizes: _Optional[_Iterable[int]] = ..., exposed: _Optional[_Iterable[_Union[ExposedCard, _Mapping]]] = ..., called: _Optional[str] = ..., call_for: _Optional[int] = ..., trick_leader: _Optional[int] = ..., trick: _Optional[_Iterable[str]] = ..., tricks: _Optional[_Iterable[_Union[Trick, _Mapping]]] = ..., points: _Optional[_Iterable[_Union[PointEvent, _Mapping]]] = ..., legal_actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ...) -> None: ...

class GameResult(_message.Message):
    __slots__ = ("game", "scores", "winner", "points", "forfeited", "deals")
    GAME_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    DEALS_FIELD_NUMBER: _ClassVar[int]
    game: int
    scores: _containers.RepeatedScalarFieldContainer[int]
    winner: int
    points: _containers.RepeatedCompositeFieldContainer[PointEvent]
    forfeited: bool
    deals: int
    def __init__(self, game: _Optional[int] = ..., scores: _Optional[_Iterable[int]] = ..., winner: _Optional[int] = ..., points: _Optional[_Iterable[_Union[PointEvent, _Mapping]]] = ..., forfeited: _Optional[bool] = ..., deals: _Optional[int] = ...) -> None: ...

class SeatResult(_message.Message):
    __slots__ = ("seat", "name", "termination", "detail", "strikes", "illegal", "protocol_errors", "bank_left_ms", "bot_counts", "connected_at_end")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    ILLEGAL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_ERRORS_FIELD_NUMBER: _ClassVar[int]
    BANK_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    BOT_COUNTS_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_END_FIELD_NUMBER: _ClassVar[int]
    seat: int
    name: str
    termination: Termination
    detail: str
    strikes: int
    illegal: int
    protocol_errors: int
    bank_left_ms: int
    bot_counts: BotCounts
    connected_at_end: bool
    def __init__(self, seat: _Optional[int] = ..., name: _Optional[str] = ..., termination: _Optional[_Union[Termination, str]] = ..., detail: _Optional[str] = ..., strikes: _Optional[int] = ..., illegal: _Optional[int] = ..., protocol_errors: _Optional[int] = ..., bank_left_ms: _Optional[int] = ..., bot_counts: _Optional[_Union[BotCounts, _Mapping]] = ..., connected_at_end: _Optional[bool] = ...) -> None: ...

class MatchResult(_message.Message):
    __slots__ = ("match_id", "status", "games", "seats", "games_won", "winner", "forfeited_side")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    GAMES_WON_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_SIDE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    status: MatchStatus
    games: _containers.RepeatedCompositeFieldContainer[GameResult]
    seats: _containers.RepeatedCompositeFieldContainer[SeatResult]
    games_won: _containers.RepeatedScalarFieldContainer[int]
    winner: int
    forfeited_side: int
    def __init__(self, match_id: _Optional[str] = ..., status: _Optional[_Union[MatchStatus, str]] = ..., games: _Optional[_Iterable[_Union[GameResult, _Mapping]]] = ..., seats: _Optional[_Iterable[_Union[SeatResult, _Mapping]]] = ..., games_won: _Optional[_Iterable[int]] = ..., winner: _Optional[int] = ..., forfeited_side: _Optional[int] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("kind", "game", "deal", "seat", "card", "side", "value", "points_kind", "scores", "winner", "dealer", "cards", "ran_dry", "forfeited", "target_seat")
    KIND_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    DEAL_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    POINTS_KIND_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    RAN_DRY_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEAT_FIELD_NUMBER: _ClassVar[int]
    kind: EventKind
    game: int
    deal: int
    seat: int
    card: str
    side: int
    value: int
    points_kind: str
    scores: _containers.RepeatedScalarFieldContainer[int]
    winner: int
    dealer: int
    cards: _containers.RepeatedScalarFieldContainer[str]
    ran_dry: bool
    forfeited: bool
    target_seat: int
    def __init__(self, kind: _Optional[_Union[EventKind, str]] = ..., game: _Optional[int] = ..., deal: _Optional[int] = ..., seat: _Optional[int] = ..., card: _Optional[str] = ..., side: _Optional[int] = ..., value: _Optional[int] = ..., points_kind: _Optional[str] = ..., scores: _Optional[_Iterable[int]] = ..., winner: _Optional[int] = ..., dealer: _Optional[int] = ..., cards: _Optional[_Iterable[str]] = ..., ran_dry: _Optional[bool] = ..., forfeited: _Optional[bool] = ..., target_seat: _Optional[int] = ...) -> None: ...

class PlayRequest(_message.Message):
    __slots__ = ("hello", "decision", "ping")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    decision: Decision
    ping: Ping
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ...) -> None: ...

class PlayResponse(_message.Message):
    __slots__ = ("welcome", "decision_request", "action_rejected", "match_end", "pong", "events")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    DECISION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ACTION_REJECTED_FIELD_NUMBER: _ClassVar[int]
    MATCH_END_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    decision_request: DecisionRequest
    action_rejected: ActionRejected
    match_end: MatchEnd
    pong: Pong
    events: EventBatch
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., decision_request: _Optional[_Union[DecisionRequest, _Mapping]] = ..., action_rejected: _Optional[_Union[ActionRejected, _Mapping]] = ..., match_end: _Optional[_Union[MatchEnd, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., events: _Optional[_Union[EventBatch, _Mapping]] = ...) -> None: ...

class EventBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("ticket", "protocol_version", "bot_name", "bot_version")
    TICKET_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ticket: str
    protocol_version: str
    bot_name: str
    bot_version: str
    def __init__(self, ticket: _Optional[str] = ..., protocol_version: _Optional[str] = ..., bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("match_id", "seat", "side", "partner_seat", "players", "rules", "time_control", "seat_names", "games", "resumed", "seed_commitment")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    PARTNER_SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    SEAT_NAMES_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    side: int
    partner_seat: int
    players: int
    rules: RuleSet
    time_control: TimeControl
    seat_names: _containers.RepeatedScalarFieldContainer[str]
    games: int
    resumed: bool
    seed_commitment: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., side: _Optional[int] = ..., partner_seat: _Optional[int] = ..., players: _Optional[int] = ..., rules: _Optional[_Union[RuleSet, _Mapping]] = ..., time_control: _Optional[_Union[TimeControl, _Mapping]] = ..., seat_names: _Optional[_Iterable[str]] = ..., games: _Optional[int] = ..., resumed: _Optional[bool] = ..., seed_commitment: _Optional[str] = ...) -> None: ...

class DecisionRequest(_message.Message):
    __slots__ = ("seq", "game", "observation", "legal_actions", "time_left_ms", "time_bank_ms", "events")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    TIME_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    game: int
    observation: Observation
    legal_actions: _containers.RepeatedCompositeFieldContainer[Action]
    time_left_ms: int
    time_bank_ms: int
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, seq: _Optional[int] = ..., game: _Optional[int] = ..., observation: _Optional[_Union[Observation, _Mapping]] = ..., legal_actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., time_left_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class Decision(_message.Message):
    __slots__ = ("seq", "action", "counts")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    action: Action
    counts: BotCounts
    def __init__(self, seq: _Optional[int] = ..., action: _Optional[_Union[Action, _Mapping]] = ..., counts: _Optional[_Union[BotCounts, _Mapping]] = ...) -> None: ...

class BotCounts(_message.Message):
    __slots__ = ("exceptions", "fallbacks")
    EXCEPTIONS_FIELD_NUMBER: _ClassVar[int]
    FALLBACKS_FIELD_NUMBER: _ClassVar[int]
    exceptions: int
    fallbacks: int
    def __init__(self, exceptions: _Optional[int] = ..., fallbacks: _Optional[int] = ...) -> None: ...

class ActionRejected(_message.Message):
    __slots__ = ("seq", "reason", "message", "action")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    seq: int
    reason: Reason
    message: str
    action: Action
    def __init__(self, seq: _Optional[int] = ..., reason: _Optional[_Union[Reason, str]] = ..., message: _Optional[str] = ..., action: _Optional[_Union[Action, _Mapping]] = ...) -> None: ...

class MatchEnd(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: MatchResult
    def __init__(self, result: _Optional[_Union[MatchResult, _Mapping]] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: int
    def __init__(self, nonce: _Optional[int] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: int
    def __init__(self, nonce: _Optional[int] = ...) -> None: ...

class CreateMatchRequest(_message.Message):
    __slots__ = ("rules", "seat_names", "games", "seed", "first_dealer", "time_control", "blind")
    RULES_FIELD_NUMBER: _ClassVar[int]
    SEAT_NAMES_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    BLIND_FIELD_NUMBER: _ClassVar[int]
    rules: RuleSet
    seat_names: _containers.RepeatedScalarFieldContainer[str]
    games: int
    seed: bytes
    first_dealer: int
    time_control: TimeControl
    blind: bool
    def __init__(self, rules: _Optional[_Union[RuleSet, _Mapping]] = ..., seat_names: _Optional[_Iterable[str]] = ..., games: _Optional[int] = ..., seed: _Optional[bytes] = ..., first_dealer: _Optional[int] = ..., time_control: _Optional[_Union[TimeControl, _Mapping]] = ..., blind: _Optional[bool] = ...) -> None: ...

class CreateMatchResponse(_message.Message):
    __slots__ = ("match_id", "seed_commitment", "tickets")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    TICKETS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seed_commitment: str
    tickets: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, match_id: _Optional[str] = ..., seed_commitment: _Optional[str] = ..., tickets: _Optional[_Iterable[str]] = ...) -> None: ...

class WatchMatchRequest(_message.Message):
    __slots__ = ("match_id", "result_only")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_ONLY_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    result_only: bool
    def __init__(self, match_id: _Optional[str] = ..., result_only: _Optional[bool] = ...) -> None: ...

class WatchMatchResponse(_message.Message):
    __slots__ = ("event", "result")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    event: Event
    result: MatchResult
    def __init__(self, event: _Optional[_Union[Event, _Mapping]] = ..., result: _Optional[_Union[MatchResult, _Mapping]] = ...) -> None: ...

class GetRecordRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetRecordResponse(_message.Message):
    __slots__ = ("lines", "complete")
    LINES_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedScalarFieldContainer[str]
    complete: bool
    def __init__(self, lines: _Optional[_Iterable[str]] = ..., complete: _Optional[bool] = ...) -> None: ...

class ListMatchesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMatchesResponse(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[MatchSummary]
    def __init__(self, matches: _Optional[_Iterable[_Union[MatchSummary, _Mapping]]] = ...) -> None: ...

class MatchSummary(_message.Message):
    __slots__ = ("match_id", "status", "seat_names", "seed_commitment")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEAT_NAMES_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    status: MatchStatus
    seat_names: _containers.RepeatedScalarFieldContainer[str]
    seed_commitment: str
    def __init__(self, match_id: _Optional[str] = ..., status: _Optional[_Union[MatchStatus, str]] = ..., seat_names: _Optional[_Iterable[str]] = ..., seed_commitment: _Optional[str] = ...) -> None: ...
