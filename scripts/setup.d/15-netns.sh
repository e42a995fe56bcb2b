# Network namespaces (iproute2's `ip netns`, and iptables inside one): a "remote machine" on this one
# for tests/test_arena_lobby.py (a remote worker that must be told a referee it reaches) and
# tests/test_arena_referees.py (a referee address that drops every packet); tests/netns_helpers.py.
need_pkgs iproute2 iptables
