# Debian's bubblewrap (bwrap): every local bot process (per game and lobby worker) runs in its own
# namespaces (arena/hosting/jail.py; docs/arena.md, "Security model"): tests/test_process_sandbox.py
# and every test or demo that runs a local bot. The README's demo line names it too.
need_pkgs bubblewrap
