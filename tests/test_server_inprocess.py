"""The embedded (in-process) referee API: start_server / ThreadedReferee, and graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.server import ThreadedReferee, start_server

TOKEN = "t0k"
MD = (("authorization", f"Bearer {TOKEN}"),)


async def _seat(address: str, ticket: str, answer: bool) -> pb.MatchResult:
    """A bot on a real channel: answers with the first legal action (or never, if not ``answer``)."""
    async with grpc.aio.insecure_channel(address) as ch:
        call = pb_grpc.RefereeServiceStub(ch).Play()
        await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1")))
        async for resp in call:
            if resp.HasField("decision_request") and answer:
                req = resp.decision_request
                await call.write(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=req.legal_actions[0])))
            if resp.HasField("match_end"):
                await call.done_writing()
                return resp.match_end.result
    raise AssertionError("stream ended without MatchEnd")


def test_in_process_server_plays_a_match() -> None:
    async def main() -> None:
        async with start_server(port=0, admin_token=TOKEN) as server:
            assert server.port > 0
            async with grpc.aio.insecure_channel(server.address) as ch:
                admin = pb_grpc.AdminServiceStub(ch)
                created = await admin.CreateMatch(pb.CreateMatchRequest(
                    rules=pb.RuleSet(players=2), seat_names=["a", "b"], games=1), metadata=MD)
                results = await asyncio.gather(*(_seat(server.address, t, True) for t in created.tickets))
        assert all(r.status == pb.MATCH_STATUS_COMPLETED for r in results)
        assert results[0] == results[1]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_shutdown_aborts_live_matches_with_a_clean_match_end() -> None:
    async def main() -> None:
        server = start_server(port=0, admin_token=TOKEN)
        await server.start()
        async with grpc.aio.insecure_channel(server.address) as ch:
            admin = pb_grpc.AdminServiceStub(ch)
            created = await admin.CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(players=2), seat_names=["a", "b"], games=1,
                time_control=pb.TimeControl(decision_ms=60_000)), metadata=MD)
            seats = [asyncio.create_task(_seat(server.address, t, False)) for t in created.tickets]
            await asyncio.sleep(0.3)
            await server.stop(grace_s=0.2)
            results = await asyncio.wait_for(asyncio.gather(*seats), 10)
        for r in results:
            assert r.status == pb.MATCH_STATUS_ABORTED and r.winner == -1
            assert [s.termination for s in r.seats] == [pb.TERMINATION_ABORTED] * 2

    asyncio.run(asyncio.wait_for(main(), 60))


def test_threaded_referee_for_synchronous_callers() -> None:
    with ThreadedReferee(admin_token=TOKEN, grace_s=0.2) as ref, grpc.insecure_channel(ref.address) as ch:
        admin = pb_grpc.AdminServiceStub(ch)
        created = admin.CreateMatch(pb.CreateMatchRequest(seat_names=list("abcd")), metadata=MD, timeout=5)
        assert len(created.tickets) == 4 and len(created.seed_commitment) == 64
        with pytest.raises(grpc.RpcError) as e:
            admin.CreateMatch(pb.CreateMatchRequest(seat_names=list("abcd")), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_tickets_are_safe_on_any_command_line() -> None:
    """A ticket never starts with '-' (argparse and getopt would read it as an option), and is
    letters and digits only, with 192 bits of randomness."""
    import re

    from referee.server import new_ticket

    tickets = {new_ticket() for _ in range(2000)}
    assert len(tickets) == 2000
    assert all(re.fullmatch(r"t[0-9a-f]{48}", t) for t in tickets)


def test_tune_gc_freezes_what_is_alive_and_raises_the_young_threshold() -> None:
    """referee.server.tune_gc (process-wide, so in a child process): the objects alive at the call
    move to the permanent generation, the young threshold becomes GC_GEN0_THRESHOLD, the older
    generations keep theirs, and a cycle made afterwards is still collected."""
    import subprocess
    import sys

    code = (
        "import gc, json\n"
        "from referee.server import GC_GEN0_THRESHOLD, tune_gc\n"
        "before = gc.get_threshold(); tune_gc(); after = gc.get_threshold()\n"
        "class Node: pass\n"
        "a = Node(); a.me = a; del a\n"
        "print(json.dumps([before, after, GC_GEN0_THRESHOLD, gc.get_freeze_count(), gc.collect()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    import json

    before, after, threshold, frozen, collected = json.loads(out.stdout)
    assert before[0] == 700 and after == [threshold, before[1], before[2]]
    assert threshold == 50_000
    assert frozen > 10_000  # the modules and stubs imported before the call
    assert collected >= 1  # the cycle made after the freeze


def test_health_watch_streams_of_one_address_do_not_take_the_referees_slots() -> None:
    """A health ``Watch`` stream takes no token and stays open as long as its client likes, each holding one
    of the referee server's 2048 RPC slots: 2600 of them over 80 connections (64 streams each) made it
    refuse the arena's admin calls and every seat's Play ("Concurrent RPC limit exceeded!"), and a
    submitted bot reaches the embedded referee's port from its container. One address's Watch streams
    are capped now: the rest are refused at once in one line, and the admin calls still answer."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from referee.streams import WATCHES_PER_PEER

    flood, conns = 2600, 80

    async def main() -> tuple[int, list[str], bool]:
        async with start_server(port=0, admin_token=TOKEN) as server:
            channels = [grpc.aio.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)])
                        for _ in range(conns)]
            calls = [health_pb2_grpc.HealthStub(channels[k % conns]).Watch(health_pb2.HealthCheckRequest(), timeout=60)
                     for k in range(flood)]
            firsts = await asyncio.gather(*(c.read() for c in calls), return_exceptions=True)
            watching = sum(isinstance(f, health_pb2.HealthCheckResponse) for f in firsts)
            refused = [f.details() or "" for f in firsts if isinstance(f, grpc.aio.AioRpcError)]
            async with grpc.aio.insecure_channel(server.address) as ch:
                admin = pb_grpc.AdminServiceStub(ch)
                listed = await admin.ListMatches(pb.ListMatchesRequest(), metadata=MD, timeout=30)
            for c in calls:
                c.cancel()
            for c in channels:
                await c.close()
            return watching, refused, isinstance(listed, pb.ListMatchesResponse)

    watching, refused, admin = asyncio.run(main())
    assert admin
    assert watching == WATCHES_PER_PEER and len(refused) == flood - watching
    capped = [d for d in refused if d == f"{WATCHES_PER_PEER} health Watch streams of your address are open: close one"]
    assert len(capped) > flood // 2, refused[:3]  # (now and then gRPC reports one aborted as it opened as CANCELLED)


