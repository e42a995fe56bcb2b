from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmissionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBMISSION_KIND_UNSPECIFIED: _ClassVar[SubmissionKind]
    SUBMISSION_KIND_PYTHON: _ClassVar[SubmissionKind]
    SUBMISSION_KIND_NODE: _ClassVar[SubmissionKind]
    SUBMISSION_KIND_IMAGE: _ClassVar[SubmissionKind]
SUBMISSION_KIND_UNSPECIFIED: SubmissionKind
SUBMISSION_KIND_PYTHON: SubmissionKind
SUBMISSION_KIND_NODE: SubmissionKind
SUBMISSION_KIND_IMAGE: SubmissionKind

class SubmitRequest(_message.Message):
    __slots__ = ("header", "chunk")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: SubmitHeader
    chunk: bytes
    def __init__(self, header: _Optional[_Union[SubmitHeader, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class SubmitHeader(_message.Message):
    __slots__ = ("name", "version", "kind", "entry")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    kind: SubmissionKind
    entry: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., kind: _Optional[_Union[SubmissionKind, str]] = ..., entry: _Optional[str] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("submission",)
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    submission: Submission
    def __init__(self, submission: _Optional[_Union[Submission, _Mapping]] = ...) -> None: ...

class ListSubmissionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSubmissionsResponse(_message.Message):
    __slots__ = ("submissions",)
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    submissions: _containers.RepeatedCompositeFieldContainer[Submission]
    def __init__(self, submissions: _Optional[_Iterable[_Union[Submission, _Mapping]]] = ...) -> None: ...

class GetSubmissionRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetSubmissionResponse(_message.Message):
    __slots__ = ("submission",)
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    submission: Submission
    def __init__(self, submission: _Optional[_Union[Submission, _Mapping]] = ...) -> None: ...

class Submission(_message.Message):
    __slots__ = ("id", "name", "version", "entrant", "status", "step", "reason", "log_tail", "created_at", "updated_at", "retired", "games", "final_entry")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ENTRANT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LOG_TAIL_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    RETIRED_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    FINAL_ENTRY_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    version: str
    entrant: str
    status: str
    step: str
    reason: str
    log_tail: str
    created_at: float
    updated_at: float
    retired: bool
    games: int
    final_entry: bool
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., entrant: _Optional[str] = ..., status: _Optional[str] = ..., step: _Optional[str] = ..., reason: _Optional[str] = ..., log_tail: _Optional[str] = ..., created_at: _Optional[float] = ..., updated_at: _Optional[float] = ..., retired: _Optional[bool] = ..., games: _Optional[int] = ..., final_entry: _Optional[bool] = ...) -> None: ...

class ListGamesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListGamesResponse(_message.Message):
    __slots__ = ("games",)
    GAMES_FIELD_NUMBER: _ClassVar[int]
    games: _containers.RepeatedCompositeFieldContainer[Game]
    def __init__(self, games: _Optional[_Iterable[_Union[Game, _Mapping]]] = ...) -> None: ...

class Game(_message.Message):
    __slots__ = ("game_id", "a", "b", "score_a", "score_b", "winner", "seats")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    SCORE_A_FIELD_NUMBER: _ClassVar[int]
    SCORE_B_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    a: str
    b: str
    score_a: int
    score_b: int
    winner: int
    seats: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, game_id: _Optional[str] = ..., a: _Optional[str] = ..., b: _Optional[str] = ..., score_a: _Optional[int] = ..., score_b: _Optional[int] = ..., winner: _Optional[int] = ..., seats: _Optional[_Iterable[int]] = ...) -> None: ...

class GetSeatLogRequest(_message.Message):
    __slots__ = ("game_id", "seat")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    seat: int
    def __init__(self, game_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class GetSeatLogResponse(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: bytes
    def __init__(self, text: _Optional[bytes] = ...) -> None: ...

class RegisterRemoteRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class RegisterRemoteResponse(_message.Message):
    __slots__ = ("submission", "bot_token")
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    BOT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    submission: Submission
    bot_token: str
    def __init__(self, submission: _Optional[_Union[Submission, _Mapping]] = ..., bot_token: _Optional[str] = ...) -> None: ...

class SelectSubmissionRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class SelectSubmissionResponse(_message.Message):
    __slots__ = ("submission",)
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    submission: Submission
    def __init__(self, submission: _Optional[_Union[Submission, _Mapping]] = ...) -> None: ...