def test_silent_reflection_streams_of_one_address_do_not_take_the_referees_slots() -> None:
    """Server reflection is a stream that may send nothing and stay open: 2600 silent ones over 80
    connections took the referee's 2048 RPC slots, and the arena's admin calls and every seat's Play were
    refused. One address's reflection streams are capped now (more refused at once, one line); reflection
    still lists the services, and the admin calls answer."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    from referee.server import REFLECTIONS_PER_PEER

    flood, conns = 2600, 80

    async def main() -> tuple[list[str], list[str], bool]:
        release = asyncio.Event()

        async def silent() -> Any:
            await release.wait()
            return
            yield

        async with start_server(port=0, admin_token=TOKEN) as server:
            channels = [grpc.aio.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)])
                        for _ in range(conns)]
            calls = [reflection_pb2_grpc.ServerReflectionStub(channels[k % conns]).ServerReflectionInfo(
                silent(), timeout=60) for k in range(flood)]
            refused: list[str] = []

            async def follow(call: Any) -> None:
                with contextlib.suppress(asyncio.CancelledError):
                    try:
                        await call.read()
                    except grpc.aio.AioRpcError as e:
                        refused.append(e.details() or "")

            tasks = [asyncio.ensure_future(follow(c)) for c in calls]
            for _ in range(100):  # until every stream past the cap is refused (at most 10 s)
                if len(refused) >= flood - REFLECTIONS_PER_PEER:
                    break
                await asyncio.sleep(0.1)
            async with grpc.aio.insecure_channel(server.address) as ch:
                admin = pb_grpc.AdminServiceStub(ch)
                listed = await admin.ListMatches(pb.ListMatchesRequest(), metadata=MD, timeout=30)
            release.set()
            for c in calls:
                c.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            async with grpc.aio.insecure_channel(server.address) as ch:
                ask = reflection_pb2.ServerReflectionRequest(list_services="")
                answer = await reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(iter([ask])).read()
            for c in channels:
                await c.close()
            services = [s.name for s in answer.list_services_response.service]
            return refused, services, isinstance(listed, pb.ListMatchesResponse)

    refused, services, admin = asyncio.run(main())
    assert admin and "allfours.v1.RefereeService" in services
    line = f"{REFLECTIONS_PER_PEER} reflection streams of your address are open: close one"
    capped = [d for d in refused if d == line]
    assert len(refused) == flood - REFLECTIONS_PER_PEER and len(capped) > flood // 2, refused[:3]
